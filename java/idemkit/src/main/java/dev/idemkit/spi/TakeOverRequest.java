package dev.idemkit.spi;

/**
 * The take-over of an abandoned claim (SPEC v1.1 rule 12; see {@link StoreOperations#takeOver}):
 * only for actions whose upstream honours the {@code Idempotency-Key}, whose request is then sent
 * again under the same key.
 *
 * @param id the record to take over
 * @param expectedToken the token of the abandoned claim, as a claim found it (32 lowercase hex
 *     digits)
 * @param token the new owner's token (32 lowercase hex digits)
 * @param leaseMs the new {@code leaseEnd = now + leaseMs}
 * @param ttlMs the new {@code expiresAt = leaseEnd + ttlMs}
 */
public record TakeOverRequest(
        RecordId id, String expectedToken, String token, long leaseMs, long ttlMs) {

    /**
     * Whether {@code current} is an abandoned claim of {@link #expectedToken()} at {@code now}:
     * live ({@code now < expiresAt}), in progress, held by the expected token, its lease ended
     * ({@code leaseEnd <= now}). Only such a record is taken over.
     *
     * @param current the record under the key, or {@code null}
     * @param now the store's clock
     * @return whether the take-over moves it to {@link #token()}
     */
    public boolean takesOver(StoredRecord current, long now) {
        return current != null
                && !current.isExpired(now)
                && current.state() == StoredRecord.State.IN_PROGRESS
                && current.token().equals(expectedToken)
                && current.leaseEnd() <= now;
    }
}
