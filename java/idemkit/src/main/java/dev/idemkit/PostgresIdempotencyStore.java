package dev.idemkit;

import java.lang.ref.Reference;
import javax.sql.DataSource;

/**
 * Records in a PostgreSQL table, durable and shared by every process (and language) that points at
 * the same database: one statement per claim on the server's clock. Create the table with the
 * shipped SQL file in your migrations, or with {@link #createTableIfMissing()}.
 *
 * <p>Two ways to build one, sharing one table layout, record format and set of statements:
 *
 * <ul>
 *   <li>{@link #PostgresIdempotencyStore(DataSource)}: over the application's own {@code
 *       DataSource} (HikariCP, Spring Boot's pool, ...) on plain JDBC, with its TLS, credentials
 *       and pool settings. The PostgreSQL JDBC driver is the application's dependency. The store
 *       borrows a connection per operation and never closes the {@code DataSource}.
 *   <li>{@link #PostgresIdempotencyStore(String)}: by URL, with connections of its own opened by
 *       the native core (for applications without a pool).
 * </ul>
 */
public final class PostgresIdempotencyStore extends NativeIdempotencyStore {
    private final String url;
    private final String table;
    private final JdbcStoreOperations jdbc;

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
        this.jdbc = null;
    }

    /**
     * A store over the application's {@code DataSource}, in the table {@code idemkit_records}.
     *
     * @param dataSource where connections come from; each operation borrows one in auto-commit mode
     *     and gives it back. Pass the pool itself, not a proxy that joins the caller's transaction:
     *     a claim must commit at once to be seen by other processes
     * @throws NullPointerException if {@code dataSource} is null
     */
    public PostgresIdempotencyStore(DataSource dataSource) {
        this(dataSource, null);
    }

    /**
     * A store over the application's {@code DataSource}, in {@code table}.
     *
     * @param dataSource where connections come from (see {@link
     *     #PostgresIdempotencyStore(DataSource)})
     * @param table the table name, optionally schema-qualified, or {@code null} for {@code
     *     idemkit_records}
     * @throws IllegalArgumentException the table name is not an SQL identifier
     * @throws NullPointerException if {@code dataSource} is null
     */
    public PostgresIdempotencyStore(DataSource dataSource, String table) {
        this(new JdbcStoreOperations(dataSource, table), table);
    }

    private PostgresIdempotencyStore(JdbcStoreOperations jdbc, String table) {
        super(jdbc);
        this.url = null;
        this.table = table;
        this.jdbc = jdbc;
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
            if (jdbc != null) {
                jdbc.createTableIfMissing();
                return this;
            }
            NativeBridge.postgresCreateTable(url, table);
        } finally {
            handle.release();
            Reference.reachabilityFence(this);
            NativeLog.drain();
        }
        return this;
    }
}
