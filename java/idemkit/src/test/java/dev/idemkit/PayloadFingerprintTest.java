package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The payload fingerprint from the Java face (SPEC v1.1 rule 9, v1.2 §9 rule 1), on the in-memory
 * store and on real Redis and PostgreSQL: a key the application derives ({@code keyArguments}, an
 * {@code EXPLICIT} supplier) lets the other fields differ by default, answered from the record, and
 * a differing payload is refused with {@link PayloadMismatchException} when the policy asks. The
 * core decides; Java only maps the kind.
 */
class PayloadFingerprintTest {
    public static class Tools {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "book_lenient")
        @Idempotent(keyArguments = {"flight"})
        public String bookLenient(String flight, String requestId) {
            runs.incrementAndGet();
            return flight + "/" + requestId;
        }

        @Tool(name = "book_strict")
        @Idempotent(
                keyArguments = {"flight"},
                rejectPayloadMismatch = true)
        public String bookStrict(String flight, String requestId) {
            runs.incrementAndGet();
            return flight + "/" + requestId;
        }
    }

    /** The seed's create_issue: the title is the key, so that an edited body is the same issue. */
    public static class Issues implements IdempotencyKeySupplier {
        final AtomicInteger created = new AtomicInteger();

        @Override
        public String idempotencyKeyFor(Map<String, Object> input) {
            return (String) input.get("title");
        }

        @Tool(name = "create_issue")
        @Idempotent(strategy = KeyStrategy.EXPLICIT)
        public String createIssue(String title, String body) {
            return "issue #" + created.incrementAndGet();
        }

        @Tool(name = "create_issue_strict")
        @Idempotent(strategy = KeyStrategy.EXPLICIT, rejectPayloadMismatch = true)
        public String createIssueStrict(String title, String body) {
            return "issue #" + created.incrementAndGet();
        }
    }

    /**
     * EXPLICIT tools that opt in to the check: the key comes from the order id, the payload is the
     * whole input.
     */
    public static class Orders implements IdempotencyKeySupplier {
        final AtomicInteger runs = new AtomicInteger();

        @Override
        public String idempotencyKeyFor(Map<String, Object> input) {
            return "order-" + input.get("order");
        }

        @Tool(name = "charge")
        @Idempotent(strategy = KeyStrategy.EXPLICIT, rejectPayloadMismatch = true)
        public int charge(String order, int amount) {
            runs.incrementAndGet();
            return amount;
        }

        @Tool(name = "charge_again")
        @Idempotent(
                strategy = KeyStrategy.EXPLICIT,
                onCacheHit = RetryBehavior.RETURN_CACHED_IF_SUCCESS,
                cacheFailures = true,
                rejectPayloadMismatch = true)
        public int chargeAgain(String order, int amount, boolean decline) {
            runs.incrementAndGet();
            if (decline) {
                throw new IllegalStateException("declined");
            }
            return amount;
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void an_edited_body_under_the_same_title_is_the_same_issue_unless_the_policy_refuses_it(
            String name, Supplier<IdempotencyStore> stores) {
        Issues issues = new Issues();
        java.util.List<IdempotencyEvent.Kind> events =
                java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        try (IdempotencyStore store = stores.get();
                ToolDispatcher dispatcher =
                        ToolDispatcher.builder()
                                .tools(issues)
                                .store(store)
                                .tenant("fingerprint-" + UUID.randomUUID())
                                .listener(e -> events.add(e.kind()))
                                .build()) {
            Map<String, Object> first = Map.of("title", "Login fails", "body", "500 on submit");
            Map<String, Object> edited =
                    Map.of("title", "Login fails", "body", "500 on submit (Firefox only)");
            assertEquals("issue #1", dispatcher.call("create_issue", first));
            assertEquals(
                    "issue #1",
                    dispatcher.call("create_issue", edited),
                    "the edited body is answered from the record");
            assertEquals(1, issues.created.get(), "one issue");
            assertEquals(
                    java.util.List.of(
                            IdempotencyEvent.Kind.ACQUIRED, IdempotencyEvent.Kind.DEDUPLICATED),
                    events,
                    "the second answer is a replay");

            // Opted in: another body under the same title is another request.
            assertEquals("issue #2", dispatcher.call("create_issue_strict", first));
            PayloadMismatchException e =
                    assertThrows(
                            PayloadMismatchException.class,
                            () -> dispatcher.call("create_issue_strict", edited));
            assertEquals("create_issue_strict", e.tool());
            assertEquals(2, issues.created.get(), "a mismatched repeat runs nothing");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void an_explicit_key_repeated_with_another_input_is_refused_and_runs_nothing(
            String name, Supplier<IdempotencyStore> stores) {
        Orders orders = new Orders();
        try (IdempotencyStore store = stores.get();
                ToolDispatcher dispatcher =
                        ToolDispatcher.builder()
                                .tools(orders)
                                .store(store)
                                .tenant("fingerprint-" + UUID.randomUUID())
                                .build()) {
            assertEquals(5, dispatcher.call("charge", Map.of("order", "A-1", "amount", 5)));
            // The same input as JSON text, members in another order: answered from the record.
            assertEquals(5, dispatcher.call("charge", "{\"amount\":5.0,\"order\":\"A-1\"}"));
            PayloadMismatchException e =
                    assertThrows(
                            PayloadMismatchException.class,
                            () -> dispatcher.call("charge", Map.of("order", "A-1", "amount", 6)));
            assertEquals(ErrorKind.PAYLOAD_MISMATCH, e.kind());
            assertEquals("charge", e.tool());
            assertTrue(e.key() != null && e.key().length() == 64, String.valueOf(e.key()));
            assertThrows(
                    PayloadMismatchException.class,
                    () -> dispatcher.call("charge", "{\"order\":\"A-1\",\"amount\":6}"));
            assertEquals(1, orders.runs.get(), "a mismatched repeat runs nothing");

            // RETURN_CACHED_IF_SUCCESS runs a remembered failure again only for the same input.
            Map<String, Object> declined = Map.of("order", "B-2", "amount", 5, "decline", true);
            assertThrows(
                    IllegalStateException.class, () -> dispatcher.call("charge_again", declined));
            assertThrows(
                    PayloadMismatchException.class,
                    () ->
                            dispatcher.call(
                                    "charge_again",
                                    Map.of("order", "B-2", "amount", 7, "decline", false)));
            assertEquals(2, orders.runs.get(), "another input does not replace the failure");
            assertThrows(
                    IllegalStateException.class, () -> dispatcher.call("charge_again", declined));
            assertEquals(3, orders.runs.get(), "the same input runs again");
        }
    }

    static Stream<Arguments> stores() {
        return Services.stores("fingerprint");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void key_arguments_let_a_request_id_differ_unless_the_policy_refuses_it(
            String name, Supplier<IdempotencyStore> stores) {
        Tools tools = new Tools();
        try (IdempotencyStore store = stores.get();
                ToolDispatcher dispatcher =
                        ToolDispatcher.builder()
                                .tools(tools)
                                .store(store)
                                .tenant("fingerprint-" + UUID.randomUUID())
                                .build()) {
            String flight = "BA" + UUID.randomUUID();
            Map<String, Object> first = Map.of("flight", flight, "requestId", "r-1");
            Map<String, Object> retry = Map.of("flight", flight, "requestId", "r-2");

            assertEquals(flight + "/r-1", dispatcher.call("book_lenient", first));
            assertEquals(
                    flight + "/r-1",
                    dispatcher.call("book_lenient", retry),
                    "by default the booking is answered from the record");
            assertEquals(1, tools.runs.get());

            assertEquals(flight + "/r-1", dispatcher.call("book_strict", first));
            assertEquals(flight + "/r-1", dispatcher.call("book_strict", first));
            PayloadMismatchException e =
                    assertThrows(
                            PayloadMismatchException.class,
                            () -> dispatcher.call("book_strict", retry));
            assertEquals(ErrorKind.PAYLOAD_MISMATCH, e.kind());
            assertEquals(11, e.kind().code());
            assertEquals("book_strict", e.tool());
            assertTrue(e.key() != null && e.key().length() == 64, String.valueOf(e.key()));
            assertTrue(e.getMessage().contains("another payload"), e.getMessage());
            assertEquals(2, tools.runs.get(), "a mismatched repeat runs nothing");
        }
    }

    @Test
    void the_fingerprint_ignores_member_order_and_number_spelling() {
        assertEquals(
                IdempotencyKeys.fingerprint("{\"a\":1,\"b\":2.0}"),
                IdempotencyKeys.fingerprint("{\"b\":2,\"a\":1}"));
        assertEquals(ErrorKind.PAYLOAD_MISMATCH, ErrorKind.fromCode(11));
    }
}
