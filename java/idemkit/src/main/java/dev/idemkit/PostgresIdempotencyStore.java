package dev.idemkit;

import java.lang.ref.Reference;

/**
 * Records in a PostgreSQL table, durable and shared by every process (and language) that points at
 * the same database: one statement per claim on the server's clock. Create the table with the
 * shipped SQL file in your migrations, or with {@link #createTableIfMissing()}.
 */
public final class PostgresIdempotencyStore extends NativeIdempotencyStore {
    private final String url;
    private final String table;

    /**
     * Opens {@code postgres://user[:password]@host[:port]/database} with the table {@code
     * idemkit_records}.
     *
     * @param url the database URL ({@code postgresql://} also works); its password never appears in
     *     errors or {@link #describe()}
     * @throws StoreUnavailableException the server cannot be reached
     */
    public PostgresIdempotencyStore(String url) {
        this(url, null);
    }

    /**
     * Opens the database with this table (validated as an SQL identifier; null: the default).
     *
     * @param url the database URL, as for {@link #PostgresIdempotencyStore(String)}
     * @param table the table name, optionally schema-qualified, or {@code null} for {@code
     *     idemkit_records}
     * @throws StoreUnavailableException the server cannot be reached
     * @throws IllegalArgumentException the URL or table name is refused
     */
    public PostgresIdempotencyStore(String url, String table) {
        super(url, null, table, false);
        this.url = url;
        this.table = table;
    }

    /**
     * Creates the table and its index if they do not exist; safe when several processes do it at
     * once.
     *
     * @return this store
     */
    public PostgresIdempotencyStore createTableIfMissing() {
        handle.acquire();
        try {
            NativeBridge.postgresCreateTable(url, table);
        } finally {
            handle.release();
            Reference.reachabilityFence(this);
        }
        return this;
    }
}
