package dev.idemkit.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.example.metrics.FlightMetrics;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** java/README.md's Micrometer example is FlightMetrics.java verbatim, and it runs. */
class ReadmeTest {
    @Test
    void the_readme_shows_the_example_verbatim_and_it_counts_three_deduplications()
            throws Exception {
        String readme = Files.readString(Path.of("../README.md"));
        String source =
                Files.readString(Path.of("src/test/java/com/example/metrics/FlightMetrics.java"));
        assertTrue(
                readme.contains("```java\n" + source + "```"),
                "java/README.md must show FlightMetrics.java verbatim in a java block");
        PrintStream out = System.out;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
        try {
            FlightMetrics.main(new String[0]);
        } finally {
            System.setOut(out);
        }
        assertEquals("deduplicated: 3\n", printed.toString(StandardCharsets.UTF_8));
    }
}
