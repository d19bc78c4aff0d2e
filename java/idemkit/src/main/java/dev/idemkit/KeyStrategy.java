package dev.idemkit;

/** How a call's idempotency key is derived (SPEC §1). */
public enum KeyStrategy {
    /** The digest of the canonical input, or of the {@link Idempotent#keyArguments()} subset. */
    HASH_INPUT,
    /** The digest of a key the tool's class supplies ({@link IdempotencyKeySupplier}). */
    EXPLICIT,
    /**
     * A fresh random UUID per logical call, for upstream services; nothing is deduplicated locally.
     */
    UUID,
    /** No protection at all. */
    NONE
}
