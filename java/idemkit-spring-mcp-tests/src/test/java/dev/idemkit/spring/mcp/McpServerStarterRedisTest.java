package dev.idemkit.spring.mcp;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.example.rooms.RoomApp;
import dev.idemkit.IdempotencyStore;
import dev.idemkit.RedisIdempotencyStore;
import java.util.UUID;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** {@link McpServerStarterChecks} with {@code idemkit.store.url} naming Redis. */
@SpringBootTest(
        classes = RoomApp.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.ai.mcp.server.name=rooms",
            "spring.ai.mcp.server.protocol=STREAMABLE",
            "spring.ai.mcp.server.streamable-http.mcp-endpoint=/mcp"
        })
class McpServerStarterRedisTest extends McpServerStarterChecks {
    @BeforeAll
    static void needsRedis() {
        String url = System.getenv("IDEMKIT_REDIS_URL");
        if (url == null || url.isEmpty()) {
            String message =
                    "IDEMKIT_REDIS_URL is not set: SKIPPING the Spring AI MCP server Redis tests"
                            + " (start the servers with scripts/services.sh start, then eval"
                            + " \"$(scripts/services.sh env)\")";
            String list = System.getenv().getOrDefault("IDEMKIT_REQUIRE_SERVICES", "");
            for (String name : list.split("[ ,]+")) {
                if (name.equals("1") || name.equals("IDEMKIT_REDIS_URL")) {
                    Assertions.fail(
                            message + "; IDEMKIT_REQUIRE_SERVICES guarantees it, so this fails");
                }
            }
            System.err.println("idemkit: " + message);
            Assumptions.abort(message);
        }
    }

    @DynamicPropertySource
    static void store(DynamicPropertyRegistry properties) {
        properties.add("idemkit.store.url", () -> System.getenv("IDEMKIT_REDIS_URL"));
        properties.add(
                "idemkit.store.key-prefix", () -> "idemkit-mcp-test:" + UUID.randomUUID() + ":");
    }

    @Autowired IdempotencyStore store;

    @Test
    void theRecordsAreOnRedis() {
        assertTrue(store instanceof RedisIdempotencyStore, store.getClass().getName());
    }
}
