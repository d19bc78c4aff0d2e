package dev.idemkit.spi;

/**
 * The operations of a store written in Java (SPEC §4 and v1.1 rule 10), over whatever client the
 * application already owns. Wrap one with {@link dev.idemkit.IdempotencyStore#of(StoreOperations)}
 * and give that to {@code ToolDispatcher} or {@code WebServiceExecutor}: the native executor owns
 * the whole protocol (waiting, deadlines, leases, settling and its retries, effect kinds,
 * fingerprints) and calls these operations; they only keep records. idemkit's own {@code
 * PostgresIdempotencyStore(DataSource)} and {@code
 * dev.idemkit.jedis.RedisIdempotencyStore(RedisClient)} are built this way.
 *
 * <p><b>The rules.</b>
 *
 * <ul>
 *   <li><b>The store's clock.</b> Every answer carries <i>now</i>, in milliseconds since the epoch,
 *       read from the store's server (PostgreSQL {@code clock_timestamp()} inside the statement,
 *       Redis {@code TIME} inside the script), so that every process sharing the store agrees on
 *       leases. An in-process store uses one clock of its own.
 *   <li><b>Expiry.</b> A record whose {@code expiresAt <= now} is gone for every read and may be
 *       taken over by a claim ({@link StoredRecord#isExpired}).
 *   <li><b>Atomicity.</b> {@link #claim} is one atomic operation: of any number of concurrent
 *       claims of a free key (in any process), exactly one acquires it. {@link #complete}, {@link
 *       #release} and {@link #resolve} act only on a record that holds the given token. {@link
 *       #takeOver}, where implemented, is one atomic operation too.
 *   <li><b>Errors.</b> A store that cannot answer throws (any unchecked exception): the call gets
 *       the store-unavailable error with the exception's class and message, and settling is retried
 *       (SPEC v1.1 rule 4). Keep secrets out of exception messages.
 *   <li><b>Threads.</b> Operations are called from the application's threads and from idemkit's own
 *       (daemon) threads when it settles in the background: implementations are thread-safe.
 *   <li><b>Time.</b> An operation of a call with a deadline runs on an idemkit thread, and the
 *       executor stops waiting for it by that deadline (settling goes on until the lease ends);
 *       {@link dev.idemkit.StoreDeadline#millisLeft()} is the time it has left (0: no bound). Bound
 *       the client's I/O by it (a socket or network timeout), so that the operation ends then too.
 * </ul>
 *
 * <p>Check an implementation with the {@code IdempotencyStoreContract} of the tests jar.
 */
public interface StoreOperations {
    /**
     * Claims {@code request.id()} atomically: if the key is free ({@link
     * ClaimRequest#takesOver(StoredRecord, long)}: no live record, or a remembered failure under
     * {@code retryFailure}), writes {@link StoredRecord#claimed(ClaimRequest, long)} and answers
     * {@link ClaimResult#acquired}; otherwise writes nothing and answers {@link ClaimResult#found}
     * with the live record.
     *
     * @param request the claim
     * @return what it did, with the store's clock
     */
    ClaimResult claim(ClaimRequest request);

    /**
     * Records {@code outcome} on the live record if {@link StoredRecord#settleableBy(String) token
     * may settle it}: it becomes {@link StoredRecord#completed(StoredOutcome, long, long)} ({@code
     * expiresAt = now + ttlMs}). Otherwise changes nothing and answers the live record.
     *
     * @param id the record
     * @param token the owner token
     * @param outcome the outcome to keep
     * @param ttlMs how long to keep it
     * @return done, or not with the live record (or {@code null})
     */
    SettleResult complete(RecordId id, String token, StoredOutcome outcome, long ttlMs);

    /**
     * Deletes the live record if {@code token} {@link StoredRecord#settleableBy(String) may settle
     * it}.
     *
     * @param id the record
     * @param token the owner token
     * @return whether it deleted it
     */
    boolean release(RecordId id, String token);

    /**
     * Reads the live record.
     *
     * @param id the record
     * @return the live record (or {@code null}) and the store's clock
     */
    ReadResult get(RecordId id);

    /**
     * Live records passing the request's tenant and status filter, a page at a time, in the store's
     * own order (operators and the CLI list with it).
     *
     * @param request the filter, page size and cursor
     * @return one page
     */
    ListResult list(ListRequest request);

    /**
     * An operator settles a record whose token is {@code expectedToken} and which that token {@link
     * StoredRecord#settleableBy(String) may settle}: with {@code outcome == null} it is deleted
     * (released), otherwise completed with {@code outcome} as {@link #complete} does. Otherwise
     * changes nothing and answers the live record.
     *
     * @param id the record
     * @param expectedToken the token the operator saw
     * @param outcome the outcome to record, or {@code null} to release
     * @param ttlMs how long to keep the outcome
     * @return done, or not with the live record (or {@code null})
     */
    SettleResult resolve(RecordId id, String expectedToken, StoredOutcome outcome, long ttlMs);

    /**
     * Takes over an abandoned claim (SPEC v1.1 rule 12), in one atomic operation: if the live
     * record is an abandoned claim of {@code request.expectedToken()} ({@link
     * TakeOverRequest#takesOver(StoredRecord, long)}), writes {@link
     * StoredRecord#takenOver(TakeOverRequest, long)} and answers {@link TakeOverResult#acquired};
     * otherwise writes nothing and answers {@link TakeOverResult#lost} with the live record (or
     * {@code null}). Of any number of concurrent take-overs of one claim (in any process), exactly
     * one acquires it. The executor asks only for actions whose upstream honours the {@code
     * Idempotency-Key}, and then sends the request again under the same key.
     *
     * <p>The default answers {@link TakeOverResult#unsupported()}: the claim stays abandoned (an
     * indeterminate outcome an operator settles), as in version 1, so a store written before this
     * operation keeps compiling and behaving as it did.
     *
     * @param request the take-over
     * @return what it did, with the store's clock
     */
    default TakeOverResult takeOver(TakeOverRequest request) {
        return TakeOverResult.unsupported();
    }

    /**
     * Deletes the record, whatever its state (operators).
     *
     * @param id the record
     * @return whether a live record was deleted
     */
    boolean delete(RecordId id);

    /**
     * Deletes every record of {@code tenant}.
     *
     * @param tenant the tenant (in NFC), or {@code null} for the records without a tenant
     * @return how many were deleted
     */
    long forget(String tenant);

    /**
     * Deletes expired records.
     *
     * @return how many were deleted
     */
    long purgeExpired();

    /**
     * A short description for messages, without secrets.
     *
     * @return the description
     */
    String describe();

    /**
     * The largest success result (serialised JSON, bytes) this store keeps; 0 for the default (1
     * MiB). A larger result is recorded as too large.
     *
     * @return the limit in bytes, or 0
     */
    default long maxOutcomeBytes() {
        return 0;
    }
}
