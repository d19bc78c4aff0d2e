package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** {@code @Idempotent}'s TTL and lease defaults are the core's, not numbers of Java's own. */
class PolicyDefaultsTest {
    @Test
    void the_annotations_ttl_and_lease_defaults_are_the_cores() throws Exception {
        Object ttl = Idempotent.class.getMethod("ttlSeconds").getDefaultValue();
        Object lease = Idempotent.class.getMethod("leaseSeconds").getDefaultValue();
        // NativeBridge reads them from the native library (Rust Policy::default()).
        assertEquals(NativeBridge.DEFAULT_TTL_SECONDS, ttl, "ttlSeconds default");
        assertEquals(NativeBridge.DEFAULT_LEASE_SECONDS, lease, "leaseSeconds default");
        assertEquals(NativeBridge.DEFAULT_TTL_SECONDS, PolicyDefaults.TTL_SECONDS);
        assertEquals(NativeBridge.DEFAULT_LEASE_SECONDS, PolicyDefaults.LEASE_SECONDS);
    }
}
