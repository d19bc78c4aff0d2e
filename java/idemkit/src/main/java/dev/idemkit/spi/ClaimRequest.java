package dev.idemkit.spi;

/**
 * One atomic claim of a key (see {@link StoreOperations#claim}).
 *
 * @param id the record to claim
 * @param scope the tool or action name, kept in the record
 * @param token the caller's owner token (32 lowercase hex digits)
 * @param leaseMs {@code leaseEnd = now + leaseMs}
 * @param ttlMs {@code expiresAt = leaseEnd + ttlMs} while in progress
 * @param retryFailure a remembered failure is replaced by this claim in the same atomic operation
 * @param fingerprint the call's payload fingerprint to keep, or {@code null}
 * @param payloadChecked the call checks payloads (SPEC v1.1 rule 9): under {@code retryFailure}, a
 *     remembered failure made by another payload (both fingerprints present and different) is not
 *     replaced but answered, so that the executor refuses the call
 */
public record ClaimRequest(
        RecordId id,
        String scope,
        String token,
        long leaseMs,
        long ttlMs,
        boolean retryFailure,
        String fingerprint,
        boolean payloadChecked) {

    /**
     * Whether this claim takes over {@code current} (or the key is free): no record, an expired
     * one, or a remembered failure when {@link #retryFailure()} — unless the payload is checked and
     * another payload made that failure.
     *
     * @param current the record under the key, or {@code null}
     * @param now the store's clock
     * @return whether the claim writes a new record
     */
    public boolean takesOver(StoredRecord current, long now) {
        return current == null
                || current.isExpired(now)
                || (retryFailure
                        && current.state() == StoredRecord.State.COMPLETED
                        && current.outcome() != null
                        && current.outcome().isFailure()
                        && !(payloadChecked
                                && fingerprint != null
                                && current.fingerprint() != null
                                && !fingerprint.equals(current.fingerprint())));
    }
}
