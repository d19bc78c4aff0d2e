package dev.idemkit;

/** Test-only native entry points that provoke a panic and each error kind at the JNI boundary. */
final class NativeTestSupport {
    static {
        NativeLibrary.load();
    }

    private NativeTestSupport() {
    }

    /** Panics inside a native call. */
    static native void panic();

    /** Fails a native call with an {@code idemkit::Error} of the kind with this code. */
    static native void throwKind(int code);
}
