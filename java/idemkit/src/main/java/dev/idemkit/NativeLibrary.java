package dev.idemkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads {@code idemkit_jni}: from {@code -Didemkit.native.path=<file>} if set, else {@code
 * System.loadLibrary} (so {@code -Djava.library.path} overrides the bundled copy), else the copy
 * bundled in the jar under {@code native/<os>-<arch>/}, extracted to a private temporary file of
 * its own (unique per load, so two JVMs starting at once never share a half-written file).
 */
public final class NativeLibrary {
    static final String NAME = "idemkit_jni";

    private static volatile boolean loaded;

    private NativeLibrary() {}

    /**
     * Loads the library once; safe to call from many threads. idemkit's classes call it before
     * their first native call.
     *
     * @throws UnsatisfiedLinkError no library for this platform in the jar nor on {@code
     *     java.library.path}, or one this machine cannot load: the message names the platform, what
     *     the project's jars bundle (linux-x86_64, glibc 2.34 or newer) and how to use a library
     *     built by hand
     */
    public static void load() {
        if (loaded) {
            return;
        }
        synchronized (NativeLibrary.class) {
            if (loaded) {
                return;
            }
            String explicit = System.getProperty("idemkit.native.path");
            if (explicit != null && !explicit.isEmpty()) {
                System.load(Path.of(explicit).toAbsolutePath().toString());
            } else {
                try {
                    System.loadLibrary(NAME);
                } catch (UnsatisfiedLinkError notOnLibraryPath) {
                    loadBundled(platform(), notOnLibraryPath);
                }
            }
            loaded = true;
        }
    }

    /**
     * {@code linux-x86_64}, {@code linux-aarch64}, {@code macos-aarch64}, {@code windows-x86_64},
     * ...
     */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        if (arch.equals("amd64") || arch.equals("x86_64")) {
            arch = "x86_64";
        } else if (arch.equals("arm64")) {
            arch = "aarch64";
        }
        if (os.contains("mac") || os.contains("darwin")) {
            os = "macos";
        } else if (os.contains("win")) {
            os = "windows";
        } else if (os.contains("linux")) {
            os = "linux";
        }
        return os + "-" + arch;
    }

    static String fileName() {
        String mapped = System.mapLibraryName(NAME);
        return mapped.endsWith(".jnilib") ? "lib" + NAME + ".dylib" : mapped;
    }

    /**
     * What the jars the project builds bundle, and what that library needs of the machine: the
     * build machine's glibc symbol versions (GLIBC_2.34: pthread and dlsym moved into libc).
     */
    static final String BUNDLED =
            "The jars the project builds bundle it for linux-x86_64 only, which needs glibc 2.34 or"
                    + " newer (Debian 12, Ubuntu 22.04, RHEL 9 and later; not musl/Alpine)";

    /** Loads the copy bundled for {@code platform}, or says why there is none and what to do. */
    static void loadBundled(String platform, UnsatisfiedLinkError notOnLibraryPath) {
        String resource = "/native/" + platform + "/" + fileName();
        try (InputStream in = NativeLibrary.class.getResourceAsStream(resource)) {
            if (in == null) {
                UnsatisfiedLinkError error = new UnsatisfiedLinkError(notBundled(platform));
                error.addSuppressed(notOnLibraryPath);
                throw error;
            }
            loadExtracted(in, platform);
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "idemkit: could not extract the native library " + resource, e);
        }
    }

    /** The error of a JVM whose platform the jar has no library for. */
    static String notBundled(String platform) {
        return "idemkit: no native library for "
                + platform
                + " in this jar (it looked for native/"
                + platform
                + "/"
                + fileName()
                + ") nor on java.library.path. "
                + BUNDLED
                + ". "
                + buildItYourself();
    }

    private static String buildItYourself() {
        return "On another platform, build it from the idemkit sources (`cargo build --release"
                + " --features redis,postgres` in java/native; it lands in java/native/target/release)"
                + " and start the JVM with -Djava.library.path=<that directory> (which holds "
                + fileName()
                + ") or -Didemkit.native.path=<the file>.";
    }

    /**
     * Copies the bundled library to a private temporary file and loads it; a library this machine
     * cannot load (too old a glibc, another C library) is reported with what it needs and the way
     * around it.
     */
    static void loadExtracted(InputStream in, String platform) throws IOException {
        String file = fileName();
        int dot = file.lastIndexOf('.');
        Path temp = Files.createTempFile(file.substring(0, dot) + "-", file.substring(dot));
        try {
            Files.copy(in, temp, StandardCopyOption.REPLACE_EXISTING);
            try {
                System.load(temp.toAbsolutePath().toString());
            } catch (UnsatisfiedLinkError refused) {
                UnsatisfiedLinkError error =
                        new UnsatisfiedLinkError(
                                "idemkit: the native library bundled for "
                                        + platform
                                        + " could not be loaded: "
                                        + refused.getMessage()
                                        + ". "
                                        + BUNDLED
                                        + ". "
                                        + buildItYourself());
                error.initCause(refused);
                throw error;
            }
        } finally {
            // Once loaded the file is mapped; on Windows it cannot be deleted until exit.
            try {
                Files.deleteIfExists(temp);
            } catch (IOException stillMapped) {
                temp.toFile().deleteOnExit();
            }
        }
    }
}
