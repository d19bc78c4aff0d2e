package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The functional entry point and the tool metadata adapters build on. */
class IdempotentOperationTest {
    private final InMemoryIdempotencyStore store = new InMemoryIdempotencyStore();

    @AfterEach
    void close() {
        store.close();
    }

    public static class Booking {
        public String flight;
        public String key;

        public Booking() {}

        Booking(String flight, String key) {
            this.flight = flight;
            this.key = key;
        }
    }

    @Test
    void a_body_runs_once_per_key_among_concurrent_callers_and_once_per_run() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        CountDownLatch release = new CountDownLatch(1);
        try (IdempotentOperation<Booking> book =
                IdempotentOperation.builder("book_flight", Booking.class).store(store).build()) {
            ExecutorService pool = Executors.newFixedThreadPool(6);
            List<Future<Booking>> calls = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                calls.add(
                        pool.submit(
                                () ->
                                        book.call(
                                                "acme",
                                                "conversation-1",
                                                "{\"flight\":\"BA117\"}",
                                                context -> {
                                                    runs.incrementAndGet();
                                                    release.await();
                                                    return new Booking("BA117", context.key());
                                                })));
            }
            while (runs.get() == 0) {
                Thread.onSpinWait();
            }
            release.countDown();
            String key = null;
            for (Future<Booking> call : calls) {
                Booking b = call.get();
                assertEquals("BA117", b.flight);
                key = key == null ? b.key : key;
                assertEquals(key, b.key, "every caller gets the one booking");
            }
            pool.shutdown();
            assertEquals(1, runs.get());
            assertEquals(
                    IdempotencyKeys.derive(
                            "book_flight", "acme", "conversation-1", "{\"flight\":\"BA117\"}"),
                    key,
                    "the key is the one every face derives");

