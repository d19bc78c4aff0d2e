package dev.idemkit;

/**
 * Records in this process only (the native sharded memory store): the default, for tests and
 * single-process apps. Waiters are woken by notification. Nothing survives a restart.
 */
public final class InMemoryIdempotencyStore extends NativeIdempotencyStore {
    /** A new, empty store; its records are this instance's alone, not the process's. */
    public InMemoryIdempotencyStore() {
        super("memory:", null, null, false);
    }

    @Override
    boolean inProcessOnly() {
        return true;
    }
}
