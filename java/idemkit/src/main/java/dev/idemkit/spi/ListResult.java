package dev.idemkit.spi;

import java.util.List;

/**
 * One page of {@link StoreOperations#list}.
 *
 * @param now the store's clock when it read, in milliseconds since the epoch
 * @param records live records of this page, in the store's own order
 * @param nextCursor what to pass for the next page, or {@code null} when the scan is done
 */
public record ListResult(long now, List<StoredRecord> records, String nextCursor) {}
