package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The Install section of README.md shows what the code does: the platform error is the one {@link
 * NativeLibrary} throws, the module declaration is the one {@code ModulePathIT} runs, and every
 * Gradle snippet is part of the Gradle example that {@code scripts/test.sh gradle} runs.
 */
class PackagingReadmeTest {
    private static List<String> blocks(String text, String language) {
        List<String> blocks = new ArrayList<>();
        String fence = "```" + language + "\n";
        for (int at = text.indexOf(fence); at >= 0; at = text.indexOf(fence, at)) {
            int start = at + fence.length();
            int end = text.indexOf("```", start);
            blocks.add(text.substring(start, end));
            at = end + 3;
        }
        return blocks;
    }

    @Test
    void theReadmeShowsTheErrorOfAPlatformWithoutABundledLibrary() throws Exception {
        String readme = Files.readString(Path.of("../README.md"));
        String error =
                "java.lang.UnsatisfiedLinkError: " + NativeLibrary.notBundled("linux-aarch64");
        assertTrue(
                blocks(readme, "text").contains(error + "\n"),
                "README.md should show, as a text block, exactly:\n" + error);
    }

    @Test
    void theReadmeModuleIsTheOneThatRunsOnTheModulePath() throws Exception {
        String readme = Files.readString(Path.of("../README.md"));
        String module = Files.readString(Path.of("src/it/modular/module-info.java"));
        assertTrue(
                blocks(readme, "java").contains(module),
                "README.md should show src/it/modular/module-info.java verbatim:\n" + module);
    }

    @Test
    void everyGradleSnippetIsPartOfTheExampleThatRuns() throws Exception {
        String readme = Files.readString(Path.of("../README.md"));
        Path example = Path.of("../../gradle/example");
        String build =
                Files.readString(example.resolve("settings.gradle"))
                        + Files.readString(example.resolve("build.gradle"));
        List<String> snippets = blocks(readme, "groovy");
        assertEquals(2, snippets.size(), "README.md's groovy blocks: " + snippets);
        for (String snippet : snippets) {
            if (snippet.startsWith("includeBuild '")) {
                // The README's path is a clone of the repository next to the project; the
                // example's, inside the repository, must name that same directory: the root.
                String line =
                        build.lines()
                                .filter(l -> l.startsWith("includeBuild '"))
                                .findFirst()
                                .orElseThrow();
                Path included = example.resolve(line.split("'")[1]).toAbsolutePath().normalize();
                assertEquals(
                        Path.of("../..").toAbsolutePath().normalize(),
                        included,
                        "gradle/example must include the repository root, as README.md's "
                                + snippet.trim()
                                + " does");
                assertTrue(snippet.matches("includeBuild '\\.\\./idemkit'\n"), snippet);
                continue;
            }
            assertTrue(
                    build.contains(snippet),
                    "this README.md snippet is not in gradle/example (settings.gradle,"
                            + " build.gradle):\n"
                            + snippet);
        }
    }
}
