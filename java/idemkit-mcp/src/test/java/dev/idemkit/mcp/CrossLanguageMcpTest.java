package dev.idemkit.mcp;

import static dev.idemkit.mcp.McpTestSupport.call;
import static dev.idemkit.mcp.McpTestSupport.replayed;
import static dev.idemkit.mcp.McpTestSupport.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.RedisIdempotencyStore;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.ServerParameters;
import io.modelcontextprotocol.client.transport.StdioClientTransport;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Java MCP server ({@link RoomTools} over streamable HTTP) and the Rust MCP server ({@code
 * examples/mcp_booking.rs} over stdio, a child process), each called through the Java SDK's client,
 * on one Redis: a call made to one and repeated to the other runs the booking once, and the second
 * gets the first one's result, whichever side ran it. Effects are counted where they happen: the
 * Java tool's counter, the lines the Rust example appends to a file. The example is built with
 * cargo (features {@code mcp,redis}) unless {@code IDEMKIT_MCP_BOOKING_BIN} names it.
 */
class CrossLanguageMcpTest {
    private static Path binary;

    @TempDir Path dir;

    private RoomTools tools;
    private RedisIdempotencyStore store;
    private IdempotentMcpTools served;
    private McpTestSupport.HttpServer javaServer;
    private McpSyncClient java;
    private McpSyncClient rust;
    private Path rustRuns;

    @BeforeAll
    static void buildRustSide() throws Exception {
        String given = System.getenv("IDEMKIT_MCP_BOOKING_BIN");
        if (given != null && !given.isEmpty()) {
            binary = Path.of(given);
            return;
        }
        if (System.getenv("IDEMKIT_REDIS_URL") == null) {
            return; // every test here skips (or fails) on the missing Redis; don't build
        }
        Path root =
                Path.of(System.getProperty("idemkit.repo.root", "../.."))
                        .toAbsolutePath()
                        .normalize();
        String features = System.getenv("IDEMKIT_MCP_BOOKING_FEATURES");
        if (features == null || features.isEmpty()) {
            features = "mcp,redis";
        }
        Process build =
                new ProcessBuilder(
                                "cargo",
                                "build",
                                "--quiet",
                                "--features",
                                features,
                                "--example",
                                "mcp_booking")
                        .directory(root.toFile())
                        .inheritIO()
                        .start();
        assertTrue(
                build.waitFor(30, TimeUnit.MINUTES) && build.exitValue() == 0,
                "cargo build --features "
                        + features
                        + " --example mcp_booking failed (run it in "
                        + root
                        + " to see why)");
        String target = System.getenv("CARGO_TARGET_DIR");
        binary =
                (target != null && !target.isEmpty() ? Path.of(target) : root.resolve("target"))
                        .resolve("debug/examples/mcp_booking");
    }

    @BeforeEach
    void start() throws Exception {
        String redis = Services.url("IDEMKIT_REDIS_URL", "Java and Rust MCP servers on one Redis");
        assertTrue(Files.isExecutable(binary), binary + " was not built");
        tools = new RoomTools();
        store = new RedisIdempotencyStore(redis);
        served =
                IdempotentMcpTools.builder()
                        .tools(tools)
                        .store(store)
                        .scope(McpScopeResolver.fixed("acme", null))
                        .build();
        javaServer = new McpTestSupport.HttpServer(served);
        java = javaServer.client(null);
        rustRuns = dir.resolve("rust-runs.txt");
        rust = rust(redis, 0);
    }

    private McpSyncClient rust(String redis, long delayMs) {
        ServerParameters params =
                ServerParameters.builder(binary.toString())
                        .args(redis)
                        .env(
                                Map.of(
                                        "MCP_BOOKING_LOG", rustRuns.toString(),
                                        "MCP_BOOKING_TENANT", "acme",
                                        "MCP_BOOKING_DELAY_MS", Long.toString(delayMs)))
                        .build();
        McpSyncClient client =
                McpClient.sync(new StdioClientTransport(params, McpTestSupport.JSON))
                        .requestTimeout(Duration.ofSeconds(60))
                        .initializationTimeout(Duration.ofSeconds(60))
                        .build();
        client.initialize();
        return client;
    }

    @AfterEach
    void stop() throws Exception {
        if (rust != null) {
            rust.close();
        }
        if (java != null) {
            java.close();
        }
        if (javaServer != null) {
            javaServer.close();
        }
        if (served != null) {
            served.close();
        }
        if (store != null) {
            store.close();
        }
    }

    private long rustRuns() throws Exception {
        return Files.exists(rustRuns) ? Files.readAllLines(rustRuns).size() : 0;
    }

