package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Effect kinds, failure classification, retries and event listeners from the Java face (SPEC v1.1
 * rules 7 and 8), on the in-memory store and on real Redis and PostgreSQL. The core decides every
 * outcome; these tests check what a Java caller sees.
 */
class EffectsTest {
    /** A payment provider that timed out after the request left. */
    static class PaymentTimeout extends RuntimeException {
        private static final long serialVersionUID = 1L;

        PaymentTimeout() {
            super("no answer from the payment provider within 30 s");
        }
    }

    /** A declined card: permanent, its outcome known. */
    static class CardDeclined extends RuntimeException {
        private static final long serialVersionUID = 1L;

        CardDeclined() {
            super("card declined");
        }
    }

    public static class Tools {
        final AtomicInteger runs = new AtomicInteger();
        final List<String> keys = Collections.synchronizedList(new ArrayList<>());
        volatile RuntimeException next;
        volatile int failures;

        private String run(String flight) {
            runs.incrementAndGet();
            keys.add(IdempotencyContext.current().orElseThrow().key());
            if (failures > 0) {
                failures--;
                throw next;
            }
            return "booked:" + flight;
        }

        @Tool(name = "search")
        @Idempotent(effect = Effect.READ_ONLY)
        public String search(String flight) {
            return run(flight);
        }

        @Tool(name = "charge")
        @Idempotent(effect = Effect.EFFECTFUL)
        public String charge(String flight) {
            return run(flight);
        }

        @Tool(name = "book")
        @Idempotent(effect = Effect.EFFECTFUL, noEffect = IOException.class)
        public String book(String flight) {
            return run(flight);
        }

        @Tool(name = "pay")
        @Idempotent(permanent = CardDeclined.class)
        public String pay(String flight) {
            return run(flight);
        }

        @Tool(name = "notify")
        @Idempotent
        public String notify(String flight) {
            return run(flight);
        }
    }

    static Stream<Arguments> stores() {
        return Services.stores("effects");
    }

    private static ToolDispatcher dispatcher(IdempotencyStore store, Tools tools) {
        return ToolDispatcher.builder()
                .tools(tools)
                .store(store)
                .tenant("effects-" + UUID.randomUUID())
                .retry(
                        RetryPolicy.attempts(3)
                                .withBackoff(Duration.ofMillis(2), Duration.ofMillis(10)))
                .build();
    }

