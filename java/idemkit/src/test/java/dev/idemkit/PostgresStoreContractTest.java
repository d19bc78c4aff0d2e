package dev.idemkit;

/** The store contract on PostgreSQL ({@code IDEMKIT_POSTGRES_URL}). */
class PostgresStoreContractTest extends IdempotencyStoreContract {
    @Override
    protected IdempotencyStore openStore() {
        return new PostgresIdempotencyStore(
                        Services.url("IDEMKIT_POSTGRES_URL", "PostgreSQL store"),
                        "idemkit_java_test")
                .createTableIfMissing();
    }
}
