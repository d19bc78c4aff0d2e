package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** What a user is told when the native library cannot be had on their machine. */
class NativeLibraryTest {
    /** The end of every such message: how to build and point at a library of one's own. */
    private static final String FIX =
            "On another platform, build it from the idemkit sources (`cargo build --release"
                    + " --features redis,postgres` in java/native; it lands in"
                    + " java/native/target/release) and start the JVM with"
                    + " -Djava.library.path=<that directory> (which holds "
                    + NativeLibrary.fileName()
                    + ") or -Didemkit.native.path=<the file>.";

    @Test
    void aPlatformTheJarDoesNotBundleIsNamedWithWhatIsBundledAndTheWayAround() {
        UnsatisfiedLinkError notOnPath = new UnsatisfiedLinkError("no idemkit_jni in path");
        UnsatisfiedLinkError e =
                assertThrows(
                        UnsatisfiedLinkError.class,
                        () -> NativeLibrary.loadBundled("linux-riscv64", notOnPath));
        assertEquals(
                "idemkit: no native library for linux-riscv64 in this jar (it looked for"
                        + " native/linux-riscv64/"
                        + NativeLibrary.fileName()
                        + ") nor on java.library.path. The jars the project builds bundle it for"
                        + " linux-x86_64 only, which needs glibc 2.34 or newer (Debian 12, Ubuntu"
                        + " 22.04, RHEL 9 and later; not musl/Alpine). "
                        + FIX,
                e.getMessage());
        assertEquals(notOnPath, e.getSuppressed()[0]);
    }

    @Test
    void aBundledLibraryThisMachineCannotLoadIsReportedWithWhatItNeeds() {
        // What the JVM says of a library it cannot load (here: not a library at all; on a machine
        // with an older glibc: "version `GLIBC_2.34' not found") is kept, with the way around it.
        byte[] notALibrary = "not a shared library".getBytes(StandardCharsets.UTF_8);
        UnsatisfiedLinkError e =
                assertThrows(
                        UnsatisfiedLinkError.class,
                        () ->
                                NativeLibrary.loadExtracted(
                                        new ByteArrayInputStream(notALibrary), "linux-x86_64"));
        String message = e.getMessage();
        assertTrue(
                message.startsWith(
                        "idemkit: the native library bundled for linux-x86_64 could not be loaded: "),
                message);
        assertTrue(message.contains(e.getCause().getMessage()), message);
        assertTrue(
                message.endsWith(
                        ". The jars the project builds bundle it for linux-x86_64 only, which needs"
                                + " glibc 2.34 or newer (Debian 12, Ubuntu 22.04, RHEL 9 and later;"
                                + " not musl/Alpine). "
                                + FIX),
                message);
    }
}
