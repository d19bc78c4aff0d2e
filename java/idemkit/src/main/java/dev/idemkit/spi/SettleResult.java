package dev.idemkit.spi;

/**
 * What {@link StoreOperations#complete} or {@link StoreOperations#resolve} did: done, or not, with
 * the live record found (or {@code null}), from which the core tells why.
 *
 * @param done whether the record was completed (or released) as asked
 * @param current when not done: the live record under the key, or {@code null}
 */
public record SettleResult(boolean done, StoredRecord current) {
    /**
     * Done as asked.
     *
     * @return the result
     */
    public static SettleResult settled() {
        return new SettleResult(true, null);
    }

    /**
     * Not done; this is the live record (or {@code null}: none).
     *
     * @param current the live record, or {@code null}
     * @return the result
     */
    public static SettleResult notDone(StoredRecord current) {
        return new SettleResult(false, current);
    }
}
