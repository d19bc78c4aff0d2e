package dev.idemkit.spi;

/**
 * What {@link StoreOperations#takeOver} did: moved the claim to the new token, changed nothing
 * (with the live record found), or is not implemented by the store. What a found record means is
 * the core's to work out from it and {@link #now()}.
 *
 * @param now the store's clock, in milliseconds since the epoch (0 when unsupported)
 * @param supported whether the store implements take-over
 * @param acquired whether the claim now holds the new token
 * @param leaseEnd when the new lease ends (when acquired)
 * @param found when not acquired: the live record under the key, or {@code null}
 */
public record TakeOverResult(
        long now, boolean supported, boolean acquired, long leaseEnd, StoredRecord found) {
    /**
     * The store does not take over: the claim stays abandoned, as in version 1 (what {@link
     * StoreOperations#takeOver} answers unless a store implements it).
     *
     * @return the result
     */
    public static TakeOverResult unsupported() {
        return new TakeOverResult(0, false, false, 0, null);
    }

    /**
     * The claim now holds the new token, with a lease ending at {@code leaseEnd}.
     *
     * @param now the store's clock
     * @param leaseEnd when the new lease ends
     * @return the result
     */
    public static TakeOverResult acquired(long now, long leaseEnd) {
        return new TakeOverResult(now, true, true, leaseEnd, null);
    }

    /**
     * Nothing changed: the record is not an abandoned claim of the expected token.
     *
     * @param now the store's clock
     * @param found the live record under the key, or {@code null}
     * @return the result
     */
    public static TakeOverResult lost(long now, StoredRecord found) {
        return new TakeOverResult(now, true, false, 0, found);
    }
}
