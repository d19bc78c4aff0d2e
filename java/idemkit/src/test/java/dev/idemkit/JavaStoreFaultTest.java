package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The fault and storm tests of the native stores, on the stores written in Java over the
 * application's own clients (Jedis, JDBC): a server paused (SIGSTOP) and resumed, killed and
 * restarted, a claim holder SIGKILLed, and storms of four processes of eight threads, one of them
 * SIGKILLed mid-storm. No key runs twice.
 *
 * <p>The paused and restarted servers are private ones on free ports ({@code redis-server}, and a
 * PostgreSQL made by {@code initdb}); a missing binary skips those tests. The holder and the storm
 * run on the shared test servers ({@code IDEMKIT_REDIS_URL}, {@code IDEMKIT_POSTGRES_URL}), each
 * under a tenant of its own, forgotten at the end.
 */
// An outage fails calls, and the core warns of each store error (asserted where provoked); a
// storm's lost worker can leave one too.
@ExpectedWarnings("store_error")
class JavaStoreFaultTest {
    /**
     * The lease of the tools a paused server fails: the core looks for a lost claim (to release it)
     * until the lease ends, and a scenario waits that long before it ends.
     */
    static final int SHORT_LEASE_SECONDS = 3;

    /** A tool that counts its runs and returns its input. */
    public static class CountedTools {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "fault_send")
        @Idempotent(leaseSeconds = SHORT_LEASE_SECONDS)
        public String send(String message) {
            runs.incrementAndGet();
            return "sent:" + message;
        }

        @Tool(name = "fault_send_soon", timeoutMs = 300)
        @Idempotent(leaseSeconds = SHORT_LEASE_SECONDS)
        public String sendSoon(String message) {
            runs.incrementAndGet();
            return "sent:" + message;
        }

