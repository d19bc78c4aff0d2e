package com.example.mcp;

import dev.idemkit.Effect;
import dev.idemkit.Idempotent;
import dev.idemkit.Tool;
import dev.idemkit.mcp.IdempotentMcpTools;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.ServerCapabilities;
import io.modelcontextprotocol.spec.McpSchema.TextContent;
import java.nio.file.Files;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.catalina.Context;
import org.apache.catalina.startup.Tomcat;

public class RoomServer {
    public static class Rooms {
        final AtomicInteger booked = new AtomicInteger();

        @Tool(name = "book_room", description = "Books a room for one night")
        @Idempotent(effect = Effect.EFFECTFUL)
        public String bookRoom(String guest, String night) {
            return "booking-" + guest + "-" + night + "-" + booked.incrementAndGet();
        }
    }

    public static void main(String[] args) throws Exception {
        Rooms rooms = new Rooms();
        // Every tools/call of book_room goes through idemkit (here its in-memory store).
        IdempotentMcpTools tools = IdempotentMcpTools.builder().tools(rooms).build();
        HttpServletStreamableServerTransportProvider transport =
                HttpServletStreamableServerTransportProvider.builder().mcpEndpoint("/mcp").build();
        McpSyncServer server =
                McpServer.sync(transport)
                        .serverInfo("rooms", "1.0")
                        .capabilities(ServerCapabilities.builder().tools(false).build())
                        .tools(tools.syncSpecifications())
                        .build();

        // The MCP endpoint in an embedded Tomcat on 127.0.0.1, on a free port.
        Tomcat tomcat = new Tomcat();
        tomcat.setBaseDir(Files.createTempDirectory("rooms").toString());
        tomcat.setPort(0);
        tomcat.getConnector().setProperty("address", "127.0.0.1");
        Context context = tomcat.addContext("", null);
        Tomcat.addServlet(context, "mcp", transport).setAsyncSupported(true);
        context.addServletMappingDecoded("/*", "mcp");
        tomcat.start();
        String url = "http://127.0.0.1:" + tomcat.getConnector().getLocalPort();

        // The SDK's own client sends the same call twice, as a client that lost the answer would.
        try (McpSyncClient client =
                McpClient.sync(
                                HttpClientStreamableHttpTransport.builder(url)
                                        .endpoint("/mcp")
                                        .build())
                        .build()) {
            client.initialize();
            CallToolRequest call =
                    CallToolRequest.builder()
                            .name("book_room")
                            .arguments(Map.of("guest", "ada", "night", "2026-12-04"))
                            .build();
            CallToolResult first = client.callTool(call);
            CallToolResult retry = client.callTool(call);
            System.out.println(
                    "first call: " + text(first) + ", replayed: " + first.meta().get("replayed"));
            System.out.println(
                    "retry: " + text(retry) + ", replayed: " + retry.meta().get("replayed"));
        }
        System.out.println("the booking ran " + rooms.booked.get() + " time(s)");
        server.closeGracefully();
        tomcat.stop();
        tomcat.destroy();
        tools.close();
    }

    static String text(CallToolResult result) {
        return ((TextContent) result.content().get(0)).text();
    }
}
