package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The store snippet of both READMEs is {@code com.example.stores.AppStores}, which compiles. */
class StoreSnippetsReadmeTest {
    @Test
    void the_readmes_store_snippet_is_the_compiled_one() throws Exception {
        String source =
                Files.readString(Path.of("src/test/java/com/example/stores/AppStores.java"));
        String body =
                source.substring(
                        source.indexOf("// README: begin\n") + "// README: begin\n".length(),
                        source.indexOf("        // README: end"));
        // Compared with blanks collapsed: the formatter may wrap a line of the source.
        String snippet = body.strip().replaceAll("\\s+", " ");
        for (String readme : new String[] {"../README.md", "../../README.md"}) {
            String text = Files.readString(Path.of(readme)).replaceAll("\\s+", " ");
            assertTrue(
                    text.contains("```java " + snippet + " ```"),
                    readme + " must hold AppStores' snippet verbatim: " + snippet);
        }
    }
}
