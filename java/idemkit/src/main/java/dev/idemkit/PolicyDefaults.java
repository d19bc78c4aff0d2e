package dev.idemkit;

/**
 * The core's policy defaults (Rust {@code Policy::default()}), as the compile-time constants an
 * annotation's defaults must be. {@code PolicyDefaultsTest} checks them against the core's own
 * values ({@link NativeBridge#DEFAULT_TTL_SECONDS}, read from the native library), so they cannot
 * drift.
 */
final class PolicyDefaults {
    /** {@code Policy::default().ttl}, in seconds. */
    static final long TTL_SECONDS = 3600;

    /** {@code Policy::default().lease}, in seconds. */
    static final long LEASE_SECONDS = 300;

    private PolicyDefaults() {}
}
