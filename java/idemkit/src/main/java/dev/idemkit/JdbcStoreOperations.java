package dev.idemkit;

import dev.idemkit.spi.ClaimRequest;
import dev.idemkit.spi.ClaimResult;
import dev.idemkit.spi.ListRequest;
import dev.idemkit.spi.ListResult;
import dev.idemkit.spi.ReadResult;
import dev.idemkit.spi.RecordId;
import dev.idemkit.spi.SettleResult;
import dev.idemkit.spi.StoreOperations;
import dev.idemkit.spi.StoredOutcome;
import dev.idemkit.spi.StoredRecord;
import dev.idemkit.spi.TakeOverRequest;
import dev.idemkit.spi.TakeOverResult;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The PostgreSQL store over the application's {@link DataSource}, on plain JDBC. It runs the very
 * statements of the native PostgreSQL store (their text comes from the native library, {@code
 * src/store/postgres/sql.rs}), so both share one table, one layout and one record format: a claim
 * is one statement on the server's clock. Each operation borrows a connection, runs in auto-commit,
 * and gives the connection back.
 */
final class JdbcStoreOperations implements StoreOperations {
    private static final int CLAIM_ATTEMPTS = 8;
    private static final long DELETE_BATCH = 1000;
    private static final Pattern PARAMETER = Pattern.compile("\\$(\\d+)");

    /** A statement of the native store, with its {@code $n} turned into JDBC's {@code ?}. */
    private static final class Sql {
        final String text;

        /** For each {@code ?} in order, the index (0-based) of the value it takes. */
        final int[] order;

        Sql(String native_) {
            Matcher m = PARAMETER.matcher(native_);
            StringBuilder text = new StringBuilder();
            List<Integer> order = new ArrayList<>();
            while (m.find()) {
                order.add(Integer.parseInt(m.group(1)) - 1);
                m.appendReplacement(text, "?");
            }
            m.appendTail(text);
            this.text = text.toString();
            this.order = order.stream().mapToInt(Integer::intValue).toArray();
        }
    }

    private static final System.Logger LOG = System.getLogger("dev.idemkit.store.jdbc");
    private static final String WITHOUT_FINGERPRINT = "without_fingerprint/";
    private static final String WITHOUT_CLAIM_FUNCTION = "without_claim_function/";

    private final DataSource dataSource;
    private final String table;
    private final String schema;
    private final String fingerprintFile;
    private final String claimFunctionFile;

    /**
     * The claim statement for a table without the claim function of {@link #claimFunctionFile}: it
     * answers as the function does (the core's {@code claim_statement}).
     */
    private final Sql claimStatement;

    /**
     * Whether claims call the table's claim function: true until one finds no such function
     * (SQLSTATE 42883 naming it), then false until {@link #createTableIfMissing()} makes it.
     */
    private volatile boolean claimFunction = true;

    /** Set when claims fell back to the statement; warned once the statement worked. */
    private final java.util.concurrent.atomic.AtomicBoolean unwarnedClaimFallback =
            new java.util.concurrent.atomic.AtomicBoolean();

    /** The statements for a table with every migration of {@code sql/postgres/}. */
    private final Map<String, Sql> full = new HashMap<>();

    /**
     * The same statements for a table made without the fingerprint column (migrations 001 to 004,
     * idemkit 1.0): they keep no fingerprint, and read every record as having none.
     */
    private final Map<String, Sql> withoutFingerprint = new HashMap<>();

    /**
     * The statements in use: {@link #full} until one finds no fingerprint column (SQLSTATE 42703
     * naming it), then {@link #withoutFingerprint} until {@link #createTableIfMissing()} adds it.
     */
    private volatile Map<String, Sql> sql = full;

