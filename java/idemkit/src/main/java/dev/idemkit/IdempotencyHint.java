package dev.idemkit;

/** What a tool declares about its side effect ({@link Tool#idempotencyHint()}). */
public enum IdempotencyHint {
    /** No requirement. */
    DEFAULT,
    /**
     * The tool has a side effect that must not repeat: registering it without an {@link Idempotent}
     * policy that stores keys ({@code HASH_INPUT} or {@code EXPLICIT}, positive TTL) is refused.
     */
    REQUIRED
}
