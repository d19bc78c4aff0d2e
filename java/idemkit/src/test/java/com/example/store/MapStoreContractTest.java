package com.example.store;

import dev.idemkit.IdempotencyStore;
import dev.idemkit.IdempotencyStoreContract;

/** The store contract on a store written outside idemkit, over the store SPI. */
class MapStoreContractTest extends IdempotencyStoreContract {
    @Override
    protected IdempotencyStore openStore() {
        return IdempotencyStore.of(new MapStoreOperations());
    }
}
