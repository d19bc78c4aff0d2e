package dev.idemkit.mcp;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idemkit.RedisIdempotencyStore;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.transport.StdioServerTransportProvider;
import io.modelcontextprotocol.spec.McpSchema;
import java.nio.file.Path;

/**
 * A stdio MCP server of {@link BookingTools} over Redis, run as a child JVM by {@link
 * StdioTransportTest}: args are the Redis URL, the file body runs are counted in, and how long a
 * booking sleeps. On SIGTERM (the client closing) it lets calls in flight finish, as a server
 * should, so their outcomes are recorded.
 */
public final class StdioBookingServer {
    private StdioBookingServer() {}

    public static void main(String[] args) throws Exception {
        BookingTools tools = new BookingTools(Path.of(args[1]));
        tools.sleepMs = Long.parseLong(args[2]);
        RedisIdempotencyStore store = new RedisIdempotencyStore(args[0]);
        IdempotentMcpTools served =
                IdempotentMcpTools.builder()
                        .tools(tools)
                        .store(store)
                        .scope(McpScopeResolver.fixed("acme", null))
                        .build();
        McpSyncServer server =
                McpServer.sync(
                                new StdioServerTransportProvider(
                                        new JacksonMcpJsonMapper(new ObjectMapper())))
                        .serverInfo("bookings", "1.0")
                        .capabilities(McpSchema.ServerCapabilities.builder().tools(false).build())
                        .tools(served.syncSpecifications())
                        .build();
        Runtime.getRuntime()
                .addShutdownHook(
                        new Thread(
                                () -> {
                                    long until = System.nanoTime() + 15_000_000_000L;
                                    while (tools.inFlight.get() > 0 && System.nanoTime() < until) {
                                        try {
                                            Thread.sleep(20);
                                        } catch (InterruptedException e) {
                                            return;
                                        }
                                    }
                                    // Let the body's outcome reach the store before the JVM ends.
                                    try {
                                        Thread.sleep(300);
                                    } catch (InterruptedException e) {
                                        return;
                                    }
                                }));
        Thread.currentThread().join();
    }
}
