package dev.idemkit.springai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idemkit.IdempotencyContext;
import dev.idemkit.IdempotencyStore;
import dev.idemkit.Idempotent;
import dev.idemkit.InMemoryIdempotencyStore;
import dev.idemkit.InvalidToolInputException;
import dev.idemkit.RedisIdempotencyStore;
import dev.idemkit.RetryBehavior;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.model.ToolContext;
import org.springframework.ai.tool.ToolCallback;
import org.springframework.ai.tool.annotation.Tool;
import org.springframework.ai.tool.annotation.ToolParam;
import org.springframework.ai.tool.execution.ToolExecutionException;
import org.springframework.ai.tool.method.MethodToolCallback;

/**
 * Spring AI's ChatClient calling tools made idempotent, driven by a scripted model that repeats its
 * tool calls: in one response, from many threads, across conversations.
 */
class IdempotentToolCallbacksTest {
    private static final Pattern KEY_HEX = Pattern.compile("[0-9a-f]{64}");

    /** Tools written as Spring AI's docs show, plus @Idempotent. */
    public static class Flights {
        final AtomicInteger bookings = new AtomicInteger();
        final AtomicInteger searches = new AtomicInteger();
        final AtomicInteger notes = new AtomicInteger();
        final Set<String> seen = ConcurrentHashMap.newKeySet();

        @Tool(name = "book_flight", description = "Books a seat on a flight")
        @Idempotent
        public String bookFlight(
                @ToolParam(description = "the flight number") String flight,
                IdempotencyContext context) {
            seen.add(context.tenant() + "/" + context.run());
            return "BK-" + flight + "-" + bookings.incrementAndGet();
        }

        @Tool(description = "Counts free seats")
        public int seats(String flight) {
            return 40 + searches.incrementAndGet();
        }

        @Tool(description = "Notes a wish")
        @Idempotent
        public void note(String text) {
            notes.incrementAndGet();
        }
    }

    public static class Strict {
        final AtomicInteger charges = new AtomicInteger();

        @Tool(name = "charge", description = "Charges a card")
        @Idempotent(onCacheHit = RetryBehavior.FAIL_FAST)
        public String charge(long cents) {
            charges.incrementAndGet();
            return "charged " + cents;
        }
    }

    public static class WithToolContext {
        @Tool(description = "Reads the context")
        @Idempotent
        public String read(String what, ToolContext context) {
            return what;
        }
    }

    /** Whether IDEMKIT_REQUIRE_SERVICES ({@code 1}, or names) guarantees {@code what}. */
    static boolean required(String what) {
        String list = System.getenv().getOrDefault("IDEMKIT_REQUIRE_SERVICES", "");
        return java.util.Arrays.stream(list.split("[ ,]+"))
                .anyMatch(n -> n.equals("1") || n.equals(what));
    }

    static Stream<Arguments> stores() {
        Supplier<IdempotencyStore> memory = InMemoryIdempotencyStore::new;
        Supplier<IdempotencyStore> redis =
                () -> {
                    String url = System.getenv("IDEMKIT_REDIS_URL");
                    if (url == null || url.isEmpty()) {
                        String message =
                                "IDEMKIT_REDIS_URL is not set: SKIPPING the Spring AI Redis tests"
                                        + " (start the servers with scripts/services.sh start,"
                                        + " then eval \"$(scripts/services.sh env)\")";
                        if (required("IDEMKIT_REDIS_URL")) {
                            org.junit.jupiter.api.Assertions.fail(
                                    message
                                            + "; IDEMKIT_REQUIRE_SERVICES guarantees it, so this fails");
                        }
                        System.err.println("idemkit: " + message);
                        Assumptions.abort(message);
                    }
                    return new RedisIdempotencyStore(
                            url, "idemkit-spring-ai-test:" + UUID.randomUUID() + ":");
                };
        return Stream.of(Arguments.of("memory", memory), Arguments.of("redis", redis));
    }

