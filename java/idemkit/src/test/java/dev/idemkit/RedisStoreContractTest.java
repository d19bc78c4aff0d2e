package dev.idemkit;

/** The store contract on Redis ({@code IDEMKIT_REDIS_URL}). */
class RedisStoreContractTest extends IdempotencyStoreContract {
    @Override
    protected IdempotencyStore openStore() {
        return new RedisIdempotencyStore(
                Services.url("IDEMKIT_REDIS_URL", "Redis store"), "idemkit-java-test:");
    }
}
