package dev.idemkit;

import dev.idemkit.spi.StoreOperations;

/** A store written in Java ({@link IdempotencyStore#of(StoreOperations)}), driven by the core. */
final class OperationsStore extends NativeIdempotencyStore {
    OperationsStore(StoreOperations operations) {
        super(operations);
    }
}
