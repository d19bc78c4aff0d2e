package dev.idemkit.spring.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.example.rooms.RoomApp;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.TextContent;
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
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * {@link RoomApp} served by Spring AI's MCP server starter (streamable HTTP), called by the MCP
 * Java SDK's client: the starter's idempotent tool callbacks are a {@code ToolCallbackProvider}
 * bean, which the MCP server serves, so a repeated {@code tools/call} books once. Run on the memory
 * store ({@link McpServerStarterTest}) and on Redis ({@link McpServerStarterRedisTest}).
 */
abstract class McpServerStarterChecks {
    @LocalServerPort int port;

    @Autowired RoomApp.Rooms rooms;

    private McpSyncClient client() {
        McpSyncClient client =
                McpClient.sync(
                                HttpClientStreamableHttpTransport.builder(
                                                "http://127.0.0.1:" + port)
                                        .endpoint("/mcp")
                                        .build())
                        .requestTimeout(Duration.ofSeconds(30))
                        .build();
        client.initialize();
        return client;
    }

    private static CallToolRequest book(String guest) {
        return CallToolRequest.builder()
                .name("book_room")
                .arguments(Map.of("guest", guest, "night", "2026-12-04"))
                .build();
    }

    private static String text(CallToolResult result) {
        StringBuilder b = new StringBuilder();
        for (Object c : result.content()) {
            if (c instanceof TextContent t) {
                b.append(t.text());
            }
        }
        return b.toString();
    }

    @Test
    void theToolIsServedAndTwoCallsBookOnce() {
        int before = rooms.booked();
        String guest = "ada-" + UUID.randomUUID();
        try (McpSyncClient client = client()) {
            List<String> names = new ArrayList<>();
            for (McpSchema.Tool t : client.listTools().tools()) {
                names.add(t.name());
            }
            assertTrue(names.contains("book_room"), "served: " + names);
            CallToolResult first = client.callTool(book(guest));
            CallToolResult again = client.callTool(book(guest));
            assertFalse(Boolean.TRUE.equals(first.isError()), text(first));
            assertFalse(Boolean.TRUE.equals(again.isError()), text(again));
            assertEquals(text(first), text(again), "the repeat got the first booking");
        }
        assertEquals(1, rooms.booked() - before, "one booking for two calls");
    }

    @Test
    void concurrentDuplicatesFromFourClientsBookOnce() throws Exception {
        int before = rooms.booked();
        String guest = "grace-" + UUID.randomUUID();
        List<McpSyncClient> clients = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            for (int i = 0; i < 4; i++) {
                clients.add(client());
            }
            CountDownLatch go = new CountDownLatch(1);
            List<Future<CallToolResult>> results = new ArrayList<>();
            for (McpSyncClient c : clients) {
                results.add(
                        pool.submit(
                                () -> {
                                    go.await();
                                    return c.callTool(book(guest));
                                }));
            }
            go.countDown();
            String seen = null;
            for (Future<CallToolResult> f : results) {
                CallToolResult r = f.get(60, TimeUnit.SECONDS);
                assertFalse(Boolean.TRUE.equals(r.isError()), text(r));
                if (seen == null) {
                    seen = text(r);
                }
                assertEquals(seen, text(r), "every client got the one booking");
            }
        } finally {
            pool.shutdownNow();
            clients.forEach(McpSyncClient::close);
        }
        assertEquals(1, rooms.booked() - before, "one booking for four concurrent calls");
    }
}
