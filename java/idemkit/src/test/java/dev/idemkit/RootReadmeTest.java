package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The repository's README shows the compiled Java examples verbatim, as java/README.md does. */
class RootReadmeTest {
    private static void assertShown(String readme, String sourcePath) throws Exception {
        String source = Files.readString(Path.of(sourcePath));
        assertTrue(
                readme.contains("```java\n" + source + "```"),
                "../../README.md must show " + sourcePath + " verbatim in a java block");
    }

    @Test
    void the_root_readme_shows_the_tool_and_web_service_examples_verbatim() throws Exception {
        String readme = Files.readString(Path.of("../../README.md"));
        assertShown(readme, "src/test/java/com/example/travel/TravelAgent.java");
        assertShown(readme, "src/test/java/dev/idemkit/examples/PaymentsClient.java");
    }
}
