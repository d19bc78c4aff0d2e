package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A builder's listeners get every event of their tools, each on its own: the core's events, relayed
 * with the answer they belong to, and counted as the core counts them (SPEC §3).
 */
class ListenerEventsTest {
    private final InMemoryIdempotencyStore store = new InMemoryIdempotencyStore();

    @AfterEach
    void close() {
        store.close();
    }

    public static class Tools implements IdempotencyKeySupplier {
        @Override
        public String idempotencyKeyFor(Map<String, Object> input) {
            return (String) input.get("title");
        }

        @Tool(name = "book")
        @Idempotent
        public String book(String flight) {
            return "booked " + flight;
        }

        @Tool(name = "nights")
        @Idempotent
        public long nights(long nights) {
            return nights;
        }

        @Tool(name = "charge")
        @Idempotent(effect = Effect.EFFECTFUL)
        public String charge(String order) {
            throw new IllegalStateException("the payment service did not answer");
        }

        @Tool(name = "create_issue")
        @Idempotent(strategy = KeyStrategy.EXPLICIT, rejectPayloadMismatch = true)
        public String createIssue(String title, String body) {
            return "issue";
        }
    }

    private static IdempotencyListener throwing() {
        return e -> {
            throw new IllegalStateException("a broken listener");
        };
    }

    @Test
    @ExpectedWarnings("an event listener threw")
    void one_throwing_listener_does_not_silence_the_others_on_either_builder() {
        List<IdempotencyEvent.Kind> dispatcherEvents = new CopyOnWriteArrayList<>();
        List<IdempotencyEvent.Kind> operationEvents = new CopyOnWriteArrayList<>();
        try (ToolDispatcher d =
                        ToolDispatcher.builder()
                                .tools(new Tools())
                                .store(store)
                                .listener(throwing())
                                .listener(e -> dispatcherEvents.add(e.kind()))
                                .build();
                IdempotentOperation<String> op =
                        IdempotentOperation.builder("lookup", String.class)
                                .store(store)
                                .listener(throwing())
                                .listener(e -> operationEvents.add(e.kind()))
                                .build()) {
            assertEquals("booked BA117", d.call("book", Map.of("flight", "BA117")));
            assertEquals("booked BA117", d.call("book", Map.of("flight", "BA117")));
            assertEquals("found", op.call("acme", null, "{\"q\":1}", context -> "found"));
            assertEquals(
                    List.of(IdempotencyEvent.Kind.ACQUIRED, IdempotencyEvent.Kind.DEDUPLICATED),
                    dispatcherEvents);
            assertEquals(List.of(IdempotencyEvent.Kind.ACQUIRED), operationEvents);
        }
    }

    @Test
    void every_repeat_of_a_held_failure_is_an_event_with_its_own_answer() {
        List<IdempotencyEvent.Kind> events = new CopyOnWriteArrayList<>();
        try (ToolDispatcher d =
                ToolDispatcher.builder()
                        .tools(new Tools())
                        .store(store)
                        .listener(e -> events.add(e.kind()))
                        .build()) {
            for (int i = 1; i <= 3; i++) {
                assertThrows(
                        IndeterminateOutcomeException.class,
                        () -> d.call("charge", Map.of("order", "A-1")));
                assertEquals(
                        i,
                        events.stream()
                                .filter(k -> k == IdempotencyEvent.Kind.INDETERMINATE)
                                .count(),
                        "after call " + i + ": " + events);
            }
            assertEquals(3L, store.eventCounts().get("indeterminate"), "the core's count");
        }
    }

    @Test
    void a_payload_mismatch_is_an_event() {
        List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();
        try (ToolDispatcher d =
                ToolDispatcher.builder()
                        .tools(new Tools())
                        .store(store)
                        .listener(events::add)
                        .build()) {
            d.call("create_issue", Map.of("title", "Login fails", "body", "500"));
            assertThrows(
                    PayloadMismatchException.class,
                    () -> d.call("create_issue", Map.of("title", "Login fails", "body", "edited")));
            IdempotencyEvent last = events.get(events.size() - 1);
            assertEquals(IdempotencyEvent.Kind.PAYLOAD_MISMATCH, last.kind(), events.toString());
            assertEquals("create_issue", last.tool());
            assertEquals(64, last.key().length());
            assertEquals(1L, store.eventCounts().get("payload_mismatch"), "the core's count");
        }
    }

    @Test
    void an_argument_refused_at_binding_releases_its_claim_as_an_event() {
        List<IdempotencyEvent.Kind> events = new CopyOnWriteArrayList<>();
        try (ToolDispatcher d =
                ToolDispatcher.builder()
                        .tools(new Tools())
                        .store(store)
                        .listener(e -> events.add(e.kind()))
                        .build()) {
            assertThrows(
                    InvalidToolInputException.class, () -> d.call("nights", "{\"nights\":1.5}"));
            assertEquals(
                    List.of(IdempotencyEvent.Kind.ACQUIRED, IdempotencyEvent.Kind.RELEASED),
                    events);
            Map<String, Long> counts = store.eventCounts();
            assertEquals(1L, counts.get("acquired"));
            assertEquals(1L, counts.get("released"), "the core's count");
        }
    }

    @Test
    void dropped_events_reach_a_builders_listeners() {
        List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();
        try (ToolDispatcher d =
                ToolDispatcher.builder()
                        .tools(new Tools())
                        .store(store)
                        .listener(events::add)
                        .build()) {
            // Calls from Rust code on the same store queue their events without delivering them;
            // past the queue's capacity (4096) the oldest are dropped and counted.
            for (int i = 0; i < 4200; i++) {
                NativeTestSupport.rustCall(
                        store, "book", "acme", null, "{\"flight\":\"X\"}", "\"r\"");
            }
            d.call("book", Map.of("flight", "BA117"));
            IdempotencyEvent dropped =
                    events.stream()
                            .filter(e -> e.kind() == IdempotencyEvent.Kind.DROPPED)
                            .findFirst()
                            .orElseThrow(() -> new AssertionError("no DROPPED event"));
            assertTrue(Long.parseLong(dropped.detail()) > 0, dropped.toString());
        }
    }
}
