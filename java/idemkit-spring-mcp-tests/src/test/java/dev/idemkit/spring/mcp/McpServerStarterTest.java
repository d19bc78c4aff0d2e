package dev.idemkit.spring.mcp;

import com.example.rooms.RoomApp;
import org.springframework.boot.test.context.SpringBootTest;

/** {@link McpServerStarterChecks} on the starter's default store (in memory). */
@SpringBootTest(
        classes = RoomApp.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.ai.mcp.server.name=rooms",
            "spring.ai.mcp.server.protocol=STREAMABLE",
            "spring.ai.mcp.server.streamable-http.mcp-endpoint=/mcp"
        })
class McpServerStarterTest extends McpServerStarterChecks {}
