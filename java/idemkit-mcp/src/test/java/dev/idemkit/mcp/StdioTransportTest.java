package dev.idemkit.mcp;

import static dev.idemkit.mcp.McpTestSupport.call;
import static dev.idemkit.mcp.McpTestSupport.replayed;
import static dev.idemkit.mcp.McpTestSupport.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.ServerParameters;
import io.modelcontextprotocol.client.transport.StdioClientTransport;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.ToolAnnotations;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tools served over stdio by a child JVM ({@link StdioBookingServer}, over Redis so that a second
 * server process shares the first one's records), called by the SDK's own stdio client; body runs
 * are counted in a file the child appends to.
 */
class StdioTransportTest {
    @TempDir Path dir;

    private ServerParameters server(String redis, Path runs, long sleepMs) {
        List<String> args = new ArrayList<>();
        for (String property : System.getProperties().stringPropertyNames()) {
            if (property.startsWith("idemkit.")) {
                args.add("-D" + property + "=" + System.getProperty(property));
            }
        }
        args.add("-cp");
        args.add(
                System.getProperty(
                        "surefire.test.class.path", System.getProperty("java.class.path")));
        args.add(StdioBookingServer.class.getName());
        args.add(redis);
        args.add(runs.toString());
        args.add(Long.toString(sleepMs));
        return ServerParameters.builder(
                        Path.of(System.getProperty("java.home"), "bin", "java").toString())
                .args(args)
                .build();
    }

    /** The SDK's sync stdio client of a new server process. */
    private McpSyncClient client(String redis, Path runs, long sleepMs) {
        McpSyncClient client =
                McpClient.sync(
                                new StdioClientTransport(
                                        server(redis, runs, sleepMs), McpTestSupport.JSON))
                        .requestTimeout(Duration.ofSeconds(60))
                        .initializationTimeout(Duration.ofSeconds(60))
                        .build();
        client.initialize();
        return client;
    }

    private static long runs(Path file) throws Exception {
        return Files.exists(file) ? Files.readAllLines(file).size() : 0;
    }

    private static Map<String, Object> seat() {
        return Map.of("flight", "BA" + UUID.randomUUID(), "seat", "12A");
    }

    private static String redis(String what) {
        return Services.url("IDEMKIT_REDIS_URL", "MCP stdio (" + what + ")");
    }

    @Test
    void toolsListCarriesTheAnnotationsThePolicyImplies() throws Exception {
        try (McpSyncClient client = client(redis("tools/list"), dir.resolve("runs.txt"), 0)) {
            Map<String, ToolAnnotations> listed = new HashMap<>();
            for (McpSchema.Tool t : client.listTools().tools()) {
                listed.put(t.name(), t.annotations());
            }
            ToolAnnotations book = listed.get("book_flight");
            assertEquals(false, book.readOnlyHint());
            assertEquals(true, book.idempotentHint());
            assertEquals(false, book.destructiveHint());
            assertEquals(true, book.openWorldHint());
            assertEquals("Book a flight", book.title());
            assertEquals(true, listed.get("charge_card").idempotentHint(), "EFFECTFUL, HASH_INPUT");
            assertEquals(true, listed.get("flight_status").readOnlyHint());
            assertEquals(false, listed.get("flight_status").idempotentHint(), "NONE");
            assertEquals(false, listed.get("new_trip").idempotentHint(), "UUID");
            assertEquals(false, listed.get("send_note").idempotentHint(), "no policy");
            assertEquals(null, listed.get("send_note").destructiveHint(), "not declared");
        }
    }

    @Test
    void repeatsOfOneCallMakeOneBookingAndGetItsResult() throws Exception {
        Path runs = dir.resolve("runs.txt");
        Map<String, Object> seat = seat();
        try (McpSyncClient client = client(redis("repeats"), runs, 0)) {
            CallToolResult first = client.callTool(call("book_flight", seat, null));
            assertFalse(Boolean.TRUE.equals(first.isError()), text(first));
            assertFalse(replayed(first));
            String key = (String) first.meta().get(IdempotentMcpTools.KEY_META);
            assertEquals(64, key.length(), "the derived key is told: " + first.meta());
            for (int i = 0; i < 3; i++) {
                CallToolResult again = client.callTool(call("book_flight", seat, null));
                assertTrue(replayed(again), "repeat " + i + ": " + again);
                assertEquals(text(first), text(again));
                assertEquals(key, again.meta().get(IdempotentMcpTools.KEY_META));
            }
        }
        assertEquals(1, runs(runs), "one booking for four calls");
    }

    @Test
    void concurrentDuplicatesOverFourServerProcessesMakeOneBooking() throws Exception {
        String redis = redis("server processes share the records");
        Path runs = dir.resolve("runs.txt");
        Map<String, Object> seat = seat();
        // Four server processes, each the session of one stdio client, one call in flight on
        // each at once: the one that claims sleeps while the other three wait for its record. (One
        // call at a time per stdio session: the SDK's stdio transports take one sender at a
        // time, and a second message sent at the same moment is dropped.)
        List<McpSyncClient> clients = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            for (int i = 0; i < 4; i++) {
                clients.add(client(redis, runs, 1000));
            }
            CountDownLatch go = new CountDownLatch(1);
            List<Future<CallToolResult>> results = new ArrayList<>();
            for (McpSyncClient c : clients) {
                results.add(
                        pool.submit(
                                () -> {
                                    go.await();
                                    return c.callTool(call("book_flight", seat, null));
                                }));
            }
            go.countDown();
            int replays = 0;
            for (Future<CallToolResult> f : results) {
                CallToolResult r = f.get(90, TimeUnit.SECONDS);
                assertFalse(Boolean.TRUE.equals(r.isError()), text(r));
                assertTrue(text(r).contains("\"number\":1"), text(r));
                replays += replayed(r) ? 1 : 0;
            }
            assertEquals(3, replays, "three answers came from the one record");
        } finally {
            pool.shutdownNow();
            clients.forEach(McpSyncClient::close);
        }
        assertEquals(1, runs(runs), "one booking for four concurrent duplicates");
    }

    @Test
    void aClientKeyReusedWithOtherArgumentsIsRefusedAsAToolError() throws Exception {
        Path runs = dir.resolve("runs.txt");
        String key = "order-" + UUID.randomUUID();
        Map<String, Object> seat = seat();
        Map<String, Object> other = new HashMap<>(seat);
        other.put("seat", "14C");
        try (McpSyncClient client = client(redis("client keys"), runs, 0)) {
            CallToolResult first = client.callTool(call("book_flight", seat, key));
            assertFalse(Boolean.TRUE.equals(first.isError()), text(first));
            assertEquals(key, first.meta().get(IdempotentMcpTools.KEY_META));
            CallToolResult same = client.callTool(call("book_flight", seat, key));
            assertTrue(replayed(same), same.toString());
            assertEquals(text(first), text(same));
            CallToolResult refused = client.callTool(call("book_flight", other, key));
            assertEquals(true, refused.isError(), text(refused));
            assertTrue(text(refused).contains("other arguments"), text(refused));
            assertTrue(text(refused).contains("Do not retry with this key"), text(refused));
            assertTrue(text(refused).contains(key), text(refused));
            assertEquals(key, refused.meta().get(IdempotentMcpTools.KEY_META));
            assertTrue(client.ping() != null, "the session is still usable");
        }
        assertEquals(1, runs(runs), "the refused call ran nothing");
    }

    @Test
    void aClientClosedMidCallAndANewServerProcessMakeOneBooking() throws Exception {
        String redis = redis("the records outlive a process");
        Path runs = dir.resolve("runs.txt");
        Map<String, Object> seat = seat();
        McpSyncClient first = client(redis, runs, 2000);
        McpSchema.Tool listed =
                first.listTools().tools().stream()
                        .filter(t -> t.name().equals("book_flight"))
                        .findFirst()
                        .orElseThrow();
        assertEquals(true, listed.annotations().idempotentHint());
        ExecutorService pool = Executors.newSingleThreadExecutor();
        pool.submit(() -> first.callTool(call("book_flight", seat, null)));
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (runs(runs) == 0 && System.nanoTime() < until) {
            Thread.sleep(20);
        }
        assertEquals(1, runs(runs), "the first call's body started");
        first.close(); // mid-call: the body is sleeping; the server process is stopped
        pool.shutdownNow();
        try (McpSyncClient second = client(redis, runs, 0)) {
            CallToolResult again = second.callTool(call("book_flight", seat, null));
            assertFalse(Boolean.TRUE.equals(again.isError()), text(again));
            assertTrue(replayed(again), "answered from the first process's record: " + again);
            assertTrue(text(again).contains("\"number\":1"), text(again));
        }
        assertEquals(1, runs(runs), "one booking across two server processes");
    }
}
