package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The production library the jar bundles exports no test-only symbol, and the test library the
 * tests load exports every production entry point plus the test-only ones ({@code nm -D
 * --defined-only}).
 */
class NativeTestSupportExportsTest {
    /** The copy of the production library that goes into the jar (surefire passes its path). */
    static Path production() {
        String given = System.getProperty("idemkit.native.production");
        return Path.of(
                given != null
                        ? given
                        : "target/classes/native/"
                                + NativeLibrary.platform()
                                + "/"
                                + NativeLibrary.fileName());
    }

    static Path testing() {
        String given = System.getProperty("idemkit.native.path");
        return Path.of(given != null && !given.isEmpty() ? given : NativeTestSupport.TEST_LIBRARY);
    }

    /** The defined dynamic symbols of {@code library} that are JNI entry points. */
    static TreeSet<String> jniExports(Path library) throws IOException, InterruptedException {
        assertTrue(
                Files.isRegularFile(library),
                library.toAbsolutePath()
                        + " is missing; build it with `mvn verify`"
                        + " (or `cargo build --release --workspace` in java/native)");
        Process nm =
                new ProcessBuilder("nm", "-D", "--defined-only", library.toString())
                        .redirectErrorStream(true)
                        .start();
        String out = new String(nm.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(nm.waitFor(60, TimeUnit.SECONDS), "nm timed out on " + library);
        assertEquals(0, nm.exitValue(), "nm -D --defined-only " + library + " failed:\n" + out);
        return out.lines()
                .map(line -> line.substring(line.lastIndexOf(' ') + 1))
                .filter(symbol -> symbol.startsWith("Java_"))
                .collect(Collectors.toCollection(TreeSet::new));
    }

    static void assumeLinuxWithNm() {
        assumeTrue(
                NativeLibrary.platform().startsWith("linux-"), "ELF symbols are checked on Linux");
        boolean found = false;
        for (String dir :
                System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
            found |= Files.isExecutable(Path.of(dir, "nm"));
        }
        assumeTrue(found, "nm (binutils) is not on PATH");
    }

    @Test
    void the_bundled_production_library_exports_no_test_only_symbol() throws Exception {
        assumeLinuxWithNm();
        TreeSet<String> exports = jniExports(production());
        assertTrue(
                exports.contains("Java_dev_idemkit_NativeBridge_begin"),
                "not the production library, or nm sees no JNI exports: " + exports);
        List<String> testOnly =
                exports.stream()
                        .filter(s -> !s.startsWith("Java_dev_idemkit_NativeBridge_"))
                        .toList();
        assertEquals(
                List.of(),
                testOnly,
                production()
                        + " must export only NativeBridge entry points; the"
                        + " test-only ones belong in java/native/testing (libidemkit_jni_testing)");
    }

    @Test
    void the_test_library_is_the_production_one_plus_the_test_only_exports() throws Exception {
        assumeLinuxWithNm();
        TreeSet<String> production = jniExports(production());
        TreeSet<String> testing = jniExports(testing());
        assertTrue(testing.containsAll(production), "the test library lacks production exports");
        TreeSet<String> extra = new TreeSet<>(testing);
        extra.removeAll(production);
        assertTrue(
                !extra.isEmpty()
                        && extra.stream()
                                .allMatch(s -> s.startsWith("Java_dev_idemkit_NativeTestSupport_")),
                "the test library's extra exports: " + extra);
        assertTrue(extra.contains("Java_dev_idemkit_NativeTestSupport_panic"), extra.toString());
    }
}