    private static Map<String, Object> flight() {
        return Map.of("flight", "LH-" + UUID.randomUUID());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void an_effectful_failure_is_held_and_every_repeat_is_indeterminate(
            String name, Supplier<IdempotencyStore> stores) {
        Tools tools = new Tools();
        try (IdempotencyStore store = stores.get();
                ToolDispatcher dispatcher = dispatcher(store, tools)) {
            Map<String, Object> input = flight();
            PaymentTimeout timeout = new PaymentTimeout();
            tools.next = timeout;
            tools.failures = 1;
            IndeterminateOutcomeException held =
                    assertThrows(
                            IndeterminateOutcomeException.class,
                            () -> dispatcher.call("charge", input));
            assertSame(timeout, held.getCause(), "the body's exception is the cause");
            assertEquals("charge", held.tool());
            assertTrue(
                    held.getMessage().contains(PaymentTimeout.class.getName()), held.getMessage());
            assertEquals(1, tools.runs.get(), "held failures are never retried");
            IndeterminateOutcomeException repeat =
                    assertThrows(
                            IndeterminateOutcomeException.class,
                            () -> dispatcher.call("charge", input));
            assertEquals(held.key(), repeat.key());
            assertEquals(1, tools.runs.get(), "a repeat of a held failure does not run");
            // The core tells the call that ran from the repeat, and so does the model's text.
            assertTrue(held.ranBody(), "this call ran the body");
            assertFalse(repeat.ranBody(), "the repeat ran nothing");
            assertTrue(
                    held.modelMessage().startsWith("charge ran and failed"), held.modelMessage());
            assertTrue(
                    repeat.modelMessage().startsWith("an identical earlier charge call"),
                    repeat.modelMessage());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void read_only_tools_claim_nothing_and_run_every_time(
            String name, Supplier<IdempotencyStore> stores) {
        Tools tools = new Tools();
        try (IdempotencyStore store = stores.get();
                ToolDispatcher dispatcher = dispatcher(store, tools)) {
            Map<String, Object> input = flight();
            dispatcher.call("search", input);
            dispatcher.call("search", input);
            assertEquals(2, tools.runs.get());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void listed_exception_types_and_their_subtypes_decide_before_the_effect(
            String name, Supplier<IdempotencyStore> stores) {
        Tools tools = new Tools();
        try (IdempotencyStore store = stores.get();
                ToolDispatcher dispatcher = dispatcher(store, tools)) {
            // `book` lists IOException as no effect; an UncheckedIOException is not one (the
            // match is by type, not by cause), so the EFFECTFUL default holds it.
            Map<String, Object> input = flight();
            tools.next = new UncheckedIOException(new ConnectException("refused"));
            tools.failures = 2;
            assertThrows(IndeterminateOutcomeException.class, () -> dispatcher.call("book", input));
            assertEquals(1, tools.runs.get());

            // Permanent on an IDEMPOTENT tool: recorded, the repeat gets the cached failure.
            Map<String, Object> card = flight();
            tools.next = new CardDeclined();
            tools.failures = 1;
            tools.runs.set(0);
            assertThrows(CardDeclined.class, () -> dispatcher.call("pay", card));
            CachedFailureException cached =
                    assertThrows(CachedFailureException.class, () -> dispatcher.call("pay", card));
            assertEquals(CardDeclined.class.getName(), cached.originalType());
            assertEquals(1, tools.runs.get(), "permanent failures are never retried");
        }
    }

    /** Throws a checked IOException subclass: the noEffect list matches it by its superclass. */
    public static class CheckedTools {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "book_checked")
        @Idempotent(effect = Effect.EFFECTFUL, noEffect = IOException.class)
        public String book(String flight) throws IOException {
            if (runs.incrementAndGet() < 3) {
                throw new ConnectException("connection refused");
            }
            return "booked:" + flight;
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void a_no_effect_failure_of_an_effectful_tool_is_retried_by_its_superclass(
            String name, Supplier<IdempotencyStore> stores) {
        CheckedTools tools = new CheckedTools();
        List<IdempotencyEvent> events = Collections.synchronizedList(new ArrayList<>());
        try (IdempotencyStore store = stores.get();
                ToolDispatcher dispatcher =
                        ToolDispatcher.builder()
                                .tools(tools)
                                .store(store)
                                .tenant("effects-" + UUID.randomUUID())
                                .retry(
                                        RetryPolicy.attempts(3)
                                                .withBackoff(
                                                        Duration.ofMillis(2),
                                                        Duration.ofMillis(10)))
                                .listener(events::add)
                                .build()) {
            Map<String, Object> input = flight();
            assertEquals("booked:" + input.get("flight"), dispatcher.call("book_checked", input));
            assertEquals(3, tools.runs.get());
            long retried =
                    events.stream().filter(e -> e.kind() == IdempotencyEvent.Kind.RETRIED).count();
            assertEquals(2, retried, events.toString());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void a_retried_call_keeps_its_key_and_stops_at_max_attempts(
            String name, Supplier<IdempotencyStore> stores) {
        Tools tools = new Tools();
        try (IdempotencyStore store = stores.get();
                ToolDispatcher dispatcher = dispatcher(store, tools)) {
            Map<String, Object> input = flight();
            tools.next = new IllegalStateException("503 from upstream");
            tools.failures = 2;
            assertEquals("booked:" + input.get("flight"), dispatcher.call("notify", input));
            assertEquals(3, tools.runs.get());
            assertEquals(1, tools.keys.stream().distinct().count(), "one key: " + tools.keys);

            Map<String, Object> always = flight();
            tools.failures = 10;
            tools.runs.set(0);
            assertThrows(IllegalStateException.class, () -> dispatcher.call("notify", always));
            assertEquals(3, tools.runs.get(), "maxAttempts runs in all");
            // Released: the next call runs.
            tools.failures = 0;
            assertEquals("booked:" + always.get("flight"), dispatcher.call("notify", always));
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    @ExpectedWarnings("an event listener threw")
    void listeners_see_every_answer_and_one_that_throws_breaks_nothing(
            String name, Supplier<IdempotencyStore> stores) {
        Tools tools = new Tools();
        List<IdempotencyEvent> events = Collections.synchronizedList(new ArrayList<>());
        try (IdempotencyStore store = stores.get();
                ToolDispatcher dispatcher = dispatcher(store, tools)) {
            store.addListener(
                    e -> {
                        throw new IllegalStateException("a broken listener");
                    });
            store.addListener(events::add);
            Map<String, Object> input = flight();
            dispatcher.call("notify", input);
            dispatcher.call("notify", input);
            List<IdempotencyEvent.Kind> kinds =
                    events.stream().map(IdempotencyEvent::kind).toList();
            assertEquals(
                    List.of(IdempotencyEvent.Kind.ACQUIRED, IdempotencyEvent.Kind.DEDUPLICATED),
                    kinds);
            IdempotencyEvent first = events.get(0);
            assertEquals("notify", first.tool());
            assertEquals(dispatcher.tenant(), first.tenant());
            assertEquals(64, first.key().length());
            assertEquals(first.key(), events.get(1).key());

            tools.next = new PaymentTimeout();
            tools.failures = 1;
            assertThrows(
                    IndeterminateOutcomeException.class, () -> dispatcher.call("charge", flight()));
            assertTrue(
                    events.stream().anyMatch(e -> e.kind() == IdempotencyEvent.Kind.INDETERMINATE),
                    events.toString());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void a_dispatcher_listener_sees_only_its_own_tools(
            String name, Supplier<IdempotencyStore> stores) {
        List<IdempotencyEvent> mine = Collections.synchronizedList(new ArrayList<>());
        try (IdempotencyStore store = stores.get();
                ToolDispatcher listened =
                        ToolDispatcher.builder()
                                .tools(new CheckedTools())
                                .store(store)
                                .listener(mine::add)
                                .build();
                ToolDispatcher other = dispatcher(store, new Tools())) {
            other.call("notify", flight());
            assertTrue(mine.isEmpty(), mine.toString());
            // Its own tool (no retry policy here): claimed, fails with a no-effect exception,
            // released.
            java.lang.reflect.UndeclaredThrowableException checked =
                    assertThrows(
                            java.lang.reflect.UndeclaredThrowableException.class,
                            () -> listened.call("book_checked", flight()));
            assertInstanceOf(ConnectException.class, checked.getCause());
            assertEquals(
                    List.of(IdempotencyEvent.Kind.ACQUIRED, IdempotencyEvent.Kind.RELEASED),
                    mine.stream().map(IdempotencyEvent::kind).toList());
            assertTrue(mine.stream().allMatch(e -> e.tool().equals("book_checked")));
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void an_invalid_retry_policy_is_refused_when_the_dispatcher_is_built(
            String name, Supplier<IdempotencyStore> stores) {
        try (IdempotencyStore store = stores.get()) {
            IllegalArgumentException refused =
                    assertThrows(
                            IllegalArgumentException.class,
                            () ->
                                    ToolDispatcher.builder()
                                            .tools(new Tools())
                                            .store(store)
                                            .retry(RetryPolicy.attempts(0))
                                            .build());
            assertTrue(refused.getMessage().contains("maxAttempts"), refused.getMessage());
            assertInstanceOf(IllegalArgumentException.class, refused);
        }
    }
}
