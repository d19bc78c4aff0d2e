package dev.idemkit.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.IdempotencyEvent;
import dev.idemkit.Idempotent;
import dev.idemkit.InMemoryIdempotencyStore;
import dev.idemkit.Tool;
import dev.idemkit.ToolDispatcher;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
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

    /** Answers that are the core's refusals and failures, each one event. */
    public static class Refusals implements dev.idemkit.IdempotencyKeySupplier {
        @Override
        public String idempotencyKeyFor(java.util.Map<String, Object> input) {
            return (String) input.get("title");
        }

        @Tool(name = "charge")
        @Idempotent(effect = dev.idemkit.Effect.EFFECTFUL)
        public String charge(String order) {
            throw new IllegalStateException("the payment service did not answer");
        }

        @Tool(name = "create_issue")
        @Idempotent(strategy = dev.idemkit.KeyStrategy.EXPLICIT, rejectPayloadMismatch = true)
        public String createIssue(String title, String body) {
            return "issue";
        }

        @Tool(name = "nights")
        @Idempotent
        public long nights(long nights) {
            return nights;
        }
    }

    @Test
    void the_meter_counts_what_the_core_counts() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (InMemoryIdempotencyStore store = new InMemoryIdempotencyStore();
                ToolDispatcher dispatcher =
                        ToolDispatcher.builder()
                                .tools(new Refusals())
                                .store(store)
                                .listener(new IdempotencyMetrics(registry))
                                .build()) {
            java.util.Map<String, Object> order = java.util.Map.of("order", "A-1");
            for (int i = 1; i <= 3; i++) {
                org.junit.jupiter.api.Assertions.assertThrows(
                        dev.idemkit.IndeterminateOutcomeException.class,
                        () -> dispatcher.call("charge", order));
                // Counted with its own answer, not with a later call's.
                assertEquals(i, metered(registry, "indeterminate"), "after call " + i);
            }
            dispatcher.call("create_issue", java.util.Map.of("title", "t", "body", "a"));
            org.junit.jupiter.api.Assertions.assertThrows(
                    dev.idemkit.PayloadMismatchException.class,
                    () ->
                            dispatcher.call(
                                    "create_issue", java.util.Map.of("title", "t", "body", "b")));
            assertEquals(1.0, metered(registry, "payload_mismatch"));
            org.junit.jupiter.api.Assertions.assertThrows(
                    dev.idemkit.InvalidToolInputException.class,
                    () -> dispatcher.call("nights", "{\"nights\":1.5}"));
            java.util.Map<String, Long> core = store.eventCounts();
            for (String kind :
                    java.util.List.of(
                            "acquired", "indeterminate", "payload_mismatch", "released")) {
                assertEquals((double) core.get(kind), metered(registry, kind), kind);
            }
            assertEquals(3L, core.get("indeterminate"));
            assertEquals(1L, core.get("payload_mismatch"));
            assertEquals(1L, core.get("released"));
        }
    }

    /** The meter's count of {@code kind}, over every tool and outcome. */
    private static double metered(SimpleMeterRegistry registry, String kind) {
        return registry.find(IdempotencyMetrics.EVENTS).tag("kind", kind).counters().stream()
                .mapToDouble(Counter::count)
                .sum();
    }

    /** Holds its key until released, so that a second caller waits for it. */
    public static class Held {
        volatile CountDownLatch release = new CountDownLatch(1);

        @Tool(name = "book_flight")
        @Idempotent
        public String bookFlight(String flight) throws InterruptedException {
            release.await();
            return "BK-" + flight;
        }
    }

    @Test
    void a_wait_is_timed_by_its_length_in_the_waited_event() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        IdempotencyMetrics metrics = new IdempotencyMetrics(registry);
        metrics.onEvent(
                new IdempotencyEvent(
                        IdempotencyEvent.Kind.WAITED, "book_flight", null, null, "250"));
        metrics.onEvent(
                new IdempotencyEvent(
                        IdempotencyEvent.Kind.WAITED, "book_flight", null, null, null));
        Timer waits = registry.get(IdempotencyMetrics.WAIT).tag("tool", "book_flight").timer();
        assertEquals(1, waits.count());
        assertEquals(250.0, waits.totalTime(TimeUnit.MILLISECONDS));
        assertEquals(2.0, count(registry, "waited", "waited"));
    }

    @Test
    void a_caller_that_waited_for_the_holder_is_timed() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Held held = new Held();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try (InMemoryIdempotencyStore store = new InMemoryIdempotencyStore();
                ToolDispatcher dispatcher =
                        ToolDispatcher.builder()
                                .tools(held)
                                .store(store)
                                .listener(new IdempotencyMetrics(registry))
                                .build()) {
            // Whether the second caller reaches the held claim before the holder finishes is the
            // scheduler's choice: try fresh keys, giving it longer each time, until one waited.
            for (int i = 0; i < 20 && count(registry, "waited", "waited") == 0; i++) {
                held.release = new CountDownLatch(1);
                String input = "{\"flight\":\"F" + i + "\"}";
                Future<Object> holder = pool.submit(() -> dispatcher.call("book_flight", input));
                Future<Object> waiter = pool.submit(() -> dispatcher.call("book_flight", input));
                Thread.sleep(20L * (i + 1));
                held.release.countDown();
                assertEquals("BK-F" + i, holder.get());
                assertEquals("BK-F" + i, waiter.get());
            }
        } finally {
            pool.shutdownNow();
        }
        double waited = count(registry, "waited", "waited");
        assertTrue(waited >= 1, "no call waited in 20 tries");
        Timer waits = registry.get(IdempotencyMetrics.WAIT).tag("tool", "book_flight").timer();
        assertEquals((long) waited, waits.count(), "every waited event carries its length");
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
        assertEquals("refused", IdempotencyMetrics.outcome(IdempotencyEvent.Kind.PAYLOAD_MISMATCH));
        assertEquals("failed", IdempotencyMetrics.outcome(IdempotencyEvent.Kind.INDETERMINATE));
        assertEquals("error", IdempotencyMetrics.outcome(IdempotencyEvent.Kind.STORE_ERROR));
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        IdempotencyMetrics metrics = new IdempotencyMetrics(registry);
        metrics.onEvent(new IdempotencyEvent(IdempotencyEvent.Kind.DROPPED, null, null, null, "7"));
        assertEquals(7.0, registry.find(IdempotencyMetrics.DROPPED).counter().count());
        assertNull(registry.find(IdempotencyMetrics.EVENTS).counter());
    }
}
