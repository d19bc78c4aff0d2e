package dev.idemkit.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.example.springai.FlightApp;
import dev.idemkit.IdempotencyStore;
import dev.idemkit.RedisIdempotencyStore;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.UUID;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The same app with {@code idemkit.store.url} naming Redis ({@code IDEMKIT_REDIS_URL}). */
@SpringBootTest(classes = {FlightApp.class, FlightAppTest.Model.class})
class RedisStarterTest {
    @BeforeAll
    static void needsRedis() {
        String url = System.getenv("IDEMKIT_REDIS_URL");
        if (url == null || url.isEmpty()) {
            String message =
                    "IDEMKIT_REDIS_URL is not set: SKIPPING the Spring Boot Redis tests (start the"
                            + " servers with scripts/services.sh start, then eval"
                            + " \"$(scripts/services.sh env)\")";
            System.err.println("idemkit: " + message);
            Assumptions.abort(message);
        }
    }

    @DynamicPropertySource
    static void store(DynamicPropertyRegistry properties) {
        properties.add("idemkit.store.url", () -> System.getenv("IDEMKIT_REDIS_URL"));
        properties.add(
                "idemkit.store.key-prefix", () -> "idemkit-boot-test:" + UUID.randomUUID() + ":");
    }

    @Autowired FlightApp.Agent agent;
    @Autowired FlightApp.Flights flights;
    @Autowired MeterRegistry registry;
    @Autowired IdempotencyStore store;

    @Test
    void four_identical_requests_book_one_flight_on_redis() {
        assertTrue(store instanceof RedisIdempotencyStore);
        for (int i = 0; i < 4; i++) {
            assertEquals("\"BK-BA117-1\"", agent.ask("conversation-42", "Book me on BA117"));
        }
        assertEquals(1, flights.booked.get());
        assertEquals(3.0, FlightAppTest.count(registry, "deduplicated"));
    }
}
