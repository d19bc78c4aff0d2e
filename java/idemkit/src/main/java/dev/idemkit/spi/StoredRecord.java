package dev.idemkit.spi;

/**
 * A record as a store keeps it (SPEC §4): every field is written by the store as the operations of
 * {@link StoreOperations} say, and read back unchanged.
 *
 * @param format the record format version (1)
 * @param key the key: 64 lowercase hex digits
 * @param tenant the tenant in NFC, or {@code null}
 * @param scope the tool or action name
 * @param state {@code IN_PROGRESS} (claimed) or {@code COMPLETED} (has an outcome)
 * @param token the owner token of the claim: 32 lowercase hex digits
 * @param claimedAt when it was claimed, in milliseconds since the epoch on the store's clock
 * @param leaseEnd when the claim's lease ends
 * @param ttlMs how long it is kept after its outcome (while in progress: after its lease)
 * @param expiresAt when it expires: from then on it is invisible and its key is free
 * @param outcome the outcome once completed, else {@code null}
 * @param fingerprint the payload fingerprint of the claiming call, or {@code null}
 */
public record StoredRecord(
        int format,
        String key,
        String tenant,
        String scope,
        State state,
        String token,
        long claimedAt,
        long leaseEnd,
        long ttlMs,
        long expiresAt,
        StoredOutcome outcome,
        String fingerprint) {

    /** The record format this version of idemkit writes and reads. */
    public static final int FORMAT = 1;

    /** What is stored: claimed, or completed with an outcome. */
    public enum State {
        /** Claimed by {@link #token()}, no outcome yet. */
        IN_PROGRESS,
        /** Has an outcome. */
        COMPLETED
    }

    /**
     * A new claim made at {@code now} as {@code request} asks: in progress, {@code leaseEnd = now +
     * leaseMs}, {@code expiresAt = leaseEnd + ttlMs}.
     *
     * @param request the claim
     * @param now the store's clock, in milliseconds since the epoch
     * @return the record to write
     */
    public static StoredRecord claimed(ClaimRequest request, long now) {
        long leaseEnd = now + request.leaseMs();
        return new StoredRecord(
                FORMAT,
                request.id().key(),
                request.id().tenant(),
                request.scope(),
                State.IN_PROGRESS,
                request.token(),
                now,
                leaseEnd,
                request.ttlMs(),
                leaseEnd + request.ttlMs(),
                null,
                request.fingerprint());
    }

    /**
     * This record completed with {@code outcome} at {@code now}, kept for {@code ttlMs}.
     *
     * @param outcome the outcome
     * @param ttlMs how long to keep it
     * @param now the store's clock
     * @return the completed record
     */
    public StoredRecord completed(StoredOutcome outcome, long ttlMs, long now) {
        return new StoredRecord(
                format,
                key,
                tenant,
                scope,
                State.COMPLETED,
                token,
                claimedAt,
                leaseEnd,
                ttlMs,
                now + ttlMs,
                outcome,
                fingerprint);
    }

    /**
     * This abandoned claim taken over at {@code now} as {@code request} asks: held by {@code
     * request.token()}, {@code claimedAt = now}, {@code leaseEnd = now + leaseMs}, {@code expiresAt
     * = leaseEnd + ttlMs}; key, tenant, scope and fingerprint are kept.
     *
     * @param request the take-over
     * @param now the store's clock
     * @return the record to write
     */
    public StoredRecord takenOver(TakeOverRequest request, long now) {
        long newLeaseEnd = now + request.leaseMs();
        return new StoredRecord(
                format,
                key,
                tenant,
                scope,
                State.IN_PROGRESS,
                request.token(),
                now,
                newLeaseEnd,
                request.ttlMs(),
                newLeaseEnd + request.ttlMs(),
                null,
                fingerprint);
    }

    /**
     * Whether the record has expired at {@code now} (then it is invisible to every read).
     *
     * @param now the store's clock
     * @return {@code now >= expiresAt}
     */
    public boolean isExpired(long now) {
        return now >= expiresAt;
    }

    /**
     * Whether its owner ({@code token}) may still settle it: in progress, or holding an
     * indeterminate outcome.
     *
     * @param token an owner token
     * @return whether {@code complete}/{@code release} with that token act on it
     */
    public boolean settleableBy(String token) {
        return this.token.equals(token)
                && (state == State.IN_PROGRESS || (outcome != null && outcome.isIndeterminate()));
    }
}
