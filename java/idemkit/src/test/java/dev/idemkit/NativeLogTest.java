package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The native core's warnings reach {@code System.Logger} (here its default, {@code
 * java.util.logging}) on the logger {@code dev.idemkit.native} and below it, drained on the Java
 * thread after a native call: when a store opens, after a call, on close. A full queue drops the
 * oldest lines and says how many.
 */
class NativeLogTest {
    /** Held here: JUL keeps loggers only weakly, and a collected one would lose its handler. */
    private static final Logger NATIVE = Logger.getLogger(NativeLog.LOGGER);

    private final LogCapture capture = new LogCapture();
    private final List<LogRecord> logged = capture.records;

    @BeforeEach
    void captureLogs() {
        // Lines left by earlier tests are not this test's.
        try (InMemoryIdempotencyStore installsTheLogger = new InMemoryIdempotencyStore()) {
            NativeLog.drain();
        }
        NATIVE.addHandler(capture);
        // The flood of lines stays out of the test's console.
        NATIVE.setUseParentHandlers(false);
    }

    @AfterEach
    void stopCapturing() {
        NATIVE.removeHandler(capture);
        NATIVE.setUseParentHandlers(true);
    }

    private List<LogRecord> containing(String text) {
        return logged.stream()
                .filter(r -> r.getMessage() != null && r.getMessage().contains(text))
                .collect(Collectors.toList());
    }

    @Test
    void a_postgres_table_without_its_migration_is_warned_when_the_store_opens() {
        String url = Services.url("IDEMKIT_POSTGRES_URL", "native log PostgreSQL");
        String table = "idemkit_never_made_" + UUID.randomUUID().toString().replace("-", "");
        try (PostgresIdempotencyStore store = new PostgresIdempotencyStore(url, table)) {
            // Logged by the core while the constructor's native call ran; drained when it returned.
            List<LogRecord> warned = containing(table);
            assertEquals(1, warned.size(), "the lines logged: " + messages());
            LogRecord line = warned.get(0);
            assertEquals(Level.WARNING, line.getLevel());
            assertEquals("dev.idemkit.native.store.postgres", line.getLoggerName());
            assertTrue(
                    line.getMessage().contains("sql/postgres/001_idemkit_records.sql"),
                    line.getMessage());
            String userInfo = URI.create(url).getUserInfo();
            if (userInfo != null && userInfo.contains(":")) {
                String password = userInfo.substring(userInfo.indexOf(':') + 1);
                assertFalse(line.getMessage().contains(password), "the password was logged");
            }
        }
    }

    @Test
    void create_table_if_missing_does_not_warn_that_the_table_is_missing_again() throws Exception {
        String url = Services.url("IDEMKIT_POSTGRES_URL", "native log PostgreSQL");
        String table = "idemkit_made_here_" + UUID.randomUUID().toString().replace("-", "");
        try (PostgresIdempotencyStore store = new PostgresIdempotencyStore(url, table)) {
            store.createTableIfMissing();
            // The constructor's warning, and none from the call that makes the table.
            List<LogRecord> warned = containing(table);
            assertEquals(1, warned.size(), "the lines logged: " + messages());
            // It names the Java call (as well as the Rust one) that makes the table.
            assertTrue(
                    warned.get(0)
                            .getMessage()
                            .contains("PostgresIdempotencyStore.createTableIfMissing()"),
                    warned.get(0).getMessage());
        } finally {
            try (java.sql.Connection c =
                            JavaClients.dataSource("native log PostgreSQL").getConnection();
                    java.sql.Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS " + table);
            }
        }
    }

    static class Tools {
        volatile String warning;

        @Tool(name = "warns_in_the_core")
        @Idempotent
        public String warns(String id) {
            // Stands for a warning the core logs while the call is under way (on a runtime
            // thread, say): queued in native memory until the call's next native step returns.
            NativeTestSupport.logWarnings(1, warning);
            return "ok:" + id;
        }
    }

    @Test
    void a_warning_logged_during_a_call_is_logged_before_the_call_returns() {
        Tools tools = new Tools();
        tools.warning = "during-a-call-" + UUID.randomUUID();
        try (InMemoryIdempotencyStore store = new InMemoryIdempotencyStore()) {
            ToolDispatcher dispatcher = ToolDispatcher.builder().tools(tools).store(store).build();
            assertEquals("ok:a", dispatcher.call("warns_in_the_core", Map.of("id", "a")));
            List<LogRecord> warned = containing(tools.warning);
            assertEquals(1, warned.size(), "the lines logged: " + messages());
            assertEquals(Level.WARNING, warned.get(0).getLevel());
            assertEquals("dev.idemkit.native.testing", warned.get(0).getLoggerName());
            assertEquals(tools.warning + " 0", warned.get(0).getMessage());
        }
    }

    @Test
    void a_full_queue_drops_the_oldest_lines_and_counts_them() {
        String flood = "flood-" + UUID.randomUUID() + " line";
        InMemoryIdempotencyStore store = new InMemoryIdempotencyStore();
        NativeTestSupport.logWarnings(300, flood);
        assertTrue(containing(flood).isEmpty(), "nothing is logged before a drain");
        store.close();

        List<LogRecord> arrived = containing(flood);
        assertTrue(arrived.size() <= 256, arrived.size() + " lines arrived");
        assertTrue(
                arrived.stream().anyMatch(r -> r.getMessage().equals(flood + " 299")),
                "the newest line arrived");
        assertTrue(
                arrived.stream().noneMatch(r -> r.getMessage().equals(flood + " 0")),
                "the oldest line was dropped");
        List<LogRecord> dropped = containing("lines of the native core's log were dropped");
        assertEquals(1, dropped.size(), "the lines logged: " + messages());
        assertEquals(Level.WARNING, dropped.get(0).getLevel());
        assertEquals(NativeLog.LOGGER, dropped.get(0).getLoggerName());
        long count = Long.parseLong(dropped.get(0).getMessage().split(" ")[1]);
        assertTrue(count >= 300 - 256, count + " dropped");
        // The count comes before the lines kept.
        assertTrue(logged.indexOf(dropped.get(0)) < logged.indexOf(arrived.get(0)));
    }

    @Test
    void a_rust_target_maps_to_a_logger_below_dev_idemkit_native() {
        assertEquals("dev.idemkit.native", NativeLog.loggerName("idemkit"));
        assertEquals("dev.idemkit.native", NativeLog.loggerName(""));
        assertEquals(
                "dev.idemkit.native.store.postgres.pool",
                NativeLog.loggerName("idemkit::store::postgres::pool"));
        assertEquals(
                "dev.idemkit.native.tokio_postgres.connection",
                NativeLog.loggerName("tokio_postgres::connection"));
    }

    private String messages() {
        return logged.stream()
                .map(r -> r.getLoggerName() + " " + r.getLevel() + " " + r.getMessage())
                .collect(Collectors.joining("\n"));
    }
}
