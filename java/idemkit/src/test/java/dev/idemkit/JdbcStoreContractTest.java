package dev.idemkit;

/** The store contract on PostgreSQL through the application's {@code DataSource} (JDBC). */
class JdbcStoreContractTest extends IdempotencyStoreContract {
    @Override
    protected IdempotencyStore openStore() {
        PostgresIdempotencyStore pg =
                new PostgresIdempotencyStore(JavaClients.dataSource("JDBC store"));
        pg.createTableIfMissing();
        return pg;
    }
}
