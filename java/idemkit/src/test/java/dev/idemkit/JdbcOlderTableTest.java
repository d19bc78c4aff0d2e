package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The JDBC store on a table an older idemkit made (the files {@code sql/postgres/001} to {@code
 * 004}, without the fingerprint column of {@code 005} and the claim function of {@code 006}): like
 * the native store it keeps working without fingerprints (the core's statements for such a table)
 * and with the claim statement instead of the function, warns once per missing migration naming it,
 * and keeps fingerprints and calls the function once {@code createTableIfMissing()} has made them.
 */
// An older table is used, and warned of, on purpose.
@ExpectedWarnings({"has no claim function", "has no fingerprint column", "store_error"})
class JdbcOlderTableTest {
    /** Held here: JUL keeps loggers only weakly, and a collected one would lose its handler. */
    private static final Logger JDBC = Logger.getLogger("dev.idemkit.store.jdbc");

    private final LogCapture capture = new LogCapture();
    private final List<LogRecord> logged = capture.records;

    private DataSource dataSource;
    private String table;

    /**
     * An EXPLICIT tool keyed by the order id that refuses another payload; the payload is the whole
     * input.
     */
    public static class Orders implements IdempotencyKeySupplier {
        final AtomicInteger runs = new AtomicInteger();

        @Override
        public String idempotencyKeyFor(Map<String, Object> input) {
            return "order-" + input.get("order");
        }

        @Tool(name = "older_table_charge")
        @Idempotent(strategy = KeyStrategy.EXPLICIT, rejectPayloadMismatch = true)
        public int charge(String order, int amount) {
            runs.incrementAndGet();
            return amount;
        }
    }

    @BeforeEach
    void makeAnOlderTable() throws Exception {
        dataSource = JavaClients.dataSource("JDBC store on an older table");
        table = "idemkit_v10_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        Path files =
                Path.of(System.getProperty("idemkit.repo.root", "../.."))
                        .resolve("sql/postgres")
                        .toAbsolutePath()
                        .normalize();
        StringBuilder ddl = new StringBuilder();
        for (String file :
                List.of(
                        "001_idemkit_records.sql",
                        "002_idemkit_records_claimed_at.sql",
                        "003_idemkit_records_held_outcome.sql",
                        "004_idemkit_records_hot.sql")) {
            ddl.append(Files.readString(files.resolve(file))).append('\n');
        }
        execute(
                ddl.toString()
                        .replace("idemkit_records_", table + "_")
                        .replace("idemkit_records", table));
        assertFalse(hasFingerprintColumn(), "the older table has no fingerprint column");
        JDBC.addHandler(capture);
    }

    @AfterEach
    void dropIt() throws Exception {
        JDBC.removeHandler(capture);
        // A test skipped for want of a server (no IDEMKIT_POSTGRES_URL) made no table to drop.
        if (dataSource != null) {
            execute(
                    "DROP TABLE IF EXISTS "
                            + table
                            + "; DROP FUNCTION IF EXISTS "
                            + table
                            + "_claim");
        }
    }

    private void execute(String sql) throws SQLException {
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    private boolean hasFingerprintColumn() throws SQLException {
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement();
                ResultSet rs =
                        s.executeQuery(
                                "SELECT count(*) FROM information_schema.columns WHERE table_name"
                                        + " = '"
                                        + table
                                        + "' AND column_name = 'fingerprint'")) {
            rs.next();
            return rs.getInt(1) == 1;
        }
    }

    private List<LogRecord> warnings() {
        return logged.stream()
                .filter(r -> r.getLevel() == Level.WARNING)
                .filter(r -> r.getMessage().contains(table))
                .collect(Collectors.toList());
    }

    /** The orders tool on {@code store}, under a tenant of its own. */
    private static ToolDispatcher dispatcher(Orders orders, PostgresIdempotencyStore store) {
        return ToolDispatcher.builder()
                .tools(orders)
                .store(store)
                .tenant("older-" + UUID.randomUUID())
                .build();
    }

    @Test
    void the_jdbc_store_keeps_working_without_fingerprints_and_warns_once() throws Exception {
        Orders orders = new Orders();
        try (PostgresIdempotencyStore store = new PostgresIdempotencyStore(dataSource, table)) {
            ToolDispatcher calls = dispatcher(orders, store);
            String order = "O-" + UUID.randomUUID();
            assertEquals(5, calls.call("older_table_charge", Map.of("order", order, "amount", 5)));
            assertEquals(5, calls.call("older_table_charge", Map.of("order", order, "amount", 5)));
            // No fingerprint was kept, so another payload under the key is answered from the
            // record, as on a 1.0 table with the native store (SPEC v1.1 rule 9).
            assertEquals(5, calls.call("older_table_charge", Map.of("order", order, "amount", 6)));
            assertEquals(1, orders.runs.get());

            List<LogRecord> warned = warnings();
            assertEquals(2, warned.size(), "one warning per missing migration: " + logged);
            String both = warned.get(0).getMessage() + "\n" + warned.get(1).getMessage();
            assertTrue(both.contains("sql/postgres/005_idemkit_records_fingerprint.sql"), both);
            assertTrue(both.contains("sql/postgres/006_idemkit_records_claim_function.sql"), both);
            for (LogRecord warning : warned) {
                String message = warning.getMessage();
                assertTrue(
                        message.contains("PostgresIdempotencyStore.createTableIfMissing()"),
                        message);
                assertFalse(message.contains("PostgresStore::"), message);
            }

            // The migration through the store: the old record still reads, new ones keep their
            // fingerprint, and another payload is refused.
            store.createTableIfMissing();
            assertTrue(hasFingerprintColumn());
            assertEquals(5, calls.call("older_table_charge", Map.of("order", order, "amount", 5)));
            String fresh = "N-" + UUID.randomUUID();
            assertEquals(7, calls.call("older_table_charge", Map.of("order", fresh, "amount", 7)));
            assertThrows(
                    PayloadMismatchException.class,
                    () -> calls.call("older_table_charge", Map.of("order", fresh, "amount", 8)));
            assertEquals(2, orders.runs.get());
            assertEquals(2, warnings().size(), "no further warning: " + logged);
        }
    }

    /** The definition of the table's claim function, made to refuse every claim. */
    private String refusingClaimFunction() throws SQLException {
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement();
                ResultSet rs =
                        s.executeQuery(
                                "SELECT pg_get_functiondef(to_regproc('" + table + "_claim'))")) {
            rs.next();
            String definition = rs.getString(1);
            assertTrue(definition != null && definition.contains("BEGIN\n"), "the function exists");
            return definition.replaceFirst(
                    "BEGIN\n", "BEGIN\n  RAISE EXCEPTION 'the claim function ran';\n");
        }
    }

    @Test
    void without_the_claim_function_claims_send_the_statement_and_warn_once() throws Exception {
        // A 1.1 table: 005 applied, 006 not.
        Path fingerprint =
                Path.of(System.getProperty("idemkit.repo.root", "../.."))
                        .resolve("sql/postgres/005_idemkit_records_fingerprint.sql")
                        .toAbsolutePath()
                        .normalize();
        execute(Files.readString(fingerprint).replace("idemkit_records", table));
        Orders orders = new Orders();
        try (PostgresIdempotencyStore store = new PostgresIdempotencyStore(dataSource, table)) {
            ToolDispatcher calls = dispatcher(orders, store);
            String order = "F-" + UUID.randomUUID();
            assertEquals(3, calls.call("older_table_charge", Map.of("order", order, "amount", 3)));
            assertEquals(3, calls.call("older_table_charge", Map.of("order", order, "amount", 3)));
            assertThrows(
                    PayloadMismatchException.class,
                    () -> calls.call("older_table_charge", Map.of("order", order, "amount", 4)));
            assertEquals(1, orders.runs.get());
            List<LogRecord> warned = warnings();
            assertEquals(1, warned.size(), "one warning: " + logged);
            assertTrue(
                    warned.get(0)
                            .getMessage()
                            .contains("sql/postgres/006_idemkit_records_claim_function.sql"),
                    warned.get(0).getMessage());

            // Made by createTableIfMissing(), the function is what claims call from then on:
            // made to refuse, it refuses them.
            store.createTableIfMissing();
            assertEquals(3, calls.call("older_table_charge", Map.of("order", order, "amount", 3)));
            execute(refusingClaimFunction());
            IdempotencyException refused =
                    assertThrows(
                            IdempotencyException.class,
                            () ->
                                    calls.call(
                                            "older_table_charge",
                                            Map.of("order", order, "amount", 3)));
            assertTrue(
                    refused.getMessage().contains("the claim function ran"), refused.getMessage());
            assertEquals(1, orders.runs.get());
            assertEquals(1, warnings().size(), "no further warning: " + logged);
        }
    }
}
