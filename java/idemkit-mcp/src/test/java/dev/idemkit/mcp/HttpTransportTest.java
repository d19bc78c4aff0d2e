package dev.idemkit.mcp;

import static dev.idemkit.mcp.McpTestSupport.call;
import static dev.idemkit.mcp.McpTestSupport.replayed;
import static dev.idemkit.mcp.McpTestSupport.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.IdempotencyStore;
import dev.idemkit.Idempotent;
import dev.idemkit.InMemoryIdempotencyStore;
import dev.idemkit.RedisIdempotencyStore;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.TextContent;
import io.modelcontextprotocol.spec.McpSchema.ToolAnnotations;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Tools served over streamable HTTP (the SDK's servlet transport in an embedded Tomcat on
 * 127.0.0.1), called by the SDK's own client; every check counts the tool bodies' runs.
 */
class HttpTransportTest {
    static Stream<Arguments> stores() {
        Supplier<IdempotencyStore> memory = InMemoryIdempotencyStore::new;
        Supplier<IdempotencyStore> redis =
                () -> new RedisIdempotencyStore(Services.url("IDEMKIT_REDIS_URL", "MCP Redis"));
        return Stream.of(Arguments.of("memory", memory), Arguments.of("redis", redis));
    }

    private static Map<String, Object> seat(String flight) {
        return Map.of("flight", flight, "seat", "12A");
    }