    JdbcStoreOperations(DataSource dataSource, String table) {
        this.dataSource = java.util.Objects.requireNonNull(dataSource, "dataSource");
        String[] pairs = NativeBridge.postgresStatements(table);
        String ddl = null;
        String file = null;
        String functionFile = null;
        Sql statement = null;
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            String name = pairs[i];
            if (name.equals("schema")) {
                ddl = pairs[i + 1];
            } else if (name.equals("fingerprint_file")) {
                file = pairs[i + 1];
            } else if (name.equals("claim_function_file")) {
                functionFile = pairs[i + 1];
            } else if (name.equals(WITHOUT_CLAIM_FUNCTION + "claim")) {
                statement = new Sql(pairs[i + 1]);
            } else if (name.startsWith(WITHOUT_FINGERPRINT)) {
                withoutFingerprint.put(
                        name.substring(WITHOUT_FINGERPRINT.length()), new Sql(pairs[i + 1]));
            } else {
                full.put(name, new Sql(pairs[i + 1]));
            }
        }
        this.schema = ddl;
        this.fingerprintFile = file;
        this.claimFunctionFile = functionFile;
        this.claimStatement = statement;
        this.table = table == null ? "idemkit_records" : table;
    }

    /**
     * Runs the DDL of every file of {@code sql/postgres/} (as the native store does); on a table
     * without the fingerprint column it adds it, and the store keeps fingerprints from then on.
     */
    void createTableIfMissing() {
        try (Connection c = connection();
                Statement s = c.createStatement()) {
            try {
                s.execute(schema);
            } catch (SQLException raced) {
                // Two processes creating the table at once: one loses on the catalog's index.
                sleep(100);
                s.execute(schema);
            }
        } catch (SQLException e) {
            throw failed("create table " + table, e);
        }
        sql = full;
        claimFunction = true;
    }

    /**
     * Whether {@code e} is a statement finding no fingerprint column: the table was made without
     * the fifth migration. Switches to the statements without it (warning once) and answers true,
     * so the caller sends its statement again; nothing was written, since the statement did not
     * run.
     */
    private boolean fallBack(SQLException e) {
        if ("42883".equals(e.getSQLState())
                && e.getMessage() != null
                && e.getMessage().contains("_claim(")) {
            // A table made before the claim function: claims send the claim statement, which
            // answers the same (warned once it worked: a missing table has no function either).
            if (claimFunction) {
                claimFunction = false;
                unwarnedClaimFallback.set(true);
            }
            return true;
        }
        if (!"42703".equals(e.getSQLState())
                || e.getMessage() == null
                || !e.getMessage().contains("fingerprint")) {
            return false;
        }
        synchronized (this) {
            if (sql == full) {
                sql = withoutFingerprint;
                LOG.log(
                        System.Logger.Level.WARNING,
                        "idemkit: "
                                + describe()
                                + " has no fingerprint column, so payload mismatches cannot be"
                                + " detected; apply "
                                + fingerprintFile
                                + " or call PostgresIdempotencyStore.createTableIfMissing()");
            }
        }
        return true;
    }

    @Override
    public ClaimResult claim(ClaimRequest r) {
        Object[] values = {
            r.id().tenant(),
            r.id().key(),
            StoredRecord.FORMAT,
            r.scope(),
            r.token(),
            Math.min(r.leaseMs(), MAX_SPAN_MS),
            Math.min(r.ttlMs(), MAX_SPAN_MS),
            r.retryFailure(),
            r.fingerprint(),
            r.payloadChecked()
        };
        for (int attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
            Row row = queryOne("claim", values);
            if (row == null) {
                // A concurrent claimer inserted the record after this statement's snapshot.
                continue;
            }
            boolean written = row.bool(1);
            StoredRecord record = row.record(2);
            long now = row.number(14);
            if (written) {
                return ClaimResult.acquired(now, record.leaseEnd());
            }
            if (r.takesOver(record, now)) {
                // Free in the snapshot, taken by a concurrent claimer first: read it again.
                continue;
            }
            return ClaimResult.found(now, record);
        }
        throw new IllegalStateException(
                "the record kept changing under "
                        + CLAIM_ATTEMPTS
                        + " claims in a row in "
                        + describe()
                        + "; try again");
    }

    @Override
    public SettleResult complete(RecordId id, String token, StoredOutcome outcome, long ttlMs) {
        Object[] values = {
            id.tenant(),
            id.key(),
            token,
            outcome.kind(),
            outcome.json(),
            Math.min(ttlMs, MAX_SPAN_MS)
        };
        for (int attempt = 0; ; attempt++) {
            Row row = queryOne("complete", values);
            if (row.number(1) > 0) {
                return SettleResult.settled();
            }
            StoredRecord current = row.record(2);
            // Ours and in progress, yet not updated: it changed under this statement's snapshot;
            // once more settles it on the latest version.
            if (attempt == 0
                    && current != null
                    && current.token().equals(token)
                    && current.state() == StoredRecord.State.IN_PROGRESS) {
                continue;
            }
            return SettleResult.notDone(current);
        }
    }

    @Override
    public boolean release(RecordId id, String token) {
        return update("release", id.tenant(), id.key(), token) == 1;
    }

    @Override
    public ReadResult get(RecordId id) {
        Row row = queryOne("get", id.tenant(), id.key());
        long now = row.number(1);
        StoredRecord record = row.record(2);
        return new ReadResult(now, record == null || record.isExpired(now) ? null : record);
    }

    @Override
    public ListResult list(ListRequest request) {
        String afterTenant = "";
        String afterKey = "";
        if (request.cursor() != null) {
            String[] parsed = parseCursor(request.cursor());
            afterTenant = parsed[0];
            afterKey = parsed[1];
        }
        String tenantKey =
                request.allTenants()
                        ? null
                        : (request.tenant() == null ? "_" : "t" + request.tenant());
        long limit = request.limit() <= 0 ? 1000 : request.limit();
        List<Row> rows = query("list", tenantKey, request.status(), afterTenant, afterKey, limit);
        List<StoredRecord> records = new ArrayList<>();
        long now = 0;
        for (Row row : rows) {
            now = row.number(1);
            StoredRecord record = row.record(2);
            if (record != null) {
                records.add(record);
            }
        }
        String next = null;
        if (records.size() >= limit) {
            StoredRecord last = records.get(records.size() - 1);
            next = renderCursor(last.tenant() == null ? "_" : "t" + last.tenant(), last.key());
        }
        return new ListResult(now, records, next);
    }

    @Override
    public SettleResult resolve(
            RecordId id, String expectedToken, StoredOutcome outcome, long ttlMs) {
        Object[] values = {
            id.tenant(),
            id.key(),
            expectedToken,
            outcome == null ? "release" : "complete",
            outcome == null ? null : outcome.kind(),
            outcome == null ? null : outcome.json(),
            Math.min(ttlMs, MAX_SPAN_MS)
        };
        for (int attempt = 0; attempt < 3; attempt++) {
            Row row = queryOne("resolve", values);
            if (row.number(1) > 0) {
                return SettleResult.settled();
            }
            StoredRecord current = row.record(2);
            if (current == null || !current.settleableBy(expectedToken)) {
                return SettleResult.notDone(current);
            }
            // Changed between this statement's snapshot and its write: read it again.
        }
        throw new IllegalStateException(
                "the record kept changing while it was being resolved in "
                        + describe()
                        + "; try again");
    }

    @Override
    public TakeOverResult takeOver(TakeOverRequest r) {
        Row row =
                queryOne(
                        "take_over",
                        r.id().tenant(),
                        r.id().key(),
                        r.expectedToken(),
                        r.token(),
                        Math.min(r.leaseMs(), MAX_SPAN_MS),
                        Math.min(r.ttlMs(), MAX_SPAN_MS));
        if (row != null) {
            return TakeOverResult.acquired(row.number(2), row.number(1));
        }
        // Not an abandoned claim of the expected token (any more): the live record, as it is now.
        ReadResult now = get(r.id());
        return TakeOverResult.lost(now.now(), now.record());
    }

    @Override
    public boolean delete(RecordId id) {
        Row row = queryOne("delete", id.tenant(), id.key());
        return row != null && row.bool(1);
    }

    @Override
    public long forget(String tenant) {
        long removed = 0;
        for (; ; ) {
            long n = update("forget", tenant, DELETE_BATCH);
            removed += n;
            if (n < DELETE_BATCH) {
                return removed;
            }
        }
    }

    @Override
    public long purgeExpired() {
        long removed = 0;
        for (; ; ) {
            long n = update("purge", DELETE_BATCH);
            removed += n;
            if (n < DELETE_BATCH) {
                return removed;
            }
        }
    }

    @Override
    public String describe() {
        return "postgresql (DataSource " + dataSource.getClass().getName() + ") table " + table;
    }

    // --- JDBC ---

    /** {@code crate::policy::MAX_SPAN} in milliseconds: leases and TTLs are capped at it. */
    private static final long MAX_SPAN_MS = 100L * 365 * 24 * 3600 * 1000;

    private Connection connection() throws SQLException {
        Connection c = dataSource.getConnection();
        try {
            if (!c.getAutoCommit()) {
                c.setAutoCommit(true);
            }
            return c;
        } catch (SQLException e) {
            c.close();
            throw e;
        }
    }

    private PreparedStatement prepare(Connection c, String name, Object... values)
            throws SQLException {
        Map<String, Sql> in = sql;
        Sql statement =
                name.equals("claim") && in == full && !claimFunction
                        ? claimStatement
                        : in.get(name);
        PreparedStatement s = c.prepareStatement(statement.text);
        try {
            for (int i = 0; i < statement.order.length; i++) {
                Object v = values[statement.order[i]];
                int at = i + 1;
                if (v == null) {
                    s.setNull(at, Types.VARCHAR);
                } else if (v instanceof String) {
                    s.setString(at, (String) v);
                } else if (v instanceof Integer) {
                    s.setInt(at, (Integer) v);
                } else if (v instanceof Long) {
                    s.setLong(at, (Long) v);
                } else if (v instanceof Boolean) {
                    s.setBoolean(at, (Boolean) v);
                } else {
                    throw new IllegalArgumentException("unexpected parameter " + v.getClass());
                }
            }
            return s;
        } catch (SQLException | RuntimeException e) {
            s.close();
            throw e;
        }
    }

    /** The first row of a query, or null when it answers none. */
    private Row queryOne(String name, Object... values) {
        List<Row> rows = query(name, values);
        return rows.isEmpty() ? null : rows.get(0);
    }

    /**
     * Every row of a query, read eagerly (sent again on the statements of an older table: without
     * the claim function, then without the fingerprint column).
     */
    private List<Row> query(String name, Object... values) {
        for (int attempt = 0; ; attempt++) {
            StoreDeadline.millisLeft(); // throws when the executor no longer waits
            try (Connection c = connection();
                    PreparedStatement s = prepare(c, name, values)) {
                List<Row> rows = new ArrayList<>();
                int restore = bound(c);
                try (ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        rows.add(new Row(rs));
                    }
                } finally {
                    unbound(c, restore);
                }
                if (name.equals("claim") && unwarnedClaimFallback.compareAndSet(true, false)) {
                    LOG.log(
                            System.Logger.Level.WARNING,
                            "idemkit: "
                                    + describe()
                                    + " has no claim function, so every claim runs the full claim"
                                    + " statement; apply "
                                    + claimFunctionFile
                                    + " or call PostgresIdempotencyStore.createTableIfMissing()");
                }
                return rows;
            } catch (SQLException e) {
                if (attempt < 2 && fallBack(e)) {
                    continue;
                }
                throw failed(name, e);
            }
        }
    }

    private long update(String name, Object... values) {
        for (int attempt = 0; ; attempt++) {
            StoreDeadline.millisLeft(); // throws when the executor no longer waits
            try (Connection c = connection();
                    PreparedStatement s = prepare(c, name, values)) {
                int restore = bound(c);
                try {
                    return s.executeUpdate();
                } finally {
                    unbound(c, restore);
                }
            } catch (SQLException e) {
                if (attempt < 2 && fallBack(e)) {
                    continue;
                }
                throw failed(name, e);
            }
        }
    }

    /**
     * Bounds every read on {@code c} by the time the store operation has left ({@link
     * StoreDeadline}, handed by the executor), whatever the data source's {@code socketTimeout}: a
     * server that stops answering fails the statement then. Answers the network timeout to put
     * back, or -1 when it was left as it was.
     */
    private static int bound(Connection c) throws SQLException {
        long left = StoreDeadline.millisLeft();
        if (left == 0) {
            return -1;
        }
        int ms = (int) Math.min(left, Integer.MAX_VALUE);
        int before = c.getNetworkTimeout();
        if (before != 0 && before <= ms) {
            return -1;
        }
        c.setNetworkTimeout(Runnable::run, ms);
        return before;
    }

    /** Puts back the network timeout {@link #bound} replaced, on a connection still open. */
    private static void unbound(Connection c, int restore) {
        if (restore < 0) {
            return;
        }
        try {
            if (!c.isClosed()) {
                c.setNetworkTimeout(Runnable::run, restore);
            }
        } catch (SQLException broken) {
            // A connection broken by the timeout is discarded by its close.
        }
    }

    private IllegalStateException failed(String operation, SQLException e) {
        String state = e.getSQLState() == null ? "" : " (SQLSTATE " + e.getSQLState() + ")";
        if ("42P01".equals(e.getSQLState())) {
            return new IllegalStateException(
                    "table "
                            + table
                            + " does not exist; create it with sql/postgres/*.sql or"
                            + " PostgresIdempotencyStore.createTableIfMissing()",
                    e);
        }
        return new IllegalStateException(operation + " failed: " + e.getMessage() + state, e);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** One row, read eagerly (the result set closes with its connection). */
    private static final class Row {
        private final Object[] values;

        Row(ResultSet rs) throws SQLException {
            int n = rs.getMetaData().getColumnCount();
            values = new Object[n + 1];
            for (int i = 1; i <= n; i++) {
                values[i] = rs.getObject(i);
            }
        }

        boolean bool(int at) {
            return Boolean.TRUE.equals(values[at]);
        }

        long number(int at) {
            return ((Number) values[at]).longValue();
        }

        String text(int at) {
            return values[at] == null ? null : values[at].toString();
        }

        /** Columns {@code at..at+11} of {@code record_columns} (sql.rs), or null when empty. */
        StoredRecord record(int at) {
            String key = text(at + 1);
            if (key == null) {
                return null;
            }
            int format = (int) number(at + 2);
            if (format != StoredRecord.FORMAT) {
                throw new IllegalStateException(
                        "record "
                                + key
                                + " has format "
                                + format
                                + ", not "
                                + StoredRecord.FORMAT
                                + "; upgrade idemkit to read it");
            }
            String state = text(at + 4);
            String outcome = text(at + 10);
            return new StoredRecord(
                    format,
                    key,
                    text(at),
                    text(at + 3),
                    "completed".equals(state)
                            ? StoredRecord.State.COMPLETED
                            : StoredRecord.State.IN_PROGRESS,
                    text(at + 5),
                    number(at + 6),
                    number(at + 7),
                    number(at + 8),
                    number(at + 9),
                    outcome == null ? null : StoredOutcome.ofJson(outcome),
                    text(at + 11));
        }
    }

    /** The list cursor of the native store: {@code p1.<hex of tenant_key>.<key>}. */
    static String renderCursor(String tenantKey, String key) {
        StringBuilder out = new StringBuilder("p1.");
        for (byte b : tenantKey.getBytes(StandardCharsets.UTF_8)) {
            out.append(String.format("%02x", b & 0xff));
        }
        return out.append('.').append(key).toString();
    }

    static String[] parseCursor(String cursor) {
        String bad = "bad list cursor " + cursor + " for the PostgreSQL store";
        if (!cursor.startsWith("p1.")) {
            throw new IllegalArgumentException(bad);
        }
        String rest = cursor.substring(3);
        int dot = rest.indexOf('.');
        if (dot < 0 || dot % 2 != 0) {
            throw new IllegalArgumentException(bad);
        }
        byte[] bytes = new byte[dot / 2];
        try {
            for (int i = 0; i < bytes.length; i++) {
                bytes[i] = (byte) Integer.parseInt(rest.substring(2 * i, 2 * i + 2), 16);
            }
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(bad, e);
        }
        return new String[] {new String(bytes, StandardCharsets.UTF_8), rest.substring(dot + 1)};
    }
}
