package dev.idemkit;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.CyclicBarrier;
import org.postgresql.ds.PGSimpleDataSource;
import redis.clients.jedis.RedisClient;

/**
 * The child JVM of {@link JavaStoreFaultTest}: a process that calls tools through a store written
 * in Java (Jedis or JDBC) and is SIGKILLed, or one worker of a storm of processes.
 *
 * <ul>
 *   <li>{@code hold <store> <tenant> <order>}: calls {@code fault_hold} for the order and, holding
 *       the claim, prints {@code CLAIMED} and sleeps until it is killed.
 *   <li>{@code storm <store> <tenant> <tool> <keys> <threads> <runs-file> <answers-file>}: {@code
 *       threads} threads each call {@code tool} once for every one of {@code keys} keys, each in
 *       its own shuffled order; once the parent answers {@code READY} with {@code GO}; every body
 *       run appends {@code <key> <value>} to {@code runs-file} (one write each, so a SIGKILL loses
 *       none that ran); at the end {@code answers-file} gets {@code <key> <answer>...} per key, an
 *       answer being {@code =value} or {@code !ExceptionClass}.
 * </ul>
 *
 * <p>A store is named {@code jedis <redis-url>} or {@code jdbc <postgres-url>}, or {@code jdbc-pool
 * <postgres-url>} for the JDBC store over a small HikariCP pool.
 */
public final class JavaStoreFaultChild {
    private JavaStoreFaultChild() {}

    /** The tool the holder claims and never finishes (a 4 s lease). */
    public static class HoldTools {
        /** Counts runs (the parent's); the child's body never returns. */
        final java.util.concurrent.atomic.AtomicInteger runs =
                new java.util.concurrent.atomic.AtomicInteger();

        private final boolean hang;

        HoldTools(boolean hang) {
            this.hang = hang;
        }

        @Tool(name = "fault_hold")
        @Idempotent(leaseSeconds = 4)
        public String hold(String order) throws InterruptedException {
            runs.incrementAndGet();
            if (hang) {
                System.out.println("CLAIMED " + order);
                System.out.flush();
                Thread.sleep(600_000);
            }
            return "held:" + order;
        }
    }

    /** The same tool, failing fast on a call in progress. */
    public static class HoldFastTools {
        final java.util.concurrent.atomic.AtomicInteger runs =
                new java.util.concurrent.atomic.AtomicInteger();

        @Tool(name = "fault_hold")
        @Idempotent(leaseSeconds = 4, onCacheHit = RetryBehavior.FAIL_FAST)
        public String hold(String order) {
            runs.incrementAndGet();
            return "held:" + order;
        }
    }

    /** The storm's tools: a long lease, and a short one for the storm that loses a worker. */
    public static class StormTools {
        private final PrintStream runs;

        StormTools(PrintStream runs) {
            this.runs = runs;
        }

        private String run(String item) throws InterruptedException {
            String value = ProcessHandle.current().pid() + "-" + Thread.currentThread().getName();
            // One write per run (the stream is unbuffered): in the file even if we are killed.
            runs.print(item + " " + value + "\n");
            Thread.sleep(10);
            return value;
        }

        @Tool(name = "fault_storm")
        @Idempotent(leaseSeconds = 60)
        public String storm(String item) throws InterruptedException {
            return run(item);
        }

        @Tool(name = "fault_storm_short")
        @Idempotent(leaseSeconds = 3)
        public String stormShort(String item) throws InterruptedException {
            return run(item);
        }
    }

    /** The key's input of the storm: {@code item}. */
    static String item(int i) {
        return "item-" + i;
    }

    /** {@link #open(String, String, List, boolean)} with the README's client timeouts. */
    static IdempotencyStore open(String kind, String url, List<AutoCloseable> onClose) {
        return open(kind, url, onClose, false);
    }

    /**
     * Opens the store {@code kind} names ({@code jedis}, {@code jdbc}, {@code jdbc-pool}) on {@code
     * url}, with client timeouts so that a server that stops answering fails a call instead of
     * hanging it: the README's ({@link com.example.stores.ClientTimeouts}), or with {@code short} 2
     * s for every PostgreSQL one (the private servers the tests pause, where the tests wait them
     * out). {@code onClose} gets what the caller closes after the store (the client, the pool).
     */
    static IdempotencyStore open(
            String kind, String url, List<AutoCloseable> onClose, boolean shortTimeouts) {
        switch (kind) {
            case "jedis":
                {
                    URI uri = URI.create(url);
                    RedisClient client =
                            com.example.stores.ClientTimeouts.redisClient(
                                    uri.getHost(), uri.getPort());
                    onClose.add(client);
                    return new dev.idemkit.jedis.RedisIdempotencyStore(
                            client, "idemkit-jedis-fault:");
                }
            case "jdbc":
                return new PostgresIdempotencyStore(pgDataSource(url, shortTimeouts))
                        .createTableIfMissing();
            case "jdbc-pool":
                {
                    HikariConfig config = new HikariConfig();
                    config.setDataSource(pgDataSource(url, shortTimeouts));
                    config.setMaximumPoolSize(4);
                    // How long a call waits for a connection (HikariCP's default is 30 s).
                    config.setConnectionTimeout(shortTimeouts ? 2_000 : 10_000);
                    config.setPoolName("idemkit-test");
                    HikariDataSource pool = new HikariDataSource(config);
                    onClose.add(pool);
                    return new PostgresIdempotencyStore(pool).createTableIfMissing();
                }
            default:
                throw new IllegalArgumentException("JavaStoreFaultChild: unknown store " + kind);
        }
    }