        @Tool(name = "fault_send_half_second", timeoutMs = 500)
        @Idempotent(leaseSeconds = 10)
        public String sendHalfSecond(String message) {
            runs.incrementAndGet();
            return "sent:" + message;
        }
    }

    // ---- private servers ------------------------------------------------------------------

    /** A port that was free a moment ago, below the ephemeral range (as the Rust tests pick). */
    static int freePort() throws IOException {
        java.util.Random random = new java.util.Random();
        for (int attempt = 0; attempt < 1_000; attempt++) {
            int port = 20_000 + random.nextInt(12_000);
            try (ServerSocket s = new ServerSocket()) {
                s.bind(new InetSocketAddress("127.0.0.1", port));
                return port;
            } catch (IOException taken) {
                // try another
            }
        }
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    static boolean answers(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** Polls {@code check} until it holds, failing after 30 seconds. */
    static void waitUntil(String what, java.util.function.BooleanSupplier check)
            throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!check.getAsBoolean()) {
            if (System.nanoTime() > end) {
                fail(what + ": timed out");
            }
            Thread.sleep(50);
        }
    }

    /**
     * Sends {@code signal} ({@code -STOP}, {@code -CONT}) to each of {@code pids}; a process that
     * has ended meanwhile (a backend whose session closed) is passed over.
     */
    static void signal(String signal, List<Long> pids) throws Exception {
        for (long pid : pids) {
            Process kill =
                    new ProcessBuilder("kill", signal, Long.toString(pid))
                            .redirectErrorStream(true)
                            .start();
            String out = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(kill.waitFor(30, TimeUnit.SECONDS), "kill " + signal);
            boolean gone = ProcessHandle.of(pid).map(p -> !p.isAlive()).orElse(true);
            assertTrue(kill.exitValue() == 0 || gone, "kill " + signal + " " + pid + ": " + out);
        }
    }

    /** A private {@code redis-server} without persistence on a port of its own. */
    static final class PrivateRedis implements AutoCloseable {
        final int port;
        private Process process;

        private PrivateRedis(int port, Process process) {
            this.port = port;
            this.process = process;
        }

        /** Started, or the test aborted (skipped) when {@code redis-server} cannot run. */
        static PrivateRedis start() throws Exception {
            int port = freePort();
            PrivateRedis server = new PrivateRedis(port, spawn(port));
            waitUntil("private redis-server answers", () -> answers(port));
            return server;
        }

        private static Process spawn(int port) {
            try {
                return new ProcessBuilder(
                                "redis-server",
                                "--port",
                                Integer.toString(port),
                                "--bind",
                                "127.0.0.1",
                                "--save",
                                "",
                                "--appendonly",
                                "no",
                                "--maxmemory-policy",
                                "noeviction")
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                        .redirectError(ProcessBuilder.Redirect.DISCARD)
                        .start();
            } catch (IOException e) {
                Services.skip(
                        "redis-server",
                        "SKIPPING: cannot start redis-server (" + e.getMessage() + ")");
                throw new AssertionError(e);
            }
        }

        String url() {
            return "redis://127.0.0.1:" + port + "/0";
        }

        void signal(String signal) throws Exception {
            JavaStoreFaultTest.signal(signal, List.of(process.pid()));
        }

        /** SIGKILL; returns once the port is closed. */
        void kill() throws Exception {
            process.destroyForcibly().waitFor();
            waitUntil("private redis-server is gone", () -> !answers(port));
        }

        /** Starts it again, empty, on the same port. */
        void restart() throws Exception {
            process = spawn(port);
            waitUntil("private redis-server answers again", () -> answers(port));
        }

        /** Resumes it if paused, then SIGKILLs it. */
        @Override
        public void close() throws IOException {
            try {
                signal("-CONT");
                process.destroyForcibly().waitFor();
            } catch (Exception e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                throw new IOException("stopping the private redis-server", e);
            }
        }
    }

    /**
     * A private PostgreSQL: {@code initdb} in a temporary directory, run as the {@code postgres} OS
     * user through {@code runuser} when the tests run as root.
     */
    static final class PrivatePostgres implements AutoCloseable {
        final Path dir;
        final int port;

        private PrivatePostgres(Path dir, int port) {
            this.dir = dir;
            this.port = port;
        }

        private static List<String> command(String... args) {
            List<String> command = new ArrayList<>();
            if ("root".equals(System.getProperty("user.name"))) {
                command.addAll(List.of("runuser", "-u", "postgres", "--"));
            }
            command.addAll(List.of(args));
            return command;
        }

        private static boolean run(String... args) {
            try {
                Process p = new ProcessBuilder(command(args)).redirectErrorStream(true).start();
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                if (!p.waitFor(120, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    System.err.println(String.join(" ", args) + " timed out: " + out);
                    return false;
                }
                if (p.exitValue() != 0) {
                    System.err.println(String.join(" ", args) + " failed: " + out);
                }
                return p.exitValue() == 0;
            } catch (IOException e) {
                System.err.println(args[0] + " could not run: " + e.getMessage());
                return false;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }

        /** Made and started, or the test aborted (skipped) when initdb or pg_ctl cannot run. */
        static PrivatePostgres start() throws IOException {
            Path dir =
                    Path.of(
                            System.getProperty("java.io.tmpdir"),
                            "idemkit-jpg-" + UUID.randomUUID().toString().substring(0, 10));
            PrivatePostgres server = new PrivatePostgres(dir, freePort());
            String data = dir.toString();
            boolean made =
                    run("mkdir", "-p", data)
                            && run(
                                    "initdb",
                                    "-D",
                                    data,
                                    "-U",
                                    "postgres",
                                    "--auth=trust",
                                    "-E",
                                    "UTF8",
                                    "--locale=C")
                            && server.pgCtl("start", "fast");
            if (!made) {
                server.removeDir();
                Services.skip(
                        "initdb",
                        "SKIPPING: cannot run a private PostgreSQL (needs initdb and pg_ctl, and"
                                + " runuser as root)");
            }
            return server;
        }

        boolean pgCtl(String action, String mode) {
            String data = dir.toString();
            String options =
                    "-p " + port + " -k " + data + " -c listen_addresses=127.0.0.1 -c fsync=off";
            return run(
                    "pg_ctl",
                    "-D",
                    data,
                    "-o",
                    options,
                    "-l",
                    data + "/server.log",
                    "-m",
                    mode,
                    "-w",
                    action);
        }

        String url() {
            return "postgres://postgres@127.0.0.1:" + port + "/postgres";
        }

        /** The postmaster and every process it started (the backends among them). */
        List<Long> processes() throws IOException {
            long postmaster =
                    Long.parseLong(Files.readAllLines(dir.resolve("postmaster.pid")).get(0).trim());
            List<Long> pids = new ArrayList<>();
            pids.add(postmaster);
            ProcessHandle.of(postmaster)
                    .ifPresent(p -> p.descendants().forEach(c -> pids.add(c.pid())));
            return pids;
        }

        private void removeDir() throws IOException {
            if (Files.exists(dir)) {
                try (Stream<Path> paths = Files.walk(dir)) {
                    paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                }
            }
        }

        /** Resumes it if paused, stops it and deletes its directory. */
        @Override
        public void close() throws IOException {
            try {
                if (Files.exists(dir.resolve("postmaster.pid"))) {
                    signal("-CONT", processes());
                }
            } catch (Exception e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                throw new IOException("resuming the private PostgreSQL", e);
            } finally {
                pgCtl("stop", "immediate");
                removeDir();
            }
        }
    }

    private static PrivatePostgres privatePostgres;

    /** One private PostgreSQL for the tests of this class that fault one (initdb takes a while). */
    static synchronized PrivatePostgres privatePostgres() throws IOException {
        if (Services.url("IDEMKIT_POSTGRES_URL", "JDBC store fault") != null
                && privatePostgres == null) {
            privatePostgres = PrivatePostgres.start();
        }
        return privatePostgres;
    }

    @AfterAll
    static void stopPrivatePostgres() throws Exception {
        if (privatePostgres != null) {
            privatePostgres.close();
            privatePostgres = null;
        }
    }

    // ---- helpers ----------------------------------------------------------------------------

    /**
     * What {@code call} throws, run on a thread of its own so that a call that hangs fails the test
     * (after 60 s) instead of hanging it.
     */
    static Throwable failureOf(java.util.concurrent.Callable<Object> call) throws Exception {
        return failureWithin(60_000, call);
    }

    /** What {@code call} throws, failing the test if it has not returned within {@code ms}. */
    static Throwable failureWithin(long ms, java.util.concurrent.Callable<Object> call)
            throws Exception {
        CompletableFuture<Object> result = new CompletableFuture<>();
        Thread t =
                new Thread(
                        () -> {
                            try {
                                result.complete(call.call());
                            } catch (Throwable e) {
                                result.completeExceptionally(e);
                            }
                        });
        t.setDaemon(true);
        t.start();
        try {
            Object value = result.get(ms, TimeUnit.MILLISECONDS);
            return fail("expected the call to fail, it answered " + value);
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (java.util.concurrent.TimeoutException e) {
            return fail("the call had not returned after " + ms + " ms");
        }
    }

    /** {@code =value}, or {@code !ExceptionClass} for an idemkit error. */
    static String answer(java.util.concurrent.Callable<Object> call) throws Exception {
        try {
            return "=" + call.call();
        } catch (IdempotencyException e) {
            return "!" + e.getClass().getSimpleName();
        }
    }

    static ToolDispatcher dispatcher(Object tools, IdempotencyStore store, String tenant) {
        return ToolDispatcher.builder().tools(tools).store(store).tenant(tenant).build();
    }

    static String send(ToolDispatcher d, String message) {
        return (String) d.call("fault_send", Map.of("message", message));
    }

    // ---- 1. a paused server; 2. a killed and restarted server -------------------------------

    /**
     * While the server is paused, a call fails with store-unavailable (the client's timeout) and
     * its body does not run; one whose {@code timeoutMs} is shorter than that timeout fails so at
     * its deadline (SPEC v1.2 §9 rule 3); once resumed, the same store serves calls, a completed
     * key is still a hit, and the call that failed runs once.
     */
    static void pauseAndResume(
            IdempotencyStore store, Runnable pause, Runnable resume, String tenant)
            throws Exception {
        CountedTools tools = new CountedTools();
        try (ToolDispatcher d = dispatcher(tools, store, tenant)) {
            assertEquals("sent:A", send(d, "A"));
            assertEquals(1, tools.runs.get());
            pause.run();
            Throwable paused;
            Throwable soon;
            try {
                paused = failureOf(() -> send(d, "B"));
                soon = failureOf(() -> d.call("fault_send_soon", Map.of("message", "D")));
            } finally {
                resume.run();
            }
            assertInstanceOf(StoreUnavailableException.class, paused, String.valueOf(paused));
            // A deadline shorter than the client's timeout ends the caller's wait, not the
            // client's timeout: the usual error of a store that did not answer in time.
            assertInstanceOf(StoreUnavailableException.class, soon, String.valueOf(soon));
            assertTrue(soon.getMessage().contains("deadline"), soon.getMessage());
            assertEquals(1, tools.runs.get(), "no body ran while the server was paused");

            assertEquals("sent:A", send(d, "A"));
            assertEquals(1, tools.runs.get(), "a completed key is still a hit");
            assertEquals("sent:C", send(d, "C"));
            assertEquals(2, tools.runs.get());
            // B's claim may have reached the server, its reply lost. The core releases it in the
            // background and B runs once; but a claim held in a paused backend's socket (a pooled
            // JDBC connection) may land only after that release found nothing to release: then
            // it is abandoned at its lease end and B answers indeterminate. B never runs twice.
            String b = answer(() -> send(d, "B"));
            assertEquals(b, answer(() -> send(d, "B")));
            if (b.equals("=sent:B")) {
                assertEquals(3, tools.runs.get());
            } else {
                assertEquals("!IndeterminateOutcomeException", b);
                assertEquals(2, tools.runs.get());
            }
            settlersEnd();
        }
    }

    /**
     * Waits until the claims this scenario's paused server lost have had their lease end, so the
     * core's background releases of them have ended, with the server serving, before the scenario
     * closes the store or stops the server; and logs what they logged now, under this test (the
     * core's lines reach Java when a native call returns). A release that found nothing to release
     * logs nothing.
     */
    static void settlersEnd() throws InterruptedException {
        Thread.sleep(SHORT_LEASE_SECONDS * 1000L + 1000L);
        NativeLog.drain();
    }

    /**
     * A store over a client that waits (nearly) forever for a paused server: a call whose tool has
     * {@code timeoutMs = 500} still gets the usual error of a store that did not answer by the
     * deadline — within its timeout plus 2 s — and runs no body (SPEC v1.2 §9 rule 3); once the
     * server is resumed, the same store serves calls, and the call that failed runs at most once.
     */
    static void deadlineOnAPausedServer(
            IdempotencyStore store, Runnable pause, Runnable resume, String tenant)
            throws Exception {
        CountedTools tools = new CountedTools();
        String tool = "fault_send_half_second";
        try (ToolDispatcher d = dispatcher(tools, store, tenant)) {
            assertEquals("sent:A", d.call(tool, Map.of("message", "A")));
            Throwable late;
            pause.run();
            try {
                late = failureWithin(500 + 2_000, () -> d.call(tool, Map.of("message", "B")));
            } finally {
                resume.run();
            }
            assertInstanceOf(StoreUnavailableException.class, late, String.valueOf(late));
            assertTrue(late.getMessage().contains("deadline"), late.getMessage());
            assertEquals(1, tools.runs.get(), "no body ran while the server was paused");

            // The store may need a moment to be reachable again (its connections were broken).
            String a = answer(() -> d.call(tool, Map.of("message", "A")));
            for (int i = 0; i < 20 && !a.equals("=sent:A"); i++) {
                Thread.sleep(250);
                a = answer(() -> d.call(tool, Map.of("message", "A")));
            }
            assertEquals("=sent:A", a, "a completed key is still a hit once resumed");
            assertEquals("sent:C", d.call(tool, Map.of("message", "C")));
            assertEquals(2, tools.runs.get());
            String b = answer(() -> d.call(tool, Map.of("message", "B")));
            assertEquals(b, answer(() -> d.call(tool, Map.of("message", "B"))));
            assertTrue(tools.runs.get() <= 3, "B ran at most once");
        }
    }

    /**
     * While the server is down, calls fail with store-unavailable and run no body; after it is
     * started again, the same store serves calls (and, when it kept its data, a completed key is
     * still a hit).
     */
    static void killAndRestart(
            IdempotencyStore store,
            ThrowingRunnable kill,
            ThrowingRunnable restart,
            boolean keepsData,
            String tenant)
            throws Exception {
        CountedTools tools = new CountedTools();
        try (ToolDispatcher d = dispatcher(tools, store, tenant)) {
            assertEquals("sent:A", send(d, "A"));
            kill.run();
            for (int i = 0; i < 3; i++) {
                Throwable down = failureOf(() -> send(d, "B"));
                assertInstanceOf(StoreUnavailableException.class, down, String.valueOf(down));
            }
            assertEquals(1, tools.runs.get(), "no body ran while the server was down");
            restart.run();
            assertEquals("sent:C", send(d, "C"));
            assertEquals(2, tools.runs.get());
            assertEquals("sent:A", send(d, "A"));
            assertEquals(keepsData ? 2 : 3, tools.runs.get(), "A after the restart");
            assertEquals("sent:B", send(d, "B"));
            assertEquals("sent:B", send(d, "B"));
            assertEquals(keepsData ? 3 : 4, tools.runs.get());
        }
    }

    /** A {@code Runnable} that may throw. */
    interface ThrowingRunnable {
        void run() throws Exception;
    }

    static Runnable unchecked(ThrowingRunnable r) {
        return () -> {
            try {
                r.run();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        };
    }

    @Test
    @ExpectedWarnings("store_error")
    void a_paused_redis_server_fails_jedis_store_calls_unrun_and_serves_them_once_resumed()
            throws Exception {
        Services.url("IDEMKIT_REDIS_URL", "Jedis store fault");
        try (PrivateRedis server = PrivateRedis.start()) {
            List<AutoCloseable> clients = new ArrayList<>();
            try (IdempotencyStore store =
                    JavaStoreFaultChild.open("jedis", server.url(), clients, true)) {
                pauseAndResume(
                        store,
                        unchecked(() -> server.signal("-STOP")),
                        unchecked(() -> server.signal("-CONT")),
                        "fault-" + UUID.randomUUID());
            } finally {
                closeAll(clients);
            }
        }
    }

    @Test
    @ExpectedWarnings("store_error")
    void a_killed_redis_server_fails_jedis_store_calls_unrun_and_a_restarted_one_serves_them()
            throws Exception {
        Services.url("IDEMKIT_REDIS_URL", "Jedis store fault");
        try (PrivateRedis server = PrivateRedis.start()) {
            List<AutoCloseable> clients = new ArrayList<>();
            try (IdempotencyStore store =
                    JavaStoreFaultChild.open("jedis", server.url(), clients, true)) {
                // Persistence is off: the restarted server is empty.
                killAndRestart(
                        store, server::kill, server::restart, false, "fault-" + UUID.randomUUID());
            } finally {
                closeAll(clients);
            }
        }
    }

    /** The JDBC store over PgJDBC's {@code DataSource}, and over a HikariCP pool of it. */
    @ParameterizedTest
    @ValueSource(strings = {"jdbc", "jdbc-pool"})
    @ExpectedWarnings("store_error")
    void a_paused_postgres_server_fails_jdbc_store_calls_unrun_and_serves_them_once_resumed(
            String kind) throws Exception {
        PrivatePostgres server = privatePostgres();
        List<Long> paused = new ArrayList<>();
        String tenant = "fault-" + UUID.randomUUID();
        List<AutoCloseable> clients = new ArrayList<>();
        try (IdempotencyStore store = JavaStoreFaultChild.open(kind, server.url(), clients, true)) {
            pauseAndResume(
                    store,
                    unchecked(
                            () -> {
                                paused.addAll(server.processes());
                                signal("-STOP", paused);
                            }),
                    unchecked(() -> signal("-CONT", paused)),
                    tenant);
            store.forget(tenant);
        } finally {
            closeAll(clients);
        }
    }

    /**
     * The deadline bounds the JDBC store on a paused PostgreSQL whatever the data source's own
     * timeouts: over PgJDBC's {@code DataSource} with its defaults ({@code socketTimeout} and
     * {@code loginTimeout} 0: wait forever), and over a HikariCP pool of it.
     */
    @ParameterizedTest
    @ValueSource(strings = {"jdbc", "jdbc-pool"})
    void a_paused_postgres_server_fails_a_jdbc_store_call_at_its_deadline_with_default_timeouts(
            String kind) throws Exception {
        PrivatePostgres server = privatePostgres();
        List<Long> paused = new ArrayList<>();
        String tenant = "deadline-" + UUID.randomUUID();
        org.postgresql.ds.PGSimpleDataSource defaults = new org.postgresql.ds.PGSimpleDataSource();
        defaults.setServerNames(new String[] {"127.0.0.1"});
        defaults.setPortNumbers(new int[] {server.port});
        defaults.setDatabaseName("postgres");
        defaults.setUser("postgres");
        javax.sql.DataSource dataSource = defaults;
        com.zaxxer.hikari.HikariDataSource pool = null;
        if (kind.equals("jdbc-pool")) {
            com.zaxxer.hikari.HikariConfig config = new com.zaxxer.hikari.HikariConfig();
            config.setDataSource(defaults);
            config.setMaximumPoolSize(4);
            pool = new com.zaxxer.hikari.HikariDataSource(config);
            dataSource = pool;
        }
        try (IdempotencyStore store =
                new PostgresIdempotencyStore(dataSource).createTableIfMissing()) {
            deadlineOnAPausedServer(
                    store,
                    unchecked(
                            () -> {
                                paused.addAll(server.processes());
                                signal("-STOP", paused);
                            }),
                    unchecked(() -> signal("-CONT", paused)),
                    tenant);
            store.forget(tenant);
        } finally {
            signal("-CONT", paused);
            if (pool != null) {
                pool.close();
            }
        }
    }

    /** The deadline bounds the Jedis store on a paused Redis over a client with a 30 s timeout. */
    @Test
    void a_paused_redis_server_fails_a_jedis_store_call_at_its_deadline_with_a_long_client_timeout()
            throws Exception {
        Services.url("IDEMKIT_REDIS_URL", "Jedis store fault");
        try (PrivateRedis server = PrivateRedis.start();
                redis.clients.jedis.RedisClient client =
                        redis.clients.jedis.RedisClient.builder()
                                .hostAndPort("127.0.0.1", server.port)
                                .clientConfig(
                                        redis.clients.jedis.DefaultJedisClientConfig.builder()
                                                .socketTimeoutMillis(30_000)
                                                .build())
                                .build();
                IdempotencyStore store =
                        new dev.idemkit.jedis.RedisIdempotencyStore(
                                client, "idemkit-jedis-deadline:")) {
            try {
                deadlineOnAPausedServer(
                        store,
                        unchecked(() -> server.signal("-STOP")),
                        unchecked(() -> server.signal("-CONT")),
                        "deadline-" + UUID.randomUUID());
            } finally {
                server.signal("-CONT");
            }
        }
    }

    /** The JDBC store over PgJDBC's {@code DataSource}, and over a HikariCP pool of it. */
    @ParameterizedTest
    @ValueSource(strings = {"jdbc", "jdbc-pool"})
    @ExpectedWarnings("store_error")
    void a_killed_postgres_server_fails_jdbc_store_calls_unrun_and_a_restarted_one_keeps_records(
            String kind) throws Exception {
        PrivatePostgres server = privatePostgres();
        String tenant = "fault-" + UUID.randomUUID();
        List<AutoCloseable> clients = new ArrayList<>();
        try (IdempotencyStore store = JavaStoreFaultChild.open(kind, server.url(), clients, true)) {
            killAndRestart(
                    store,
                    () -> {
                        // Immediate: the server's processes quit at once, without a shutdown
                        // checkpoint (crash recovery on the next start).
                        assertTrue(server.pgCtl("stop", "immediate"), "pg_ctl stop");
                        waitUntil("private PostgreSQL is gone", () -> !answers(server.port));
                    },
                    () -> assertTrue(server.pgCtl("start", "fast"), "pg_ctl start"),
                    true,
                    tenant);
            store.forget(tenant);
        } finally {
            closeAll(clients);
        }
    }

    static void closeAll(List<AutoCloseable> clients) throws Exception {
        for (AutoCloseable c : clients) {
            c.close();
        }
    }

    // ---- child JVMs -------------------------------------------------------------------------

    /**
     * A JVM running {@link JavaStoreFaultChild} with these arguments, on this test's class path;
     * its standard error goes to {@code log} (read by {@link #tail} when a check fails).
     */
    static Process child(Path log, String... args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (String property : System.getProperties().stringPropertyNames()) {
            if (property.startsWith("idemkit.")) {
                command.add("-D" + property + "=" + System.getProperty(property));
            }
        }
        command.add("-cp");
        command.add(
                System.getProperty(
                        "surefire.test.class.path", System.getProperty("java.class.path")));
        command.add(JavaStoreFaultChild.class.getName());
        command.addAll(List.of(args));
        return new ProcessBuilder(command).redirectError(log.toFile()).start();
    }

    /** The last lines of a child's log, for a failure's message. */
    static String tail(Path log) {
        try {
            List<String> lines = JavaStoreFaultChild.lines(log);
            return "; its log ends with:\n"
                    + String.join(
                            "\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        } catch (IOException e) {
            return "; its log cannot be read: " + e;
        }
    }

    /** Completes with the first line of {@code process}'s output that starts with {@code word}. */
    static CompletableFuture<String> lineStarting(Process process, String word) {
        CompletableFuture<String> line = new CompletableFuture<>();
        Thread reader =
                new Thread(
                        () -> {
                            try (BufferedReader r =
                                    new BufferedReader(
                                            new InputStreamReader(
                                                    process.getInputStream(),
                                                    StandardCharsets.UTF_8))) {
                                String l;
                                while ((l = r.readLine()) != null) {
                                    if (l.startsWith(word)) {
                                        line.complete(l);
                                    }
                                }
                                line.completeExceptionally(
                                        new IllegalStateException(
                                                "the child ended without " + word));
                            } catch (IOException e) {
                                line.completeExceptionally(e);
                            }
                        });
        reader.setDaemon(true);
        reader.start();
        return line;
    }

    // ---- 3. a holder SIGKILLed --------------------------------------------------------------

    /**
     * A child JVM claims a key through the store and is SIGKILLed in its body: the claim is in
     * progress (a fail-fast caller is refused), a waiting caller gets the indeterminate outcome
     * once the 4 s lease ends, and the body never runs again.
     */
    static void killAHolder(String kind, String url, IdempotencyStore store) throws Exception {
        String tenant = "holder-" + UUID.randomUUID();
        String order = "order-" + UUID.randomUUID();
        JavaStoreFaultChild.HoldFastTools fast = new JavaStoreFaultChild.HoldFastTools();
        JavaStoreFaultChild.HoldTools waiting = new JavaStoreFaultChild.HoldTools(false);
        try (ToolDispatcher failFast = dispatcher(fast, store, tenant);
                ToolDispatcher waiter = dispatcher(waiting, store, tenant)) {
            Path log = Files.createTempFile("idemkit-holder-", ".log");
            Process holder = child(log, "hold", kind, url, tenant, order);
            try {
                String claimed;
                try {
                    claimed = lineStarting(holder, "CLAIMED").get(120, TimeUnit.SECONDS);
                } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                    claimed = fail("the holder never claimed: " + e + tail(log));
                }
                assertEquals("CLAIMED " + order, claimed);
            } finally {
                holder.destroyForcibly(); // SIGKILL: no outcome, no release
                holder.waitFor();
                Files.delete(log);
            }
            Map<String, Object> input = Map.of("order", order);
            Throwable inProgress = failureOf(() -> failFast.call("fault_hold", input));
            assertInstanceOf(FailFastException.class, inProgress, String.valueOf(inProgress));

            Throwable late = failureOf(() -> waiter.call("fault_hold", input));
            assertInstanceOf(IndeterminateOutcomeException.class, late, String.valueOf(late));
            Throwable abandoned = failureOf(() -> failFast.call("fault_hold", input));
            assertInstanceOf(
                    IndeterminateOutcomeException.class, abandoned, String.valueOf(abandoned));
            assertEquals(0, fast.runs.get() + waiting.runs.get(), "the body never ran again");
        } finally {
            store.forget(tenant);
        }
    }

    @Test
    void a_holder_killed_mid_call_on_the_jedis_store_leaves_a_claim_that_becomes_indeterminate()
            throws Exception {
        String url = Services.url("IDEMKIT_REDIS_URL", "Jedis store fault");
        List<AutoCloseable> clients = new ArrayList<>();
        try (IdempotencyStore store = JavaStoreFaultChild.open("jedis", url, clients)) {
            killAHolder("jedis", url, store);
        } finally {
            closeAll(clients);
        }
    }

    @Test
    void a_holder_killed_mid_call_on_the_jdbc_store_leaves_a_claim_that_becomes_indeterminate()
            throws Exception {
        String url = Services.url("IDEMKIT_POSTGRES_URL", "JDBC store fault");
        try (IdempotencyStore store = JavaStoreFaultChild.open("jdbc", url, new ArrayList<>())) {
            killAHolder("jdbc", url, store);
        }
    }

    // ---- 4. storms --------------------------------------------------------------------------

    static final int WORKERS = 4;
    static final int THREADS = 8;
    static final int KEYS = 200;

    /**
     * {@link #WORKERS} processes of {@link #THREADS} threads call every one of {@link #KEYS} keys
     * through the store {@code kind} names. With {@code killOne}, the first worker is SIGKILLed
     * once it has run 10 bodies, and the tool's lease is 3 s. Checks that no key ran twice and that
     * every answer a caller got is the one run's result, or (only with a killed worker) the
     * indeterminate outcome; without a kill every key ran exactly once.
     */
    static void storm(String kind, String url, boolean killOne) throws Exception {
        String tenant = "storm-" + UUID.randomUUID();
        Path dir = Files.createTempDirectory("idemkit-storm-");
        String tool = killOne ? "fault_storm_short" : "fault_storm";
        List<Process> workers = new ArrayList<>();
        List<AutoCloseable> clients = new ArrayList<>();
        try (IdempotencyStore store = JavaStoreFaultChild.open(kind, url, clients)) {
            try {
                for (int w = 0; w < WORKERS; w++) {
                    workers.add(
                            child(
                                    dir.resolve("log-" + w),
                                    "storm",
                                    kind,
                                    url,
                                    tenant,
                                    tool,
                                    Integer.toString(KEYS),
                                    Integer.toString(THREADS),
                                    dir.resolve("runs-" + w).toString(),
                                    dir.resolve("answers-" + w).toString()));
                }
                // Every worker starts its threads once all are ready (JVMs start at their pace).
                List<CompletableFuture<String>> ready = new ArrayList<>();
                for (Process p : workers) {
                    ready.add(lineStarting(p, "READY"));
                }
                for (int w = 0; w < WORKERS; w++) {
                    try {
                        ready.get(w).get(120, TimeUnit.SECONDS);
                    } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                        fail(
                                "storm worker "
                                        + w
                                        + " is not ready: "
                                        + e
                                        + tail(dir.resolve("log-" + w)));
                    }
                }
                for (Process p : workers) {
                    p.getOutputStream().write("GO\n".getBytes(StandardCharsets.UTF_8));
                    p.getOutputStream().flush();
                }
                if (killOne) {
                    Path victimRuns = dir.resolve("runs-0");
                    waitUntil(
                            "the first worker runs 10 bodies",
                            () -> {
                                try {
                                    return JavaStoreFaultChild.lines(victimRuns).size() >= 10
                                            || !workers.get(0).isAlive();
                                } catch (IOException e) {
                                    throw new IllegalStateException(e);
                                }
                            });
                    assertTrue(workers.get(0).isAlive(), "the first worker ended before its kill");
                    workers.get(0).destroyForcibly().waitFor();
                }
                for (int w = killOne ? 1 : 0; w < WORKERS; w++) {
                    Process p = workers.get(w);
                    Path log = dir.resolve("log-" + w);
                    assertTrue(
                            p.waitFor(180, TimeUnit.SECONDS),
                            "storm worker " + w + " hung" + tail(log));
                    assertEquals(0, p.exitValue(), "storm worker " + w + " failed" + tail(log));
                }
                checkStorm(dir, killOne);
            } finally {
                for (Process p : workers) {
                    p.destroyForcibly().waitFor();
                }
                store.forget(tenant);
            }
        } finally {
            closeAll(clients);
            try (Stream<Path> files = Files.list(dir)) {
                for (Path f : (Iterable<Path>) files::iterator) {
                    Files.delete(f);
                }
            }
            Files.delete(dir);
        }
    }

    private static void checkStorm(Path dir, boolean killOne) throws IOException {
        // key -> the values of its runs, over every worker (the killed one's included)
        Map<String, List<String>> runs = new HashMap<>();
        for (int w = 0; w < WORKERS; w++) {
            for (String line : JavaStoreFaultChild.lines(dir.resolve("runs-" + w))) {
                String[] parts = line.split(" ", 2);
                runs.computeIfAbsent(parts[0], k -> new ArrayList<>()).add(parts[1]);
            }
        }
        for (Map.Entry<String, List<String>> e : runs.entrySet()) {
            assertEquals(1, e.getValue().size(), e.getKey() + " ran " + e.getValue());
        }
        if (!killOne) {
            assertEquals(KEYS, runs.size(), "every key ran");
        }
        int indeterminate = 0;
        for (int w = killOne ? 1 : 0; w < WORKERS; w++) {
            List<String> answers = JavaStoreFaultChild.lines(dir.resolve("answers-" + w));
            assertEquals(KEYS, answers.size(), "worker " + w + " answered every key");
            for (String line : answers) {
                String[] parts = line.split(" ");
                String key = parts[0];
                for (int i = 1; i < parts.length; i++) {
                    String answer = parts[i];
                    if (killOne && answer.equals("!IndeterminateOutcomeException")) {
                        indeterminate++;
                        continue;
                    }
                    List<String> ran = runs.get(key);
                    assertNotNull(ran, key + " never ran, yet worker " + w + " got " + answer);
                    assertEquals("=" + ran.get(0), answer, key + " at worker " + w);
                }
            }
        }
        if (killOne) {
            assertTrue(
                    indeterminate > 0,
                    "the killed worker held claims when it died: some callers got the"
                            + " indeterminate outcome");
        } else {
            assertFalse(runs.isEmpty());
        }
    }

    @Test
    void a_storm_of_processes_on_the_jedis_store_runs_every_key_once() throws Exception {
        storm("jedis", Services.url("IDEMKIT_REDIS_URL", "Jedis store storm"), false);
    }

    @Test
    void a_storm_on_the_jedis_store_that_loses_a_worker_runs_no_key_twice() throws Exception {
        storm("jedis", Services.url("IDEMKIT_REDIS_URL", "Jedis store storm"), true);
    }

    @Test
    void a_storm_of_processes_on_the_jdbc_store_runs_every_key_once() throws Exception {
        storm("jdbc-pool", Services.url("IDEMKIT_POSTGRES_URL", "JDBC store storm"), false);
    }

    @Test
    void a_storm_on_the_jdbc_store_that_loses_a_worker_runs_no_key_twice() throws Exception {
        storm("jdbc-pool", Services.url("IDEMKIT_POSTGRES_URL", "JDBC store storm"), true);
    }
}
