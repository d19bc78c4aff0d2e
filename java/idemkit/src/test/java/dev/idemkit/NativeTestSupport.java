package dev.idemkit;

/**
 * Test-only native entry points: a panic and each error kind at the JNI boundary, and a Rust call
 * on a Java store shared through {@link NativeIdempotencyStore#nativeHandle()}.
 *
 * <p>They live in the test library {@code libidemkit_jni_testing} (crate {@code
 * java/native/testing}: every production export plus these), never in the production {@code
 * libidemkit_jni} the jar bundles. The tests load the test library instead of the production one
 * through {@code -Didemkit.native.path}, which Maven's surefire configuration sets.
 */
final class NativeTestSupport {
    /**
     * The test library, as {@code java/idemkit/pom.xml} builds it (relative to {@code
     * java/idemkit/}).
     */
    static final String TEST_LIBRARY =
            "../native/target/release/" + System.mapLibraryName("idemkit_jni_testing");

    static {
        NativeLibrary.load();
        try {
            isTestLibrary();
        } catch (UnsatisfiedLinkError productionLibrary) {
            UnsatisfiedLinkError error =
                    new UnsatisfiedLinkError(
                            "NativeTestSupport: the loaded native library"
                                    + " has no test-only exports (it is the production libidemkit_jni); run the tests with"
                                    + " -Didemkit.native.path="
                                    + TEST_LIBRARY
                                    + " (built by `cargo build --release --workspace`"
                                    + " in java/native; `mvn verify` does both)");
            error.initCause(productionLibrary);
            throw error;
        }
    }

    private NativeTestSupport() {}

    /** Whether the loaded library is the test library (an unbound native otherwise). */
    private static native boolean isTestLibrary();

    /** Panics inside a native call. */
    static native void panic();

    /** Fails a native call with an {@code idemkit::Error} of the kind with this code. */
    static native void throwKind(int code);

    /**
     * Logs {@code count} warnings through Rust's {@code log} facade as the core does (target {@code
     * idemkit::testing}): {@code message} followed by the warning's number from 0.
     */
    static native void logWarnings(int count, String message);

    /**
     * Rust code's {@code Executor::call} on the store behind {@code store} (obtained through the
     * public {@code idemkit_jni::executor_of}), with tool {@code tool} (default HASH_INPUT policy),
     * this tenant and run, JSON input {@code input}, and a body returning the JSON {@code result}.
     * Answers {@code {"ran":<body runs>,"result":<the call's result>}}.
     */
    static native String rustCall(
            long store, String tool, String tenant, String run, String input, String result);

    /** {@link #rustCall} on an open store, which stays reachable (and so open) during the call. */
    static String rustCall(
            NativeIdempotencyStore store,
            String tool,
            String tenant,
            String run,
            String input,
            String result) {
        try {
            return rustCall(store.nativeHandle(), tool, tenant, run, input, result);
        } finally {
            java.lang.ref.Reference.reachabilityFence(store);
        }
    }

    /**
     * The take-over checks of the core's store conformance suite ({@code idemkit::testing}, SPEC
     * v1.1 rule 12) on the store behind {@code store}: 16 concurrent take-overs of one abandoned
     * claim have exactly one winner; only an abandoned claim of the expected token is taken over. A
     * failed check throws an error carrying its message.
     */
    private static native void takeOverConformance(long store);

    /** {@link #takeOverConformance(long)} on an open store, which stays open during the checks. */
    static void takeOverConformance(NativeIdempotencyStore store) {
        try {
            takeOverConformance(store.nativeHandle());
        } finally {
            java.lang.ref.Reference.reachabilityFence(store);
        }
    }

    /**
     * The core's whole store conformance suite ({@code idemkit::testing::check_store}) on the store
     * behind {@code store}, through its upcalls when it is written in Java: the 64-claimer races on
     * a free key, an expired record and a remembered failure, owner-only settling, expiry, {@code
     * forget}, {@code purge_expired}, {@code list}, the fingerprint and the take-over checks. A
     * failed check throws an error carrying its message.
     */
    private static native void storeConformance(long store);

    /** {@link #storeConformance(long)} on an open store, which stays open during the checks. */
    static void storeConformance(NativeIdempotencyStore store) {
        try {
            storeConformance(store.nativeHandle());
        } finally {
            java.lang.ref.Reference.reachabilityFence(store);
        }
    }

    /**
     * Lists {@code tenant}'s records of the store behind {@code store} through the core's store
     * trait (for a Java-written store: its {@code list} upcalls): every page of {@code Store::list}
     * at {@code limit} a page, answering {@code {"pages":[<records per page>],"records":[[<key>,
     * <claimed_at>],...]}}, or, when {@code newest}, one {@code Store::newest} of {@code limit},
     * answering {@code {"records":[...]}} newest first.
     */
    private static native String listThroughCore(
            long store, String tenant, int limit, boolean newest);

    /** {@link #listThroughCore(long, String, int, boolean)} on an open store. */
    static String listThroughCore(
            NativeIdempotencyStore store, String tenant, int limit, boolean newest) {
        try {
            return listThroughCore(store.nativeHandle(), tenant, limit, newest);
        } finally {
            java.lang.ref.Reference.reachabilityFence(store);
        }
    }
}
