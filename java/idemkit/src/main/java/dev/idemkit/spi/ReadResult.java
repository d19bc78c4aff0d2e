package dev.idemkit.spi;

/**
 * What {@link StoreOperations#get} read.
 *
 * @param now the store's clock when it read, in milliseconds since the epoch
 * @param record the live record, or {@code null}
 */
public record ReadResult(long now, StoredRecord record) {}
