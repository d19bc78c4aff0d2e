package dev.idemkit.spi;

/**
 * What a claim did: wrote a new claim, or found a live record it does not take over. What a found
 * record means (a completed call, one in progress, an abandoned claim, this caller's own claim) is
 * the core's to work out from it and {@link #now()}.
 *
 * @param now the store's clock when it claimed, in milliseconds since the epoch
 * @param acquired whether the claim wrote a new record
 * @param leaseEnd when the new claim's lease ends (when acquired)
 * @param found the live record found (when not acquired)
 */
public record ClaimResult(long now, boolean acquired, long leaseEnd, StoredRecord found) {
    /**
     * The claim wrote a new record.
     *
     * @param now the store's clock
     * @param leaseEnd when the new claim's lease ends
     * @return the result
     */
    public static ClaimResult acquired(long now, long leaseEnd) {
        return new ClaimResult(now, true, leaseEnd, null);
    }

    /**
     * The claim found this live record and left it alone.
     *
     * @param now the store's clock
     * @param record the record
     * @return the result
     */
    public static ClaimResult found(long now, StoredRecord record) {
        return new ClaimResult(now, false, 0, record);
    }
}
