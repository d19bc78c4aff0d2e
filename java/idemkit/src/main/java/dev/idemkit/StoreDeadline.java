package dev.idemkit;

/**
 * The time the store operation running on this thread has left, as the native executor hands it to
 * a store written in Java ({@link dev.idemkit.spi.StoreOperations}): the call's deadline for a
 * claim, the lease end when it settles (SPEC v1.2 §9 rule 3). The executor stops waiting by that
 * instant whatever the store does; a store bounds its client's I/O by {@link #millisLeft()} (JDBC
 * {@code Connection.setNetworkTimeout}, a socket timeout) so that the operation ends then too,
 * instead of holding a thread on a server that stopped answering.
 */
public final class StoreDeadline {
    /** The {@link System#nanoTime()} by which the operation on this thread must end, if bounded. */
    private static final ThreadLocal<long[]> END = new ThreadLocal<>();

    private StoreDeadline() {}

    /**
     * The milliseconds the operation on this thread has left, at least 1; 0 when it has no bound
     * (the call has no deadline, or this thread runs no store operation).
     *
     * @return the time left in milliseconds, or 0 for none
     * @throws IllegalStateException when no time is left: the executor no longer waits for the
     *     answer, so nothing more should be sent to the server
     */
    public static long millisLeft() {
        long[] end = END.get();
        if (end == null) {
            return 0;
        }
        long left = end[0] - System.nanoTime();
        if (left <= 0) {
            throw new IllegalStateException(
                    "no time left for the store operation: the call's deadline has passed");
        }
        return Math.max(1, (left + 999_999) / 1_000_000);
    }

    /** Bounds this thread's store operation by {@code timeoutMs} (0: none) until {@link #end}. */
    static void begin(long timeoutMs) {
        if (timeoutMs > 0) {
            END.set(new long[] {System.nanoTime() + timeoutMs * 1_000_000});
        } else {
            END.remove();
        }
    }

    static void end() {
        END.remove();
    }
}
