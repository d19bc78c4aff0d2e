package dev.idemkit;

import java.util.Map;

/**
 * Where records live (SPEC §4). One store can back several dispatchers and executors; close it when
 * the last is done (they never close a store they were given). Implementations: {@link
 * InMemoryIdempotencyStore}, {@link RedisIdempotencyStore}, {@link PostgresIdempotencyStore}, all
 * run by the native core.
 *
 * <p><b>Not for implementing outside idemkit, yet.</b> {@link ToolDispatcher} and {@link
 * WebServiceExecutor} accept only the stores above and refuse any other implementation with {@link
 * IllegalArgumentException}: the claim protocol runs in the core, which drives only its own stores.
 * The {@code IdempotencyStoreContract} in the tests jar checks those stores; it is not an
 * invitation to write one until stores written in Java are supported.
 */
public interface IdempotencyStore extends AutoCloseable {
    /**
     * Deletes every record of {@code tenant} (null: the records without a tenant); answers how
     * many.
     */
    long forget(String tenant);

    /** Deletes expired records now (they are invisible anyway); answers how many. */
    long purgeExpired();

    /**
     * A short description without secrets ({@code memory}, {@code redis://127.0.0.1:6379/}, ...).
     */
    String describe();

    /** How many times each event happened on this store (acquired, deduplicated, waited, ...). */
    Map<String, Long> eventCounts();

    /** Closes the store; calls in flight finish first. Safe to call twice. */
    @Override
    void close();
}
