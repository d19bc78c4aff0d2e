package dev.idemkit.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.idemkit.IdempotencyEvent;
import dev.idemkit.Idempotent;
import dev.idemkit.InMemoryIdempotencyStore;
import dev.idemkit.Tool;
import dev.idemkit.ToolDispatcher;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class IdempotencyMetricsTest {
    public static class Flights {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "book_flight")
        @Idempotent
        public String bookFlight(String flight) {
            return flight + "-" + runs.incrementAndGet();
        }
    }

    private static double count(SimpleMeterRegistry registry, String kind, String outcome) {
        Counter c =
                registry.find(IdempotencyMetrics.EVENTS)
                        .tag("kind", kind)
                        .tag("tool", "book_flight")
                        .tag("outcome", outcome)
                        .counter();
        return c == null ? 0 : c.count();
    }

    @Test
    void four_identical_requests_show_one_run_and_three_deduplications() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Flights flights = new Flights();
        try (InMemoryIdempotencyStore store = new InMemoryIdempotencyStore();
                ToolDispatcher dispatcher =
                        ToolDispatcher.builder()
                                .tools(flights)
                                .store(store)
                                .listener(new IdempotencyMetrics(registry))
                                .build()) {
            for (int i = 0; i < 4; i++) {
                assertEquals("BA117-1", dispatcher.call("book_flight", "{\"flight\":\"BA117\"}"));
            }
        }
        assertEquals(1, flights.runs.get());
        assertEquals(1.0, count(registry, "acquired", "executed"));
        assertEquals(3.0, count(registry, "deduplicated", "deduplicated"));
    }

    @Test
    void every_kind_has_an_outcome_and_dropped_events_are_counted_by_their_number() {
        assertEquals("refused", IdempotencyMetrics.outcome(IdempotencyEvent.Kind.FAILED_FAST));
        assertEquals("failed", IdempotencyMetrics.outcome(IdempotencyEvent.Kind.INDETERMINATE));
        assertEquals("error", IdempotencyMetrics.outcome(IdempotencyEvent.Kind.STORE_ERROR));
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        IdempotencyMetrics metrics = new IdempotencyMetrics(registry);
        metrics.onEvent(new IdempotencyEvent(IdempotencyEvent.Kind.DROPPED, null, null, null, "7"));
        assertEquals(7.0, registry.find(IdempotencyMetrics.DROPPED).counter().count());
        assertNull(registry.find(IdempotencyMetrics.EVENTS).counter());
    }
}