    @Test
    void toolsListCarriesTheAnnotationsThePolicyImplies() throws Exception {
        BookingTools tools = new BookingTools();
        try (IdempotentMcpTools served = IdempotentMcpTools.builder().tools(tools).build();
                McpTestSupport.HttpServer server = new McpTestSupport.HttpServer(served);
                McpSyncClient client = server.client(null)) {
            java.util.Map<String, ToolAnnotations> listed = new java.util.HashMap<>();
            for (McpSchema.Tool t : client.listTools().tools()) {
                listed.put(t.name(), t.annotations());
            }
            ToolAnnotations book = listed.get("book_flight");
            assertEquals(false, book.readOnlyHint());
            assertEquals(true, book.idempotentHint());
            assertEquals(false, book.destructiveHint());
            assertEquals(true, book.openWorldHint());
            assertEquals("Book a flight", book.title());
            assertEquals(true, listed.get("charge_card").idempotentHint());
            assertEquals(true, listed.get("flight_status").readOnlyHint());
            assertEquals(false, listed.get("flight_status").idempotentHint());
            assertEquals(false, listed.get("new_trip").idempotentHint());
            assertEquals(false, listed.get("send_note").idempotentHint());
            assertEquals(null, listed.get("send_note").destructiveHint());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void repeatsOfOneCallMakeOneBookingAndGetItsResult(
            String name, Supplier<IdempotencyStore> store) throws Exception {
        BookingTools tools = new BookingTools();
        String flight = "BA" + UUID.randomUUID();
        try (IdempotencyStore s = store.get();
                IdempotentMcpTools served =
                        IdempotentMcpTools.builder().tools(tools).store(s).build();
                McpTestSupport.HttpServer server = new McpTestSupport.HttpServer(served);
                McpSyncClient client = server.client(null)) {
            CallToolResult first = client.callTool(call("book_flight", seat(flight), null));
            assertFalse(Boolean.TRUE.equals(first.isError()), text(first));
            assertFalse(replayed(first));
            String key = (String) first.meta().get(IdempotentMcpTools.KEY_META);
            assertEquals(64, key.length(), "the derived key is told: " + first.meta());
            for (int i = 0; i < 3; i++) {
                CallToolResult again = client.callTool(call("book_flight", seat(flight), null));
                assertTrue(replayed(again), "repeat " + i + ": " + again);
                assertEquals(text(first), text(again));
                assertEquals(first.structuredContent(), again.structuredContent());
                assertEquals(key, again.meta().get(IdempotentMcpTools.KEY_META));
            }
            assertEquals(1, tools.bookings.get(), "one booking for four calls");
        }
    }

    @Test
    void aClientClosedMidCallAndANewClientMakeOneBooking() throws Exception {
        BookingTools tools = new BookingTools();
        tools.sleepMs = 1500;
        String flight = "BA" + UUID.randomUUID();
        try (IdempotentMcpTools served = IdempotentMcpTools.builder().tools(tools).build();
                McpTestSupport.HttpServer server = new McpTestSupport.HttpServer(served)) {
            McpSyncClient first = server.client(null);
            ExecutorService pool = Executors.newSingleThreadExecutor();
            pool.submit(() -> first.callTool(call("book_flight", seat(flight), null)));
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (tools.bookings.get() == 0 && System.nanoTime() < until) {
                Thread.sleep(10);
            }
            assertEquals(1, tools.bookings.get(), "the first call's body started");
            first.close(); // mid-call: the body is sleeping
            pool.shutdownNow();
            try (McpSyncClient second = server.client(null)) {
                CallToolResult again = second.callTool(call("book_flight", seat(flight), null));
                assertFalse(Boolean.TRUE.equals(again.isError()), text(again));
                assertTrue(text(again).contains("\"number\":1"), text(again));
                assertTrue(replayed(again), "answered from the first call's record");
            }
            assertEquals(1, tools.bookings.get(), "one booking");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void eightConcurrentDuplicatesMakeOneBooking(String name, Supplier<IdempotencyStore> store)
            throws Exception {
        BookingTools tools = new BookingTools();
        tools.sleepMs = 300;
        String flight = "BA" + UUID.randomUUID();
        try (IdempotencyStore s = store.get();
                IdempotentMcpTools served =
                        IdempotentMcpTools.builder().tools(tools).store(s).build();
                McpTestSupport.HttpServer server = new McpTestSupport.HttpServer(served)) {
            List<McpSyncClient> clients = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                clients.add(server.client(null));
            }
            ExecutorService pool = Executors.newFixedThreadPool(8);
            CountDownLatch start = new CountDownLatch(1);
            List<Future<CallToolResult>> results = new ArrayList<>();
            for (McpSyncClient c : clients) {
                results.add(
                        pool.submit(
                                () -> {
                                    start.await();
                                    return c.callTool(call("book_flight", seat(flight), null));
                                }));
            }
            start.countDown();
            int replays = 0;
            for (Future<CallToolResult> f : results) {
                CallToolResult r = f.get(60, TimeUnit.SECONDS);
                assertFalse(Boolean.TRUE.equals(r.isError()), text(r));
                assertTrue(text(r).contains("\"number\":1"), text(r));
                replays += replayed(r) ? 1 : 0;
            }
            pool.shutdown();
            clients.forEach(McpSyncClient::close);
            assertEquals(1, tools.bookings.get(), "one booking for 8 duplicate calls");
            assertEquals(7, replays, "seven answers came from the record");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void anAsyncServerRunsEightConcurrentDuplicatesOnceAndKeepsTheProtocol(
            String name, Supplier<IdempotencyStore> store) throws Exception {
        BookingTools tools = new BookingTools();
        tools.sleepMs = 300;
        String flight = "BA" + UUID.randomUUID();
        String key = "order-" + UUID.randomUUID();
        try (IdempotencyStore s = store.get();
                IdempotentMcpTools served =
                        IdempotentMcpTools.builder().tools(tools).store(s).build();
                McpTestSupport.HttpServer server = new McpTestSupport.HttpServer(served, true)) {
            List<McpSyncClient> clients = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                clients.add(server.client(null));
            }
            ExecutorService pool = Executors.newFixedThreadPool(8);
            CountDownLatch start = new CountDownLatch(1);
            List<Future<CallToolResult>> results = new ArrayList<>();
            for (McpSyncClient c : clients) {
                results.add(
                        pool.submit(
                                () -> {
                                    start.await();
                                    return c.callTool(call("book_flight", seat(flight), null));
                                }));
            }
            start.countDown();
            int replays = 0;
            for (Future<CallToolResult> f : results) {
                CallToolResult r = f.get(60, TimeUnit.SECONDS);
                assertFalse(Boolean.TRUE.equals(r.isError()), text(r));
                assertTrue(text(r).contains("\"number\":1"), text(r));
                replays += replayed(r) ? 1 : 0;
            }
            pool.shutdown();
            McpSyncClient client = clients.get(0);
            assertEquals(
                    true,
                    client.listTools().tools().stream()
                            .filter(t -> t.name().equals("book_flight"))
                            .findFirst()
                            .orElseThrow()
                            .annotations()
                            .idempotentHint());
            CallToolResult keyed = client.callTool(call("book_flight", seat("BA1"), key));
            assertEquals(key, keyed.meta().get("idempotencyKey"));
            CallToolResult refused = client.callTool(call("book_flight", seat("BA2"), key));
            assertEquals(true, refused.isError(), text(refused));
            clients.forEach(McpSyncClient::close);
            assertEquals(7, replays, "seven answers came from the record");
            assertEquals(2, tools.bookings.get(), "one booking for 8 duplicates, one keyed");
        }
    }

    @Test
    void aClientKeyReusedWithOtherArgumentsIsRefusedAsAToolError() throws Exception {
        BookingTools tools = new BookingTools();
        String key = "order-" + UUID.randomUUID();
        try (IdempotentMcpTools served = IdempotentMcpTools.builder().tools(tools).build();
                McpTestSupport.HttpServer server = new McpTestSupport.HttpServer(served);
                McpSyncClient client = server.client(null)) {
            CallToolResult first = client.callTool(call("book_flight", seat("BA1"), key));
            assertFalse(Boolean.TRUE.equals(first.isError()), text(first));
            assertEquals(key, first.meta().get("idempotencyKey"));
            assertEquals(false, first.meta().get("replayed"));
            CallToolResult same = client.callTool(call("book_flight", seat("BA1"), key));
            assertEquals(true, same.meta().get("replayed"));
            assertEquals(text(first), text(same));
            CallToolResult other = client.callTool(call("book_flight", seat("BA2"), key));
            assertEquals(true, other.isError(), text(other));
            assertTrue(text(other).contains("other arguments"), text(other));
            assertTrue(text(other).contains(key), text(other));
            // Without a key the tool's own strategy (HASH_INPUT) decides: a new record.
            CallToolResult unkeyed = client.callTool(call("book_flight", seat("BA1"), null));
            assertEquals(false, unkeyed.meta().get("replayed"));
            assertEquals(64, ((String) unkeyed.meta().get("idempotencyKey")).length());
            assertEquals(2, tools.bookings.get(), "the keyed call and the unkeyed one");
        }
    }

    @Test
    void aHeldEffectIsAToolErrorNamingTheKey() throws Exception {
        BookingTools tools = new BookingTools();
        Map<String, Object> args = Map.of("card", "4242-" + UUID.randomUUID(), "cents", 500);
        try (IdempotentMcpTools served = IdempotentMcpTools.builder().tools(tools).build();
                McpTestSupport.HttpServer server = new McpTestSupport.HttpServer(served);
                McpSyncClient client = server.client(null)) {
            CallToolResult first = client.callTool(call("charge_card", args, null));
            assertEquals(true, first.isError(), text(first));
            String key = (String) first.meta().get("idempotencyKey");
            assertEquals(64, key.length());
            assertTrue(text(first).contains("Do not retry"), text(first));
            assertTrue(text(first).contains(key), text(first));
            CallToolResult again = client.callTool(call("charge_card", args, null));
            assertEquals(true, again.isError(), text(again));
            assertTrue(text(again).contains(key), text(again));
            assertTrue(client.ping() != null, "the session is still usable");
            assertEquals(1, tools.charges.get(), "charged once; the repeat was held");
        }
    }

    @Test
    void theTenantComesFromTheRequestNotTheArguments() throws Exception {
        BookingTools tools = new BookingTools();
        String flight = "BA" + UUID.randomUUID();
        try (IdempotentMcpTools served =
                        IdempotentMcpTools.builder()
                                .tools(tools)
                                .scope(McpScopeResolver.fromContext("tenant", null))
                                .build();
                McpTestSupport.HttpServer server = new McpTestSupport.HttpServer(served);
                McpSyncClient acme = server.client("acme");
                McpSyncClient globex = server.client("globex")) {
            acme.callTool(call("book_flight", seat(flight), null));
            assertTrue(replayed(acme.callTool(call("book_flight", seat(flight), null))));
            CallToolResult other = globex.callTool(call("book_flight", seat(flight), null));
            assertFalse(replayed(other), "another tenant never shares a record");
            assertEquals(2, tools.bookings.get());
        }
    }

    @Test
    void aWrappedSpecificationRunsOncePerKey() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        McpSchema.Tool tool =
                McpSchema.Tool.builder()
                        .name("create_issue")
                        .description("Opens an issue")
                        .inputSchema(Map.of("type", "object"))
                        .annotations(new ToolAnnotations(null, false, false, null, true, null))
                        .build();
        SyncToolSpecification spec =
                new SyncToolSpecification(
                        tool,
                        (exchange, request) ->
                                new CallToolResult(
                                        List.of(
                                                new TextContent(
                                                        "issue #" + runs.incrementAndGet())),
                                        false,
                                        null,
                                        null));
        SyncToolSpecification unprotected =
                new SyncToolSpecification(
                        McpSchema.Tool.builder()
                                .name("post_message")
                                .inputSchema(Map.of("type", "object"))
                                .build(),
                        (exchange, request) ->
                                new CallToolResult(
                                        List.of(new TextContent("posted")), false, null, null));
        Idempotent policy = Policies.class.getAnnotation(Idempotent.class);
        try (IdempotentMcpTools served =
                        IdempotentMcpTools.builder()
                                .wrap(spec, policy)
                                .wrap(unprotected, null)
                                .build();
                McpTestSupport.HttpServer server = new McpTestSupport.HttpServer(served);
                McpSyncClient client = server.client(null)) {
            McpSchema.Tool listed =
                    client.listTools().tools().stream()
                            .filter(t -> t.name().equals("create_issue"))
                            .findFirst()
                            .orElseThrow();
            assertEquals(true, listed.annotations().idempotentHint());
            assertEquals(false, listed.annotations().destructiveHint());
            Map<String, Object> args = Map.of("title", "crash " + UUID.randomUUID());
            CallToolResult first = client.callTool(call("create_issue", args, null));
            CallToolResult again = client.callTool(call("create_issue", args, null));
            assertEquals("issue #1", text(first));
            assertEquals("issue #1", text(again));
            assertTrue(replayed(again));
            assertNotEquals(null, client.callTool(call("post_message", Map.of(), null)));
            assertEquals(1, runs.get(), "the wrapped handler ran once");
        }
    }

    /** A result with a java.time member, which mappers write differently. */
    public static class Departures {
        final AtomicInteger runs = new AtomicInteger();

        public record Departure(String flight, java.time.Instant at) {}

        @dev.idemkit.Tool(name = "departure", description = "A flight's departure")
        @Idempotent
        public Departure departure(String flight) {
            runs.incrementAndGet();
            return new Departure(flight, java.time.Instant.parse("2026-12-04T10:15:30Z"));
        }
    }

    @Test
    void aFirstAnswerAndItsRepeatReadAlikeWhateverTheResultHolds() throws Exception {
        Departures tools = new Departures();
        String flight = "BA" + UUID.randomUUID();
        try (IdempotentMcpTools served = IdempotentMcpTools.builder().tools(tools).build();
                McpTestSupport.HttpServer server = new McpTestSupport.HttpServer(served);
                McpSyncClient client = server.client(null)) {
            CallToolResult first =
                    client.callTool(call("departure", Map.of("flight", flight), null));
            CallToolResult again =
                    client.callTool(call("departure", Map.of("flight", flight), null));
            assertTrue(replayed(again));
            assertEquals(text(first), text(again));
            assertEquals(first.structuredContent(), again.structuredContent());
            assertTrue(text(first).contains("\"at\":\"2026-12-04T10:15:30Z\""), text(first));
            assertEquals(1, tools.runs.get());
        }
    }

    @Idempotent
    private static final class Policies {}
}
