package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The store snippet of both READMEs is {@code com.example.stores.AppStores}, and java/README.md's
 * client timeouts are {@code com.example.stores.ClientTimeouts}; both compile.
 */
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

    /** java/README.md's client-timeout snippets are {@code ClientTimeouts}' (which compiles). */
    @Test
    void the_client_timeout_snippets_are_the_compiled_ones() throws Exception {
        String source =
                Files.readString(Path.of("src/test/java/com/example/stores/ClientTimeouts.java"));
        String readme = Files.readString(Path.of("../README.md")).replaceAll("\\s+", " ");
        for (String name : new String[] {"pgjdbc", "jedis"}) {
            String begin = "// README " + name + ": begin\n";
            String body =
                    source.substring(
                            source.indexOf(begin) + begin.length(),
                            source.indexOf("        // README " + name + ": end"));
            String snippet = body.strip().replaceAll("\\s+", " ");
            assertTrue(
                    readme.contains("```java " + snippet + " ```"),
                    "java/README.md must hold ClientTimeouts' " + name + " snippet: " + snippet);
        }
    }
}
