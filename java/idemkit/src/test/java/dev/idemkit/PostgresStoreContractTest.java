package dev.idemkit;

/**
 * The store contract on PostgreSQL ({@code IDEMKIT_POSTGRES_URL}). On a fresh database the first
 * store warns that the table does not exist yet, then makes it.
 */
@ExpectedWarnings("does not exist in")
class PostgresStoreContractTest extends IdempotencyStoreContract {
    @Override
    protected IdempotencyStore openStore() {
        return new PostgresIdempotencyStore(
                        Services.url("IDEMKIT_POSTGRES_URL", "PostgreSQL store"),
                        "idemkit_java_test")
                .createTableIfMissing();
    }
}