            // Another run (conversation) is another key; a map input is the same key as its text.
            Booking other =
                    book.call(
                            "acme",
                            "conversation-2",
                            Map.of("flight", "BA117"),
                            context -> {
                                runs.incrementAndGet();
                                return new Booking("BA117", context.key());
                            });
            assertEquals(2, runs.get());
            Booking again =
                    book.call(
                            "acme",
                            "conversation-2",
                            "{ \"flight\" : \"BA117\" }",
                            context -> {
                                throw new AssertionError("must not run");
                            });
            assertEquals(other.key, again.key);
        }
    }

    @Test
    void an_explicit_operation_takes_its_key_per_call() {
        @Idempotent(strategy = KeyStrategy.EXPLICIT)
        class Policy {}
        AtomicInteger runs = new AtomicInteger();
        try (IdempotentOperation<String> charge =
                IdempotentOperation.builder("charge", String.class)
                        .policy(Policy.class.getAnnotation(Idempotent.class))
                        .store(store)
                        .build()) {
            assertEquals(KeyStrategy.EXPLICIT, charge.strategy());
            for (int i = 0; i < 3; i++) {
                assertEquals(
                        "CH-1",
                        charge.callWithKey(
                                null, null, "order-7", c -> "CH-" + runs.incrementAndGet()));
            }
            assertEquals(1, runs.get());
            IllegalStateException noKey =
                    assertThrows(
                            IllegalStateException.class,
                            () -> charge.call(null, null, "{}", c -> "x"));
            assertTrue(noKey.getMessage().contains("callWithKey"), noKey.getMessage());
        }
    }

    @Test
    void a_policy_the_core_refuses_is_refused_at_build() {
        @Idempotent(ttlSeconds = 0)
        class Policy {}
        IllegalArgumentException refused =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                IdempotentOperation.builder("charge", String.class)
                                        .policy(Policy.class.getAnnotation(Idempotent.class))
                                        .store(store)
                                        .build());
        assertTrue(refused.getMessage().contains("ttlSeconds"), refused.getMessage());
    }

    /** A tool declared by "another framework": no idemkit @Tool, just @Idempotent. */
    public static class Flights {
        final AtomicInteger runs = new AtomicInteger();
        final List<String> keys = new CopyOnWriteArrayList<>();

        @Idempotent
        public String bookFlight(String flight, long nights, IdempotencyContext context) {
            runs.incrementAndGet();
            keys.add(context.key());
            return flight + "/" + nights;
        }

        @Idempotent
        public void notify(String who) {
            runs.incrementAndGet();
        }

        public String lookUp(String flight) {
            return flight;
        }
    }

    private static Method method(String name) {
        for (Method m : Flights.class.getMethods()) {
            if (m.getName().equals(name)) {
                return m;
            }
        }
        throw new AssertionError(name);
    }

    @Test
    void tool_metadata_leaves_the_context_out_of_the_parameters() {
        Flights flights = new Flights();
        ToolMethod tool =
                ToolMethod.of(flights, method("bookFlight"), "book_flight", "Books a flight");
        assertEquals("book_flight", tool.name());
        assertEquals("Books a flight", tool.description());
        assertTrue(tool.isIdempotent());
        assertEquals(KeyStrategy.HASH_INPUT, tool.strategy());
        assertEquals(3600, tool.policy().ttlSeconds());
        assertEquals(
                List.of(
                        new ToolMethod.Parameter("flight", String.class, 0, false),
                        new ToolMethod.Parameter("nights", long.class, 1, false)),
                tool.parameters());
        assertTrue(tool.isContextParameter(2));
        assertFalse(tool.isContextParameter(0));
        assertFalse(ToolMethod.of(flights, method("lookUp"), null, null).isIdempotent());
        assertTrue(ToolMethod.of(flights, method("notify"), null, null).isVoid());
        assertThrows(
                IllegalArgumentException.class, () -> ToolMethod.of(flights, method("lookUp")));
    }

    @Test
    void a_tool_method_operation_binds_the_input_and_runs_once_per_key() {
        Flights flights = new Flights();
        ToolMethod tool = ToolMethod.of(flights, method("bookFlight"), "book_flight", null);
        List<IdempotencyEvent.Kind> events = new CopyOnWriteArrayList<>();
        try (IdempotentOperation<Object> book =
                IdempotentOperation.builder(tool)
                        .store(store)
                        .listener(e -> events.add(e.kind()))
                        .build()) {
            assertEquals("BA117/2", book.call("acme", "c1", "{\"flight\":\"BA117\",\"nights\":2}"));
            assertEquals("BA117/2", book.call("acme", "c1", "{\"nights\":2,\"flight\":\"BA117\"}"));
            assertEquals(
                    "BA117/2", book.call("acme", "c1", Map.of("flight", "BA117", "nights", 2)));
            assertEquals(1, flights.runs.get());
            assertEquals(
                    IdempotencyKeys.derive(
                            "book_flight", "acme", "c1", "{\"flight\":\"BA117\",\"nights\":2}"),
                    flights.keys.get(0));
            assertEquals(
                    List.of(
                            IdempotencyEvent.Kind.ACQUIRED,
                            IdempotencyEvent.Kind.DEDUPLICATED,
                            IdempotencyEvent.Kind.DEDUPLICATED),
                    events);

            // Input that does not bind: nothing runs, nothing is recorded.
            InvalidToolInputException lossy =
                    assertThrows(
                            InvalidToolInputException.class,
                            () -> book.call("acme", "c1", "{\"flight\":\"BA117\",\"nights\":2.5}"));
            assertEquals("nights", lossy.argument());
            assertEquals(1, flights.runs.get());
            IllegalStateException noBody =
                    assertThrows(
                            IllegalStateException.class,
                            () ->
                                    IdempotentOperation.builder("x", String.class)
                                            .store(store)
                                            .build()
                                            .call(null, null, "{}"));
            assertTrue(noBody.getMessage().contains("no tool method"), noBody.getMessage());
        }
        try (IdempotentOperation<Object> notify =
                IdempotentOperation.builder(
                                ToolMethod.of(flights, method("notify"), "notify", null))
                        .store(store)
                        .build()) {
            assertNull(notify.call(null, "c1", "{\"who\":\"ops\"}"));
            assertNull(notify.call(null, "c1", "{\"who\":\"ops\"}"));
            assertEquals(2, flights.runs.get());
        }
    }

    public static class SeatTools {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "book_seat")
        @Idempotent
        public Booking book(String flight) {
            runs.incrementAndGet();
            return new Booking(flight, "k-" + runs.get());
        }
    }

    @Test
    void replays_as_json_answer_a_repeat_with_the_recorded_tree_and_a_first_call_with_the_value()
            throws Exception {
        SeatTools flights = new SeatTools();
        Method method = SeatTools.class.getMethod("book", String.class);
        try (IdempotentOperation<Object> op =
                IdempotentOperation.builder(ToolMethod.of(flights, method))
                        .store(store)
                        .replaysAsJson()
                        .build()) {
            IdempotentOperation.Answer<Object> first =
                    op.answer("acme", null, "{\"flight\":\"BA117\"}");
            assertFalse(first.replayed());
            assertTrue(first.value() instanceof Booking, "the body's own value");
            IdempotentOperation.Answer<Object> again =
                    op.answer("acme", null, "{\"flight\":\"BA117\"}");
            assertTrue(again.replayed());
            assertTrue(
                    again.value() instanceof com.fasterxml.jackson.databind.JsonNode,
                    "the record as JSON: " + again.value());
            assertEquals("{\"flight\":\"BA117\",\"key\":\"k-1\"}", again.value().toString());
            assertEquals(1, flights.runs.get());
        }
        IllegalStateException refused =
                assertThrows(
                        IllegalStateException.class,
                        () -> IdempotentOperation.builder("book", Booking.class).replaysAsJson());
        assertTrue(refused.getMessage().contains("JsonNode.class"), refused.getMessage());
    }
}