    private static Map<String, Object> room() {
        return Map.of("guest", "ada-" + UUID.randomUUID(), "night", "2026-12-04");
    }

    private static void ok(CallToolResult r) {
        assertFalse(Boolean.TRUE.equals(r.isError()), text(r));
    }

    @Test
    void bothListTheToolWithTheSameAnnotations() {
        McpSchema.ToolAnnotations j = annotations(java);
        McpSchema.ToolAnnotations r = annotations(rust);
        assertEquals(true, j.idempotentHint());
        assertEquals(j.idempotentHint(), r.idempotentHint());
        assertEquals(j.readOnlyHint(), r.readOnlyHint());
        assertEquals(j.destructiveHint(), r.destructiveHint());
        assertEquals(j.openWorldHint(), r.openWorldHint());
    }

    private static McpSchema.ToolAnnotations annotations(McpSyncClient client) {
        return client.listTools().tools().stream()
                .filter(t -> t.name().equals("book_room"))
                .findFirst()
                .orElseThrow()
                .annotations();
    }

    @Test
    void aCallToJavaRepeatedToRustRunsOnceAndRustReplaysJavasResult() throws Exception {
        Map<String, Object> room = room();
        CallToolResult first = java.callTool(call("book_room", room, null));
        ok(first);
        assertFalse(replayed(first));
        CallToolResult again = rust.callTool(call("book_room", room, null));
        ok(again);
        assertTrue(replayed(again), "the Rust server answered from Java's record: " + again);
        assertEquals(text(first), text(again));
        assertEquals(
                first.meta().get("idempotencyKey"),
                again.meta().get("idempotencyKey"),
                "both derive the same key");
        assertEquals(1, tools.runs.get());
        assertEquals(0, rustRuns());
    }

    @Test
    void aCallToRustRepeatedToJavaRunsOnceAndJavaReplaysRustsResult() throws Exception {
        Map<String, Object> room = room();
        CallToolResult first = rust.callTool(call("book_room", room, null));
        ok(first);
        assertFalse(replayed(first));
        CallToolResult again = java.callTool(call("book_room", room, null));
        ok(again);
        assertTrue(replayed(again), "the Java server answered from Rust's record: " + again);
        assertEquals(text(first), text(again));
        assertEquals(first.content(), again.content(), "the recorded CallToolResult, as it was");
        assertEquals(first.meta().get("idempotencyKey"), again.meta().get("idempotencyKey"));
        assertEquals(0, tools.runs.get());
        assertEquals(1, rustRuns());
    }

    @Test
    void aClientKeyIsOneKeyOnBothAndItsReuseWithOtherArgumentsIsRefusedByBoth() throws Exception {
        String key = "order-" + UUID.randomUUID();
        Map<String, Object> room = room();
        Map<String, Object> other = Map.of("guest", room.get("guest"), "night", "2026-12-05");
        CallToolResult first = rust.callTool(call("book_room", room, key));
        ok(first);
        assertEquals(key, first.meta().get("idempotencyKey"));
        CallToolResult again = java.callTool(call("book_room", room, key));
        ok(again);
        assertTrue(replayed(again), again.toString());
        assertEquals(text(first), text(again));
        for (McpSyncClient side : List.of(java, rust)) {
            CallToolResult refused = side.callTool(call("book_room", other, key));
            assertEquals(true, refused.isError(), text(refused));
            assertTrue(text(refused).contains(key), text(refused));
        }
        assertEquals(0, tools.runs.get());
        assertEquals(1, rustRuns(), "one booking; the refused calls ran nothing");
    }

    @Test
    void duplicatesSentToBothAtOnceRunOnce() throws Exception {
        rust.close();
        rust = rust(Services.url("IDEMKIT_REDIS_URL", "cross"), 800);
        Map<String, Object> room = room();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<CallToolResult>> results = new ArrayList<>();
        for (McpSyncClient side : List.of(rust, java)) {
            results.add(
                    pool.submit(
                            () -> {
                                go.await();
                                return side.callTool(call("book_room", room, null));
                            }));
        }
        go.countDown();
        CallToolResult a = results.get(0).get(90, TimeUnit.SECONDS);
        CallToolResult b = results.get(1).get(90, TimeUnit.SECONDS);
        pool.shutdown();
        ok(a);
        ok(b);
        assertEquals(text(a), text(b), "both got the one booking");
        assertEquals(1, (replayed(a) ? 1 : 0) + (replayed(b) ? 1 : 0), "one of them replayed");
        assertEquals(1, tools.runs.get() + rustRuns(), "one booking in all");
    }
}
