package dev.idemkit;

/** The store contract on the in-memory store. */
class InMemoryStoreContractTest extends IdempotencyStoreContract {
    @Override
    protected IdempotencyStore openStore() {
        return new InMemoryIdempotencyStore();
    }
}
