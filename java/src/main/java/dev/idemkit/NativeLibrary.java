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

    /** Loads the library once; safe to call from many threads. */
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
                    loadBundled(notOnLibraryPath);
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

    private static void loadBundled(UnsatisfiedLinkError notOnLibraryPath) {
        String resource = "/native/" + platform() + "/" + fileName();
        try (InputStream in = NativeLibrary.class.getResourceAsStream(resource)) {
            if (in == null) {
                UnsatisfiedLinkError error =
                        new UnsatisfiedLinkError(
                                "idemkit: no native library for "
                                        + platform()
                                        + " in the jar (looked for "
                                        + resource
                                        + ") and none on java.library.path; build it with `cargo build --release` in java/native"
                                        + " and pass -Didemkit.native.path=<file>");
                error.addSuppressed(notOnLibraryPath);
                throw error;
            }
            String file = fileName();
            int dot = file.lastIndexOf('.');
            Path temp = Files.createTempFile(file.substring(0, dot) + "-", file.substring(dot));
            try {
                Files.copy(in, temp, StandardCopyOption.REPLACE_EXISTING);
                System.load(temp.toAbsolutePath().toString());
            } finally {
                // Once loaded the file is mapped; on Windows it cannot be deleted until exit.
                try {
                    Files.deleteIfExists(temp);
                } catch (IOException stillMapped) {
                    temp.toFile().deleteOnExit();
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "idemkit: could not extract the native library " + resource, e);
        }
    }
}
