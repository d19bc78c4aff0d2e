package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A JVM and a Rust process ({@code examples/cross_call.rs}) calling the same tool with the same
 * input against one Redis, one Redis Cluster and one PostgreSQL: the body runs once in total, and
 * each side gets the other's outcome, one after the other in both orders and in a race. The Rust
 * process always uses its native store (by URL, default prefix and table); the JVM uses the native
 * store too, or a store written in Java over the application's client on the same server (Jedis,
 * JDBC). The example is built with cargo (as a binary of {@code java/native}) unless {@code
 * IDEMKIT_CROSS_CALL_BIN} names it.
 */
class CrossLanguageTest {
    private static Path binary;

    public static class CrossTools {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "cross_book")
        @Idempotent
        public String crossBook(String flight) {
            runs.incrementAndGet();
            return "java:" + flight;
        }
    }

    @BeforeAll
    static void buildRustSide() throws Exception {
        String given = System.getenv("IDEMKIT_CROSS_CALL_BIN");
        if (given != null && !given.isEmpty()) {
            binary = Path.of(given);
            return;
        }
        if (System.getenv("IDEMKIT_REDIS_URL") == null
                && System.getenv("IDEMKIT_POSTGRES_URL") == null) {
            return; // every test here skips; don't build
        }
        // examples/cross_call.rs, built as a binary of java/native so it reuses the compiled core.
        Path nativeDir =
                Path.of(System.getProperty("idemkit.repo.root", "../.."))
                        .toAbsolutePath()
                        .normalize()
                        .resolve("java/native");
        Process build =
                new ProcessBuilder(
                                "cargo",
                                "build",
                                "--quiet",
                                "--release",
                                "--bin",
                                "cross_call",
                                "--features",
                                "redis,postgres,cross-call")
                        .directory(nativeDir.toFile())
                        .inheritIO()
                        .start();
        assertTrue(
                build.waitFor(20, TimeUnit.MINUTES),
                "cargo build of examples/cross_call timed out");
        assertEquals(0, build.exitValue(), "cargo build of examples/cross_call failed");
        binary = nativeDir.resolve("target/release/cross_call");
    }

    /** An EFFECTFUL tool whose body always fails after it may have acted. */
    public static class CrossCharge {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "cross_charge")
        @Idempotent(effect = Effect.EFFECTFUL)
        public String crossCharge(String flight) {
            runs.incrementAndGet();
            throw new IllegalStateException("no answer from the payment provider");
        }
    }

    /** Runs the Rust side once; answers {"ran":0|1,"result":...}. */
    static JsonNode rust(String url, String tenant, String inputJson) throws Exception {
        return rust(url, "cross_book", tenant, inputJson);
    }

    /**
     * Runs the Rust side once with {@code options} ({@code --effectful}, {@code --fail}); answers
     * {"ran":0|1,"result":...} or {"ran":0|1,"error":"<kind>"}.
     */
    static JsonNode rust(
            String url, String tool, String tenant, String inputJson, String... options)
            throws Exception {
        List<String> command =
                new java.util.ArrayList<>(List.of(binary.toString(), url, tool, tenant, inputJson));
        command.addAll(List.of(options));
        Process p =
                new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), "cross_call failed: " + out);
        return new ObjectMapper().readTree(out);
    }

    void bothWays(String url, IdempotencyStore store) throws Exception {
        try (store) {
            CrossTools tools = new CrossTools();
            String tenant = "cross-" + UUID.randomUUID();
            ToolDispatcher java =
                    ToolDispatcher.builder().tools(tools).store(store).tenant(tenant).build();

            // Rust first: Java gets Rust's result without running.
            String rustFlight = "R-" + UUID.randomUUID();
            String rustInput = "{\"flight\":\"" + rustFlight + "\"}";
            JsonNode first = rust(url, tenant, rustInput);
            assertEquals(1, first.get("ran").asInt());
            assertEquals(
                    "rust:" + rustInput, java.call("cross_book", Map.of("flight", rustFlight)));
            assertEquals(0, tools.runs.get());

            // Java first: Rust gets Java's result without running.
            String javaFlight = "J-" + UUID.randomUUID();
            assertEquals(
                    "java:" + javaFlight, java.call("cross_book", Map.of("flight", javaFlight)));
            JsonNode second = rust(url, tenant, "{\"flight\":\"" + javaFlight + "\"}");
            assertEquals(0, second.get("ran").asInt());
            assertEquals("java:" + javaFlight, second.get("result").asText());
            assertEquals(1, tools.runs.get());
            store.forget(tenant);
        }
    }

    /**
     * SPEC v1.1 rule 7 across languages: a failure held by one side is indeterminate to the other,
     * and neither runs the body again.
     */
    void heldFailuresBothWays(String url, IdempotencyStore store) throws Exception {
        try (store) {
            CrossCharge charge = new CrossCharge();
            String tenant = "cross-held-" + UUID.randomUUID();
            ToolDispatcher java =
                    ToolDispatcher.builder().tools(charge).store(store).tenant(tenant).build();

            // Java holds its failure; Rust's call of the same charge is indeterminate, not run.
            String javaFlight = "J-" + UUID.randomUUID();
            IndeterminateOutcomeException held =
                    assertThrows(
                            IndeterminateOutcomeException.class,
                            () -> java.call("cross_charge", Map.of("flight", javaFlight)));
            assertInstanceOf(IllegalStateException.class, held.getCause());
            JsonNode rust =
                    rust(
                            url,
                            "cross_charge",
                            tenant,
                            "{\"flight\":\"" + javaFlight + "\"}",
                            "--effectful");
            assertEquals(0, rust.get("ran").asInt(), rust.toString());
            assertEquals("indeterminate", rust.get("error").asText(), rust.toString());

            // Rust holds its failure; Java's call is indeterminate and does not run.
            String rustFlight = "R-" + UUID.randomUUID();
            JsonNode failed =
                    rust(
                            url,
                            "cross_charge",
                            tenant,
                            "{\"flight\":\"" + rustFlight + "\"}",
                            "--effectful",
                            "--fail");
            assertEquals(1, failed.get("ran").asInt(), failed.toString());
            assertEquals("indeterminate", failed.get("error").asText(), failed.toString());
            assertThrows(
                    IndeterminateOutcomeException.class,
                    () -> java.call("cross_charge", Map.of("flight", rustFlight)));
            assertEquals(1, charge.runs.get(), "Java ran only its own failing call");
            store.forget(tenant);
        }
    }

    /** An EXPLICIT tool keyed by the order id; the payload is the whole input. */
    public static class CrossOrders implements IdempotencyKeySupplier {
        final AtomicInteger runs = new AtomicInteger();

        @Override
        public String idempotencyKeyFor(Map<String, Object> input) {
            return "order-" + input.get("order");
        }

        @Tool(name = "cross_order")
        @Idempotent(strategy = KeyStrategy.EXPLICIT, rejectPayloadMismatch = true)
        public String crossOrder(String order, int amount) {
            runs.incrementAndGet();
            return "java:" + order;
        }
    }

    /**
     * SPEC v1.1 rule 9 across languages: a record Java made under an explicit key answers a Rust
     * call with the same payload, and refuses one with another payload without running it.
     */
    void payloadsAcrossLanguages(String url, IdempotencyStore store) throws Exception {
        try (store) {
            CrossOrders orders = new CrossOrders();
            String tenant = "cross-payload-" + UUID.randomUUID();
            ToolDispatcher java =
                    ToolDispatcher.builder().tools(orders).store(store).tenant(tenant).build();
            String order = "O-" + UUID.randomUUID();
            assertEquals(
                    "java:" + order, java.call("cross_order", Map.of("order", order, "amount", 5)));
            String key = "--explicit=order-" + order;
            JsonNode same =
                    rust(
                            url,
                            "cross_order",
                            tenant,
                            "{\"amount\":5,\"order\":\"" + order + "\"}",
                            key);
            assertEquals(0, same.get("ran").asInt(), same.toString());
            assertEquals("java:" + order, same.get("result").asText(), same.toString());
            String edited = "{\"order\":\"" + order + "\",\"amount\":6}";
            // The key is the application's: the other fields may differ unless the policy asks.
            JsonNode lenient = rust(url, "cross_order", tenant, edited, key);
            assertEquals(0, lenient.get("ran").asInt(), lenient.toString());
            assertEquals("java:" + order, lenient.get("result").asText(), lenient.toString());
            JsonNode other =
                    rust(url, "cross_order", tenant, edited, key, "--reject-payload-mismatch");
            assertEquals(0, other.get("ran").asInt(), other.toString());
            assertEquals("payload_mismatch", other.get("error").asText(), other.toString());
            assertEquals(1, orders.runs.get());
            store.forget(tenant);
        }
    }

    /**
     * A race on fresh keys: for each key two Rust processes and two Java threads call at once; the
     * body runs once in total and all four get its result.
     */
    void race(String url, IdempotencyStore store) throws Exception {
        try (store) {
            CrossTools tools = new CrossTools();
            String tenant = "cross-race-" + UUID.randomUUID();
            ToolDispatcher java =
                    ToolDispatcher.builder().tools(tools).store(store).tenant(tenant).build();
            ExecutorService threads = Executors.newFixedThreadPool(4);
            try {
                int rustRuns = 0;
                for (int round = 0; round < 6; round++) {
                    String flight = "X-" + UUID.randomUUID();
                    String input = "{\"flight\":\"" + flight + "\"}";
                    CountDownLatch start = new CountDownLatch(1);
                    List<Future<Object>> answers = new ArrayList<>();
                    for (int i = 0; i < 2; i++) {
                        answers.add(
                                threads.submit(
                                        () -> {
                                            start.await();
                                            return rust(url, tenant, input);
                                        }));
                        answers.add(
                                threads.submit(
                                        () -> {
                                            start.await();
                                            return java.call(
                                                    "cross_book", Map.of("flight", flight));
                                        }));
                    }
                    start.countDown();
                    Set<String> results = new HashSet<>();
                    for (Future<Object> answer : answers) {
                        Object got = answer.get(120, TimeUnit.SECONDS);
                        if (got instanceof JsonNode) {
                            JsonNode node = (JsonNode) got;
                            rustRuns += node.get("ran").asInt();
                            results.add(node.get("result").asText());
                        } else {
                            results.add((String) got);
                        }
                    }
                    assertEquals(1, results.size(), "every caller got one result: " + results);
                    String result = results.iterator().next();
                    assertTrue(
                            result.equals("java:" + flight) || result.equals("rust:" + input),
                            result);
                    assertEquals(
                            round + 1,
                            rustRuns + tools.runs.get(),
                            "the body ran once per key, in either language");
                }
            } finally {
                threads.shutdownNow();
            }
            store.forget(tenant);
        }
    }

    /**
     * The JVM on the Jedis store over the application's {@code RedisClient}, with the prefix the
     * Rust process uses (its store's default, {@code idemkit:}).
     */
    static IdempotencyStore jedisStore() {
        return new dev.idemkit.jedis.RedisIdempotencyStore(
                JavaClients.redisClient("cross-language Jedis"), "idemkit:");
    }

    /**
     * The JVM on the JDBC store over a {@code DataSource} of the same database, in the table the
     * Rust process uses (its store's default, {@code idemkit_records}).
     */
    static IdempotencyStore jdbcStore() {
        return new PostgresIdempotencyStore(
                        JavaClients.dataSource("cross-language JDBC"), "idemkit_records")
                .createTableIfMissing();
    }

    private static String redisUrl() {
        return Services.url("IDEMKIT_REDIS_URL", "cross-language Redis");
    }

    private static String clusterUrl() {
        return Services.url("IDEMKIT_REDIS_CLUSTER_URL", "cross-language Redis Cluster");
    }

    private static String postgresUrl() {
        return Services.url("IDEMKIT_POSTGRES_URL", "cross-language PostgreSQL");
    }

    @Test
    void java_on_jedis_and_rust_share_one_redis() throws Exception {
        bothWays(redisUrl(), jedisStore());
    }

    @Test
    void java_on_jdbc_and_rust_share_one_postgresql() throws Exception {
        bothWays(postgresUrl(), jdbcStore());
    }

    @Test
    void java_on_jedis_and_rust_race_on_one_redis() throws Exception {
        race(redisUrl(), jedisStore());
    }

    @Test
    void java_on_jdbc_and_rust_race_on_one_postgresql() throws Exception {
        race(postgresUrl(), jdbcStore());
    }

    @Test
    void java_and_rust_race_on_one_redis() throws Exception {
        String url = redisUrl();
        race(url, new RedisIdempotencyStore(url));
    }

    @Test
    void java_and_rust_race_on_one_postgresql() throws Exception {
        String url = postgresUrl();
        race(url, new PostgresIdempotencyStore(url).createTableIfMissing());
    }

    @Test
    void held_failures_are_indeterminate_across_languages_on_jedis_and_jdbc() throws Exception {
        heldFailuresBothWays(redisUrl(), jedisStore());
        heldFailuresBothWays(postgresUrl(), jdbcStore());
    }

    @Test
    void explicit_payloads_are_checked_across_languages_on_jedis_and_jdbc() throws Exception {
        payloadsAcrossLanguages(redisUrl(), jedisStore());
        payloadsAcrossLanguages(postgresUrl(), jdbcStore());
    }

    @Test
    void explicit_payloads_are_checked_across_languages_on_redis() throws Exception {
        String url = redisUrl();
        payloadsAcrossLanguages(url, new RedisIdempotencyStore(url));
    }

    @Test
    void explicit_payloads_are_checked_across_languages_on_postgresql() throws Exception {
        String url = postgresUrl();
        payloadsAcrossLanguages(url, new PostgresIdempotencyStore(url).createTableIfMissing());
    }

    @Test
    void held_failures_are_indeterminate_across_languages_on_redis() throws Exception {
        String url = redisUrl();
        heldFailuresBothWays(url, new RedisIdempotencyStore(url));
    }

    @Test
    void held_failures_are_indeterminate_across_languages_on_postgresql() throws Exception {
        String url = postgresUrl();
        heldFailuresBothWays(url, new PostgresIdempotencyStore(url).createTableIfMissing());
    }

    @Test
    void java_and_rust_share_one_redis() throws Exception {
        String url = redisUrl();
        bothWays(url, new RedisIdempotencyStore(url));
    }

    @Test
    void java_and_rust_share_one_redis_cluster() throws Exception {
        String url = clusterUrl();
        bothWays(url, new RedisIdempotencyStore(url));
    }

    @Test
    void java_and_rust_race_on_one_redis_cluster() throws Exception {
        String url = clusterUrl();
        race(url, new RedisIdempotencyStore(url));
    }

    @Test
    void java_on_a_jedis_cluster_client_and_rust_share_and_race_on_one_redis_cluster()
            throws Exception {
        String url = clusterUrl();
        try (redis.clients.jedis.RedisClusterClient client =
                redis.clients.jedis.RedisClusterClient.create(JavaClients.clusterNodes(url))) {
            // Each check closes its store; the application's client stays open for the next.
            bothWays(url, new dev.idemkit.jedis.RedisIdempotencyStore(client, "idemkit:"));
            race(url, new dev.idemkit.jedis.RedisIdempotencyStore(client, "idemkit:"));
        }
    }

    @Test
    void java_and_rust_share_one_postgresql() throws Exception {
        String url = postgresUrl();
        bothWays(url, new PostgresIdempotencyStore(url).createTableIfMissing());
    }
}
