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
     * Releases the unfinished record of one key, so that the next call with that key runs (SPEC
     * v1.1 rule 12): an abandoned claim (its lease ended without an outcome, e.g. after an {@link
     * IdempotencyTimeoutException}) or a failure held as indeterminate ({@link
     * IndeterminateOutcomeException}). The in-process counterpart of {@code idemkit resolve
     * --release}, for the in-memory store too; {@link #forget} would drop the whole tenant. A claim
     * whose lease has not ended is left alone (its owner may still be running): see {@link
     * #releaseKey(String, String, boolean)}.
     *
     * @param tenant the record's tenant ({@link IdempotencyException} messages and {@link
     *     IdempotencyContext#tenant()} name it), or {@code null} for none
     * @param key the 64-hex key ({@link IdempotencyException#key()})
     * @return true when released, false when there is no live record of the key
     * @throws IllegalStateException the record is completed with a known outcome, still in
     *     progress, or changed meanwhile; nothing changed, and the message says which
     * @throws IllegalArgumentException the key is not a 64-hex key
     */
    default boolean releaseKey(String tenant, String key) {
        return releaseKey(tenant, key, false);
    }

    /**
     * {@link #releaseKey(String, String)}; with {@code force}, also a claim still in progress (when
     * you know its owner is gone).
     *
     * @param tenant the record's tenant, or {@code null} for none
     * @param key the 64-hex key
     * @param force release a live claim too
     * @return true when released, false when there is no live record of the key
     */
    default boolean releaseKey(String tenant, String key, boolean force) {
        throw new UnsupportedOperationException(
                getClass().getName() + " does not settle single keys");
    }

    /**
     * Records {@code resultJson} as the outcome of one key whose record is unfinished (abandoned,
     * or a failure held as indeterminate), kept {@code ttlSeconds}: repeats get it as the
     * remembered result, as if the call had succeeded. Use it when you found out (e.g. from the
     * upstream's dashboard) what the call did.
     *
     * @param tenant the record's tenant, or {@code null} for none
     * @param key the 64-hex key
     * @param resultJson the result, one JSON value as the action's or tool's return type reads it
     * @param ttlSeconds how long the outcome is kept, more than 0
     * @return true when recorded, false when there is no live record of the key
     * @throws IllegalStateException the record is completed, still in progress, or changed
     *     meanwhile; nothing changed
     * @throws IllegalArgumentException the key is not a 64-hex key, the result not one JSON value
     */
    default boolean resolveKey(String tenant, String key, String resultJson, long ttlSeconds) {
        throw new UnsupportedOperationException(
                getClass().getName() + " does not settle single keys");
    }

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
