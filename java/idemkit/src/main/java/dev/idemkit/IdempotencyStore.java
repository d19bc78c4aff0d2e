package dev.idemkit;

import dev.idemkit.spi.StoreOperations;
import java.util.Map;

/**
 * Where records live (SPEC §4). One store can back several dispatchers and executors; close it when
 * the last is done (they never close a store they were given). Implementations: {@link
 * InMemoryIdempotencyStore}, {@link RedisIdempotencyStore}, {@link PostgresIdempotencyStore}, all
 * run by the native core.
 *
 * <p><b>Stores written in Java.</b> A store over a client the application already owns is built
 * from its operations: implement {@link dev.idemkit.spi.StoreOperations} and wrap it with {@link
 * #of(StoreOperations)}. The native executor drives it, so waiting, deadlines, leases and settling
 * behave exactly as on the stores above. {@link ToolDispatcher} and {@link WebServiceExecutor}
 * accept only stores made by idemkit (the classes above and {@link #of}); another implementation of
 * this interface is refused with {@link IllegalArgumentException}.
 *
 * <p><b>Thread safety.</b> Every store is safe for concurrent use by any number of threads,
 * dispatchers and executors: each claim is one atomic operation in the store itself (a lock-guarded
 * shard in memory, one script in Redis, one statement in PostgreSQL), so calls racing on one key
 * from threads, processes or languages still run its body once. {@link #close()} may race with
 * calls: calls already in flight finish, later ones throw {@link IllegalStateException}.
 */
public interface IdempotencyStore extends AutoCloseable {
    /**
     * A store whose records are kept by {@code operations} (written in Java, over the application's
     * own client), driven by the native executor. Closing the store does not close anything of
     * {@code operations}: its client stays the application's.
     *
     * @param operations the store operations; see {@link dev.idemkit.spi.StoreOperations} for what
     *     they must do
     * @return a store for {@link ToolDispatcher} and {@link WebServiceExecutor}
     */
    static IdempotencyStore of(StoreOperations operations) {
        return new OperationsStore(operations);
    }

    /**
     * Deletes every record of {@code tenant} (null: the records without a tenant); answers how
     * many.
     *
     * @param tenant the tenant whose records go, or {@code null} for those without a tenant
     * @return how many records were deleted
     */
    long forget(String tenant);

    /**
     * Deletes expired records now (they are invisible anyway); answers how many.
     *
     * @return how many records were deleted
     */
    long purgeExpired();

    /**
     * A short description without secrets ({@code memory}, {@code redis://127.0.0.1:6379/}, ...).
     *
     * @return the description, with any password left out
     */
    String describe();

    /**
     * How many times each event happened on this store (acquired, deduplicated, waited, ...).
     *
     * @return a new map from event name to count, in a fixed order
     */
    Map<String, Long> eventCounts();

    /** Closes the store; calls in flight finish first. Safe to call twice. */
    /**
     * Calls {@code listener} with every event of the calls through this store, from now on (see
     * {@link IdempotencyListener} for when and on which thread).
     *
     * @param listener the listener
     * @throws UnsupportedOperationException if this store cannot report events
     */
    default void addListener(IdempotencyListener listener) {
        throw new UnsupportedOperationException(
                getClass().getName() + " does not report events to listeners");
    }

    /**
     * Stops calling {@code listener}.
     *
     * @param listener a listener added before
     * @return whether it was registered
     */
    default boolean removeListener(IdempotencyListener listener) {
        return false;
    }

    @Override
    void close();
}
