package dev.idemkit.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.example.springai.FlightApp;
import dev.idemkit.IdempotencyStore;
import dev.idemkit.InMemoryIdempotencyStore;
import dev.idemkit.micrometer.IdempotencyMetrics;
import dev.idemkit.springai.ScriptedChatModel;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

/**
 * The README's Spring Boot app (FlightApp, compared verbatim) in a Boot test context with a
 * scripted model that asks for book_flight on each of four identical requests: one booking, and the
 * Micrometer counters show the three deduplications.
 */
@SpringBootTest(
        classes = {FlightApp.class, FlightAppTest.Model.class},
        properties = "idemkit.methods=true")
class FlightAppTest {
    @TestConfiguration(proxyBeanMethods = false)
    static class Model {
        @Bean
        ChatModel chatModel() {
            return new ScriptedChatModel(1, "book_flight", "{\"flight\":\"BA117\"}");
        }

        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }
    }

    @Autowired FlightApp.Agent agent;
    @Autowired FlightApp.Flights flights;
    @Autowired MeterRegistry registry;
    @Autowired IdempotencyStore store;

    static double count(MeterRegistry registry, String kind) {
        Counter c =
                registry.find(IdempotencyMetrics.EVENTS)
                        .tag("kind", kind)
                        .tag("tool", "book_flight")
                        .counter();
        return c == null ? 0 : c.count();
    }

    @Test
    void four_identical_requests_book_one_flight_and_count_three_deduplications() {
        for (int i = 0; i < 4; i++) {
            assertEquals("\"BK-BA117-1\"", agent.ask("conversation-42", "Book me on BA117"));
        }
        assertEquals(1, flights.booked());
        assertEquals(1.0, count(registry, "acquired"));
        assertEquals(3.0, count(registry, "deduplicated"));
        assertTrue(
                store instanceof InMemoryIdempotencyStore, "idemkit.store.url defaults to memory");
    }

    @Test
    void the_readme_shows_the_app_verbatim() throws Exception {
        String readme = Files.readString(Path.of("../README.md"));
        String source =
                Files.readString(Path.of("src/test/java/com/example/springai/FlightApp.java"));
        assertTrue(
                readme.contains("```java\n" + source + "```"),
                "java/README.md must show FlightApp.java verbatim in a java block");
    }
}
