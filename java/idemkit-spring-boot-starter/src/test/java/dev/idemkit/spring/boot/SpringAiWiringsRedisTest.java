package dev.idemkit.spring.boot;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.IdempotencyStore;
import dev.idemkit.RedisIdempotencyStore;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** {@link SpringAiWirings} with {@code idemkit.store.url} naming Redis (IDEMKIT_REDIS_URL). */
@SpringBootTest(classes = SpringAiWirings.App.class)
class SpringAiWiringsRedisTest extends SpringAiWirings {
    @BeforeAll
    static void needsRedis() {
        RedisStarterTest.needsRedis();
    }

    @DynamicPropertySource
    static void store(DynamicPropertyRegistry properties) {
        properties.add("idemkit.store.url", () -> System.getenv("IDEMKIT_REDIS_URL"));
        properties.add(
                "idemkit.store.key-prefix",
                () -> "idemkit-wirings-test:" + UUID.randomUUID() + ":");
    }

    @Autowired IdempotencyStore store;

    @BeforeEach
    void on_redis() {
        assertTrue(store instanceof RedisIdempotencyStore, store.toString());
    }
}