    /**
     * PgJDBC's {@code DataSource} for {@code postgres://user[:password]@host:port/db}, with the
     * timeouts an application sets so that a paused server fails calls (the README's, {@link
     * com.example.stores.ClientTimeouts}), or with {@code shortTimeouts} 2 s each.
     */
    static PGSimpleDataSource pgDataSource(String url, boolean shortTimeouts) {
        URI uri = URI.create(url);
        String userInfo = uri.getUserInfo() == null ? "" : uri.getUserInfo();
        int colon = userInfo.indexOf(':');
        PGSimpleDataSource ds =
                com.example.stores.ClientTimeouts.dataSource(
                        uri.getHost(),
                        uri.getPort() < 0 ? 5432 : uri.getPort(),
                        uri.getPath().substring(1),
                        colon < 0 ? userInfo : userInfo.substring(0, colon));
        if (colon >= 0) {
            ds.setPassword(userInfo.substring(colon + 1));
        }
        if (shortTimeouts) {
            ds.setConnectTimeout(2);
            ds.setLoginTimeout(2);
            ds.setSocketTimeout(2);
        }
        return ds;
    }

    public static void main(String[] args) throws Exception {
        List<AutoCloseable> clients = new ArrayList<>();
        IdempotencyStore store = open(args[1], args[2], clients);
        String tenant = args[3];
        switch (args[0]) {
            case "hold":
                try (ToolDispatcher d =
                        ToolDispatcher.builder()
                                .tools(new HoldTools(true))
                                .store(store)
                                .tenant(tenant)
                                .build()) {
                    d.call("fault_hold", Map.of("order", args[4]));
                }
                throw new IllegalStateException("the holder's body returned");
            case "storm":
                storm(
                        store,
                        tenant,
                        args[4],
                        Integer.parseInt(args[5]),
                        Integer.parseInt(args[6]),
                        Path.of(args[7]),
                        Path.of(args[8]));
                break;
            default:
                throw new IllegalArgumentException("JavaStoreFaultChild: unknown mode " + args[0]);
        }
        store.close();
        for (AutoCloseable c : clients) {
            c.close();
        }
        System.exit(0);
    }

    private static void storm(
            IdempotencyStore store,
            String tenant,
            String tool,
            int keys,
            int threads,
            Path runsFile,
            Path answersFile)
            throws Exception {
        Map<String, Set<String>> answers = new ConcurrentHashMap<>();
        try (PrintStream runs = new PrintStream(new FileOutputStream(runsFile.toFile(), true));
                ToolDispatcher d =
                        ToolDispatcher.builder()
                                .tools(new StormTools(runs))
                                .store(store)
                                .tenant(tenant)
                                .build()) {
            CyclicBarrier start = new CyclicBarrier(threads + 1);
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                Thread worker =
                        new Thread(
                                () -> {
                                    List<Integer> order = new ArrayList<>();
                                    for (int i = 0; i < keys; i++) {
                                        order.add(i);
                                    }
                                    Collections.shuffle(order);
                                    try {
                                        start.await();
                                    } catch (Exception e) {
                                        throw new IllegalStateException(e);
                                    }
                                    for (int i : order) {
                                        String answer;
                                        try {
                                            answer = "=" + d.call(tool, Map.of("item", item(i)));
                                        } catch (RuntimeException e) {
                                            answer = "!" + e.getClass().getSimpleName();
                                        }
                                        answers.computeIfAbsent(
                                                        item(i), k -> new ConcurrentSkipListSet<>())
                                                .add(answer);
                                    }
                                },
                                "w" + t);
                workers.add(worker);
                worker.start();
            }
            // Every worker process starts at once: the parent answers READY with GO.
            System.out.println("READY");
            System.out.flush();
            String go =
                    new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
            if (!"GO".equals(go)) {
                throw new IllegalStateException("expected GO, read " + go);
            }
            start.await();
            for (Thread w : workers) {
                w.join();
            }
        }
        StringBuilder out = new StringBuilder();
        for (Map.Entry<String, Set<String>> e : new TreeMap<>(answers).entrySet()) {
            out.append(e.getKey());
            for (String a : e.getValue()) {
                out.append(' ').append(a);
            }
            out.append('\n');
        }
        Files.writeString(answersFile, out.toString(), StandardCharsets.UTF_8);
    }

    /** The lines of {@code file} (none if it does not exist). */
    static List<String> lines(Path file) throws IOException {
        return Files.exists(file) ? Files.readAllLines(file) : List.of();
    }
}
