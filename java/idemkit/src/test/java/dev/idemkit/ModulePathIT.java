package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged jar on the module path: compiles the modular application in {@code src/it/modular}
 * against the jar and its dependencies (Jackson), then runs it with {@code --module-path} in a JVM
 * of its own, which loads the native library bundled in the jar. Runs after {@code package}
 * (Failsafe), so it tests the jar a user gets.
 */
class ModulePathIT {
    @TempDir Path temp;

    private static String property(String name) {
        String value = System.getProperty(name);
        assertTrue(value != null && !value.isEmpty(), "system property " + name + " is not set");
        return value;
    }

    /** The jar and its runtime dependencies, as a module path. */
    private static String modulePath() throws IOException {
        Path jar = Path.of(property("idemkit.jar"));
        assertTrue(Files.isRegularFile(jar), "the packaged jar is missing: " + jar);
        String dependencies = Files.readString(Path.of(property("idemkit.classpath.file"))).strip();
        assertTrue(
                dependencies.contains("jackson-databind"),
                "classpath.txt should list Jackson: " + dependencies);
        return jar + File.pathSeparator + dependencies;
    }

    /** Runs a command; answers its output (stdout and stderr), failing when it fails. */
    private static String run(List<String> command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output;
        try (var in = process.getInputStream()) {
            output = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        assertTrue(process.waitFor(120, TimeUnit.SECONDS), "did not finish: " + command);
        assertEquals(0, process.exitValue(), String.join(" ", command) + " failed:\n" + output);
        return output;
    }

    @Test
    void aModularApplicationRunsATool() throws Exception {
        Path sources = Path.of(property("idemkit.it.modular"));
        String modulePath = modulePath();
        Path out = Files.createDirectories(temp.resolve("classes"));

        List<String> files;
        try (Stream<Path> walk = Files.walk(sources)) {
            files =
                    walk.filter(p -> p.toString().endsWith(".java"))
                            .map(Path::toString)
                            .collect(Collectors.toList());
        }
        Path bin = Path.of(System.getProperty("java.home"), "bin");
        List<String> javac = new ArrayList<>();
        javac.addAll(
                List.of(
                        bin.resolve("javac").toString(),
                        "--module-path",
                        modulePath,
                        "-d",
                        out.toString()));
        javac.addAll(files);
        String compiled = run(javac);
        assertTrue(compiled.isEmpty(), "javac said something:\n" + compiled);

        String output =
                run(
                        List.of(
                                bin.resolve("java").toString(),
                                "--module-path",
                                out + File.pathSeparator + modulePath,
                                "--module",
                                "com.example.modular/com.example.modular.Main"));

        // A named module (from module-info), not an automatic one or the class path.
        assertTrue(output.contains("idemkit module: dev.idemkit\n"), output);
        assertTrue(output.contains("first: [BK-12], retry: [BK-12]\n"), output);
        assertTrue(output.contains("body ran: 1\n"), output);
        // A tool in a package the application does not open is refused with the fix, as
        // README.md shows it.
        String readme = Files.readString(Path.of("../README.md"));
        String prefix = "java.lang.IllegalStateException: ";
        int at = readme.indexOf(prefix + "tool `hidden`");
        assertTrue(at >= 0, "README.md should show the error of a tool in a closed package");
        String shown = readme.substring(at + prefix.length(), readme.indexOf('\n', at));
        assertTrue(output.contains("hidden tools refused: " + shown + "\n"), output);
    }
}
