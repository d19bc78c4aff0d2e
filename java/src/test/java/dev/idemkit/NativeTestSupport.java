package dev.idemkit;

/**
 * Test-only native entry points: a panic and each error kind at the JNI boundary, and a Rust call on a
 * Java store shared through {@link NativeIdempotencyStore#nativeHandle()}.
 */
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

    /**
     * Rust code's {@code Executor::call} on the store behind {@code store} (obtained through the
     * public {@code idemkit_jni::executor_of}), with tool {@code tool} (default HASH_INPUT policy),
     * this tenant and run, JSON input {@code input}, and a body returning the JSON {@code result}.
     * Answers {@code {"ran":<body runs>,"result":<the call's result>}}.
     */
    static native String rustCall(long store, String tool, String tenant, String run, String input, String result);

    /** {@link #rustCall} on an open store, which stays reachable (and so open) during the call. */
    static String rustCall(NativeIdempotencyStore store, String tool, String tenant, String run, String input,
            String result) {
        try {
            return rustCall(store.nativeHandle(), tool, tenant, run, input, result);
        } finally {
            java.lang.ref.Reference.reachabilityFence(store);
        }
    }
}
