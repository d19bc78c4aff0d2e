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
            if (required("IDEMKIT_REDIS_URL")) {
                org.junit.jupiter.api.Assertions.fail(
                        message + "; IDEMKIT_REQUIRE_SERVICES guarantees it, so this fails");
            }
            System.err.println("idemkit: " + message);
            Assumptions.abort(message);
        }
    }

    /** Whether IDEMKIT_REQUIRE_SERVICES ({@code 1}, or names) guarantees {@code what}. */
    static boolean required(String what) {
        String list = System.getenv().getOrDefault("IDEMKIT_REQUIRE_SERVICES", "");
        return java.util.Arrays.stream(list.split("[ ,]+"))
                .anyMatch(n -> n.equals("1") || n.equals(what));
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
        assertEquals(1, flights.booked());
        assertEquals(3.0, FlightAppTest.count(registry, "deduplicated"));
    }
}
