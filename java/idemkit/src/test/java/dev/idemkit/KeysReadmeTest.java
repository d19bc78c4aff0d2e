package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.example.keys.UpstreamKey;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The README's key-derivation example is exactly {@code com.example.keys.UpstreamKey}: it compiles
 * and runs.
 */
class KeysReadmeTest {
    private static final String MARKER = "```java\npackage com.example.keys;\n";

    @Test
    void the_readme_key_example_is_the_compiled_one_and_it_runs() throws Exception {
        String readme = Files.readString(Path.of("../README.md"));
        int at = readme.indexOf(MARKER);
        assertTrue(
                at >= 0, "README.md has no java block starting with `package com.example.keys;`");
        int start = at + "```java\n".length();
        String block = readme.substring(start, readme.indexOf("```", start));
        String source =
                Files.readString(Path.of("src/test/java/com/example/keys/UpstreamKey.java"));
        assertEquals(source, block, "README.md's key block must be UpstreamKey.java verbatim");

        PrintStream original = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            UpstreamKey.main(new String[0]);
        } finally {
            System.setOut(original);
        }
        // The SHA-256 of
        // ["idemkit/v1","acme",null,"book_flight","input",{"flight":"BA117","passenger":"Ada"}]
        // and of ["idemkit/v1","acme",null,"send_email","explicit","welcome-42"].
        assertEquals(
                "Idempotency-Key: 597fd97e7131604887ade81ab8f933904346223b48ae1422a43d6a2781e1f3ab\n"
                        + "same booking: true\n"
                        + "explicit: 0f9b441c9d5429a42137ea79c42cf9fdbee515dee49220f451a775a5f27423d7\n",
                out.toString(StandardCharsets.UTF_8));
    }
}
