package dev.idemkit.langchain4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.example.langchain4j.FlightAgent;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** java/README.md's LangChain4j example is FlightAgent.java verbatim, and it books one flight. */
class ReadmeTest {
    @Test
    void the_readme_shows_the_example_verbatim_and_four_requests_book_one_flight()
            throws Exception {
        String readme = Files.readString(Path.of("../README.md"));
        String source =
                Files.readString(Path.of("src/test/java/com/example/langchain4j/FlightAgent.java"));
        assertTrue(
                readme.contains("```java\n" + source + "```"),
                "java/README.md must show FlightAgent.java verbatim in a java block");
        PrintStream out = System.out;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
        int booked;
        try {
            booked =
                    FlightAgent.bookFourTimes(
                            new ScriptedModel(1, "book_flight", "{\"flight\":\"BA117\"}"));
        } finally {
            System.setOut(out);
        }
        assertEquals(1, booked);
        assertEquals(
                "BK-BA117-1\nBK-BA117-1\nBK-BA117-1\nBK-BA117-1\n",
                printed.toString(StandardCharsets.UTF_8));
    }
}