    private static String ask(
            ScriptedChatModel model, IdempotentToolCallbacks tools, Map<String, Object> context) {
        return ChatClient.create(model)
                .prompt()
                .user("Book me on BA117")
                .toolCallbacks(tools.getToolCallbacks())
                .toolContext(context)
                .call()
                .content();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void four_identical_calls_in_one_response_book_one_flight(
            String name, Supplier<IdempotencyStore> stores) {
        Flights flights = new Flights();
        ScriptedChatModel model = new ScriptedChatModel(4, "book_flight", "{\"flight\":\"BA117\"}");
        try (IdempotencyStore store = stores.get();
                IdempotentToolCallbacks tools =
                        IdempotentToolCallbacks.builder()
                                .toolObjects(flights)
                                .store(store)
                                .build()) {
            String answer =
                    ask(
                            model,
                            tools,
                            IdempotentToolCallbacks.toolContext("acme", "conversation-1"));
            assertEquals(
                    "\"BK-BA117-1\" | \"BK-BA117-1\" | \"BK-BA117-1\" | \"BK-BA117-1\"", answer);
        }
        assertEquals(1, flights.bookings.get());
        assertEquals(Set.of("acme/conversation-1"), flights.seen);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void concurrent_conversations_run_once_per_conversation(
            String name, Supplier<IdempotencyStore> stores) throws Exception {
        Flights flights = new Flights();
        ScriptedChatModel model = new ScriptedChatModel(2, "book_flight", "{\"flight\":\"BA117\"}");
        int threads = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try (IdempotencyStore store = stores.get();
                IdempotentToolCallbacks tools =
                        IdempotentToolCallbacks.builder()
                                .toolObjects(flights)
                                .store(store)
                                .build()) {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<String>> answers = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                Map<String, Object> context =
                        IdempotentToolCallbacks.toolContext(null, "conversation-" + (i % 2));
                answers.add(
                        pool.submit(
                                () -> {
                                    start.await();
                                    return ask(model, tools, context);
                                }));
            }
            start.countDown();
            Set<String> bookings = ConcurrentHashMap.newKeySet();
            for (Future<String> answer : answers) {
                bookings.addAll(List.of(answer.get().split(" \\| ")));
            }
            assertEquals(2, flights.bookings.get());
            assertEquals(Set.of("\"BK-BA117-1\"", "\"BK-BA117-2\""), bookings);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void the_context_stays_out_of_the_schema_and_other_tools_stay_spring_ais() throws Exception {
        try (IdempotentToolCallbacks tools =
                IdempotentToolCallbacks.builder().toolObjects(new Flights()).build()) {
            ToolCallback book = callback(tools, "book_flight");
            assertTrue(book instanceof IdempotentToolCallback);
            assertEquals("Books a seat on a flight", book.getToolDefinition().description());
            JsonNode schema = new ObjectMapper().readTree(book.getToolDefinition().inputSchema());
            List<String> properties = new ArrayList<>();
            schema.get("properties").fieldNames().forEachRemaining(properties::add);
            assertEquals(List.of("flight"), properties);
            assertEquals("[\"flight\"]", schema.get("required").toString());
            assertTrue(callback(tools, "seats") instanceof MethodToolCallback);
        }
    }

    @Test
    void a_void_tool_answers_as_spring_ai_does_and_runs_once() {
        Flights flights = new Flights();
        ScriptedChatModel model = new ScriptedChatModel(3, "note", "{\"text\":\"window\"}");
        try (IdempotentToolCallbacks tools =
                IdempotentToolCallbacks.builder().toolObjects(flights).build()) {
            assertEquals(
                    "\"Done\" | \"Done\" | \"Done\"",
                    ask(model, tools, IdempotentToolCallbacks.toolContext(null, "c")));
        }
        assertEquals(1, flights.notes.get());
    }

    @Test
    void a_refused_repeat_reaches_the_model_as_short_text_without_the_key() {
        Strict strict = new Strict();
        ScriptedChatModel model = new ScriptedChatModel(2, "charge", "{\"cents\":1250}");
        try (IdempotentToolCallbacks tools =
                IdempotentToolCallbacks.builder().toolObjects(strict).build()) {
            String answer = ask(model, tools, IdempotentToolCallbacks.toolContext(null, "d"));
            assertEquals(
                    "\"charged 1250\" | charge was already called with these arguments; it was not"
                            + " run again",
                    answer);
            assertFalse(KEY_HEX.matcher(answer).find(), answer);
            // Called directly, the refusal is Spring AI's ToolExecutionException with idemkit's
            // exception behind the short text.
            ToolExecutionException refused =
                    assertThrows(
                            ToolExecutionException.class,
                            () ->
                                    callback(tools, "charge")
                                            .call(
                                                    "{\"cents\":1250}",
                                                    new ToolContext(
                                                            IdempotentToolCallbacks.toolContext(
                                                                    null, "d"))));
            IdempotentToolRefusedException cause =
                    (IdempotentToolRefusedException) refused.getCause();
            assertTrue(KEY_HEX.matcher(cause.refusal().getMessage()).find());
        }
        assertEquals(1, strict.charges.get());
    }

    @Test
    void a_lossy_number_is_refused_as_a_tool_error_and_nothing_runs() {
        Strict strict = new Strict();
        try (IdempotentToolCallbacks tools =
                IdempotentToolCallbacks.builder().toolObjects(strict).build()) {
            ToolExecutionException refused =
                    assertThrows(
                            ToolExecutionException.class,
                            () -> callback(tools, "charge").call("{\"cents\":12.5}"));
            assertTrue(refused.getCause() instanceof InvalidToolInputException);
        }
        assertEquals(0, strict.charges.get());
    }

    /** A card charge whose provider times out after the request left. */
    public static class Payments {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "charge_card", description = "Charges a card")
        @Idempotent(effect = dev.idemkit.Effect.EFFECTFUL)
        public String chargeCard(long cents) {
            runs.incrementAndGet();
            throw new java.io.UncheckedIOException(
                    new java.net.SocketTimeoutException("no answer from the payment provider"));
        }
    }

    @Test
    void the_call_that_ran_is_told_its_outcome_is_unknown_and_the_repeat_that_it_met_a_held_one() {
        Payments payments = new Payments();
        ScriptedChatModel model = new ScriptedChatModel(2, "charge_card", "{\"cents\":1250}");
        java.util.List<dev.idemkit.IndeterminateOutcomeException> errors =
                java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        java.util.List<String> texts =
                java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        try (IdempotentToolCallbacks tools =
                IdempotentToolCallbacks.builder()
                        .toolObjects(payments)
                        .modelErrorListener(
                                (tool, error, text) -> {
                                    errors.add((dev.idemkit.IndeterminateOutcomeException) error);
                                    texts.add(tool + ": " + text);
                                })
                        .build()) {
            String answer = ask(model, tools, IdempotentToolCallbacks.toolContext(null, "f"));
            String[] results = answer.split(" \\| ");
            assertEquals(2, results.length, answer);
            assertEquals(
                    "charge_card ran and failed, so its outcome is unknown: it may or may not have"
                            + " taken effect (do not call it again before checking its effect)",
                    results[0]);
            assertTrue(results[1].startsWith("an identical earlier charge_card call"), answer);
            assertTrue(results[1].contains("it was not run again"), answer);
            assertFalse(KEY_HEX.matcher(answer).find(), answer);
            assertEquals(
                    java.util.List.of("charge_card: " + results[0], "charge_card: " + results[1]),
                    texts);
        }
        assertEquals(1, payments.runs.get(), "the body ran once");
        assertTrue(errors.get(0).ranBody());
        assertFalse(errors.get(1).ranBody());
    }

    @Test
    void a_bad_argument_reaches_the_model_naming_the_tool_argument_and_fix_and_the_listener() {
        Strict strict = new Strict();
        java.util.List<String> told =
                java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        ScriptedChatModel model =
                new ScriptedChatModel(1, "charge", "{\"cents\":1250,\"currency\":\"EUR\"}");
        try (IdempotentToolCallbacks tools =
                IdempotentToolCallbacks.builder()
                        .toolObjects(strict)
                        .modelErrorListener(
                                (tool, error, text) ->
                                        told.add(
                                                tool
                                                        + ":"
                                                        + ((InvalidToolInputException) error)
                                                                .argument()))
                        .build()) {
            String answer = ask(model, tools, IdempotentToolCallbacks.toolContext(null, "g"));
            for (String part : new String[] {"charge", "currency", "it was not run", "again"}) {
                assertTrue(answer.contains(part), answer);
            }
        }
        assertEquals(0, strict.charges.get());
        assertEquals(java.util.List.of("charge:currency"), told);
    }

    @Test
    void a_tool_context_parameter_is_refused_when_built_naming_the_fix() {
        IllegalArgumentException refused =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                IdempotentToolCallbacks.builder()
                                        .toolObjects(new WithToolContext())
                                        .build());
        assertTrue(refused.getMessage().contains("IdempotencyContext"), refused.getMessage());
    }

    private static ToolCallback callback(IdempotentToolCallbacks tools, String name) {
        for (ToolCallback c : tools.getToolCallbacks()) {
            if (c.getToolDefinition().name().equals(name)) {
                return c;
            }
        }
        throw new AssertionError("no tool " + name);
    }
}
