package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.example.travel.TravelAgent;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The README's example is exactly {@code com.example.travel.TravelAgent}: it compiles and runs. */
class ReadmeTest {
    @Test
    @ExpectedWarnings("in-memory")
    void the_readme_example_is_the_compiled_one_and_it_runs() throws Exception {
        String readme = Files.readString(Path.of("../README.md"));
        int start = readme.indexOf("```java\n") + "```java\n".length();
        String block = readme.substring(start, readme.indexOf("```", start));
        String source =
                Files.readString(Path.of("src/test/java/com/example/travel/TravelAgent.java"));
        assertEquals(
                source, block, "README.md's first java block must be TravelAgent.java verbatim");

        PrintStream original = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            TravelAgent.main(new String[0]);
        } finally {
            System.setOut(original);
        }
        String printed = out.toString(StandardCharsets.UTF_8);
        assertTrue(printed.startsWith("true\nissue 4711 exists: "), printed);
    }
}
