package dev.idemkit.langchain4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.Effect;
import dev.idemkit.IdempotencyContext;
import dev.idemkit.IdempotencyStore;
import dev.idemkit.Idempotent;
import dev.idemkit.IndeterminateOutcomeException;
import dev.idemkit.InvalidToolInputException;
import dev.idemkit.RetryBehavior;
import dev.langchain4j.agent.tool.P;
import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.agent.tool.ToolMemoryId;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.memory.chat.MessageWindowChatMemory;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.MemoryId;
import dev.langchain4j.service.UserMessage;
import dev.langchain4j.service.tool.AiServiceTool;
import java.io.UncheckedIOException;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * LangChain4j's AiServices calling tools made idempotent, driven by a scripted model that repeats
 * its tool calls: in one response, concurrently from many threads, across conversations.
 */
class IdempotentToolsTest {
    private static final Pattern KEY_HEX = Pattern.compile("[0-9a-f]{64}");

    interface Assistant {
        String chat(@MemoryId String conversation, @UserMessage String message);
    }

    /** Tools written as LangChain4j's docs show, plus @Idempotent. */
    public static class Flights {
        final AtomicInteger bookings = new AtomicInteger();
        final AtomicInteger searches = new AtomicInteger();
        final AtomicInteger notes = new AtomicInteger();
        final Set<String> runs = ConcurrentHashMap.newKeySet();
        final Set<String> tenants = ConcurrentHashMap.newKeySet();

        @Tool("Books a seat on a flight")
        @Idempotent
        public String bookFlight(
                @P("the flight number") String flight, IdempotencyContext context) {
            runs.add(String.valueOf(context.run()));
            tenants.add(String.valueOf(context.tenant()));
            return "BK-" + flight + "-" + bookings.incrementAndGet();
        }

        @Tool(name = "seats", value = "Counts free seats")
        public int seats(String flight) {
            return 40 + searches.incrementAndGet();
        }

        @Tool(name = "note")
        @Idempotent
        public void note(@P(name = "text", description = "what to note") String body) {
            notes.incrementAndGet();
        }
    }

    /** One that refuses repeats, and one that sums a long. */
    public static class Strict {
        final AtomicInteger charges = new AtomicInteger();

        @Tool(name = "charge")
        @Idempotent(onCacheHit = RetryBehavior.FAIL_FAST)
        public String charge(long cents) {
            charges.incrementAndGet();
            return "charged " + cents;
        }
    }

    private static Assistant assistant(ScriptedModel model, IdempotentTools tools) {
        return AiServices.builder(Assistant.class)
                .chatModel(model)
                .chatMemoryProvider(id -> MessageWindowChatMemory.withMaxMessages(50))
                .tools(tools.aiServiceTools())
                .executeToolsConcurrently()
                .build();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.idemkit.langchain4j.Services#stores")
    void four_identical_calls_in_one_response_book_one_flight(
            String name, Supplier<IdempotencyStore> stores) {
        Flights flights = new Flights();
        ScriptedModel model = new ScriptedModel(4);
        try (IdempotencyStore store = stores.get();
                IdempotentTools tools =
                        IdempotentTools.builder()
                                .tools(flights)
                                .store(store)
                                .tenant("acme")
                                .build()) {
            String answer =
                    assistant(model, tools)
                            .chat("conversation-1", "bookFlight {\"flight\":\"BA117\"}");
            assertEquals("BK-BA117-1 | BK-BA117-1 | BK-BA117-1 | BK-BA117-1", answer);
        }
        assertEquals(1, flights.bookings.get());
        assertEquals(Set.of("conversation-1"), flights.runs);
        assertEquals(Set.of("acme"), flights.tenants);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.idemkit.langchain4j.Services#stores")
    void concurrent_conversations_run_once_per_conversation(
            String name, Supplier<IdempotencyStore> stores) throws Exception {
        Flights flights = new Flights();
        ScriptedModel model = new ScriptedModel(2);
        int threads = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try (IdempotencyStore store = stores.get();
                IdempotentTools tools =
                        IdempotentTools.builder().tools(flights).store(store).build()) {
            Assistant assistant = assistant(model, tools);
            CountDownLatch start = new CountDownLatch(1);
            List<Future<String>> answers = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                String conversation = "conversation-" + (i % 2);
                answers.add(
                        pool.submit(
                                () -> {
                                    start.await();
                                    return assistant.chat(
                                            conversation, "bookFlight {\"flight\":\"BA117\"}");
                                }));
            }
            start.countDown();
            Set<String> bookings = ConcurrentHashMap.newKeySet();
            for (Future<String> answer : answers) {
                for (String part : answer.get().split(" \\| ")) {
                    bookings.add(part);
                }
            }
            // Two conversations, two keys: each booked once, whatever the interleaving.
            assertEquals(2, flights.bookings.get());
            assertEquals(Set.of("BK-BA117-1", "BK-BA117-2"), bookings);
            assertEquals(Set.of("conversation-0", "conversation-1"), flights.runs);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void a_run_strategy_of_none_deduplicates_across_conversations() {
        Flights flights = new Flights();
        ScriptedModel model = new ScriptedModel(1);
        try (IdempotentTools tools =
                IdempotentTools.builder().tools(flights).run(context -> null).build()) {
            Assistant assistant = assistant(model, tools);
            assertEquals("BK-LH400-1", assistant.chat("a", "bookFlight {\"flight\":\"LH400\"}"));
            assertEquals("BK-LH400-1", assistant.chat("b", "bookFlight {\"flight\":\"LH400\"}"));
        }
        assertEquals(1, flights.bookings.get());
    }

    @Test
    void the_context_stays_out_of_the_schema_and_p_names_are_published_and_bound() {
        try (IdempotentTools tools = IdempotentTools.builder().tools(new Flights()).build()) {
            ToolSpecification book = spec(tools, "bookFlight");
            assertEquals("Books a seat on a flight", book.description());
            assertEquals(Set.of("flight"), book.parameters().properties().keySet());
            assertEquals(List.of("flight"), book.parameters().required());
            assertEquals(Set.of("text"), spec(tools, "note").parameters().properties().keySet());
            // IdempotencyContext is recursive (its outer call), so LangChain4j defines it.
            assertTrue(
                    book.parameters().definitions() == null
                            || book.parameters().definitions().isEmpty(),
                    String.valueOf(book.parameters()));
        }
        try (IdempotentTools tools = IdempotentTools.builder().tools(new Payments()).build()) {
            ToolSpecification charge = spec(tools, "charge_card");
            assertEquals(Set.of("cents"), charge.parameters().properties().keySet());
            assertTrue(
                    charge.parameters().definitions() == null
                            || charge.parameters().definitions().isEmpty(),
                    String.valueOf(charge.parameters().definitions()));
        }
    }

    @Test
    void a_void_tool_answers_success_and_runs_once_and_other_tools_run_as_langchain4j_runs_them() {
        Flights flights = new Flights();
        ScriptedModel model = new ScriptedModel(3);
        try (IdempotentTools tools = IdempotentTools.builder().tools(flights).build()) {
            Assistant assistant = assistant(model, tools);
            assertEquals(
                    "Success | Success | Success",
                    assistant.chat("c", "note {\"text\":\"window seat\"}"));
            String seats = assistant.chat("c", "seats {\"flight\":\"BA117\"}");
            assertEquals(3, seats.split(" \\| ").length);
        }
        assertEquals(1, flights.notes.get());
        assertEquals(3, flights.searches.get());
    }

    @Test
    void a_refused_repeat_reaches_the_model_as_short_tool_error_text_without_the_key() {
        Strict strict = new Strict();
        ScriptedModel model = new ScriptedModel(2);
        try (IdempotentTools tools = IdempotentTools.builder().tools(strict).build()) {
            Assistant assistant =
                    AiServices.builder(Assistant.class)
                            .chatModel(model)
                            .chatMemoryProvider(id -> MessageWindowChatMemory.withMaxMessages(50))
                            .tools(tools.aiServiceTools())
                            .build();
            String answer = assistant.chat("d", "charge {\"cents\":1250}");
            assertEquals(
                    "charged 1250 | charge was already called with these arguments; it was not run"
                            + " again",
                    answer);
        }
        assertEquals(1, strict.charges.get());
        ToolExecutionResultMessage refused = model.results.get(1);
        assertTrue(refused.isError());
        assertFalse(KEY_HEX.matcher(refused.text()).find(), refused.text());
    }

    @Test
    void a_bad_argument_is_the_tools_error_text_for_the_model_and_the_turn_goes_on() {
        Strict strict = new Strict();
        List<String> told = Collections.synchronizedList(new ArrayList<>());
        ScriptedModel model = new ScriptedModel(1);
        try (IdempotentTools tools =
                IdempotentTools.builder()
                        .tools(strict)
                        .modelErrorListener(
                                (tool, error, text) ->
                                        told.add(
                                                tool
                                                        + ":"
                                                        + ((InvalidToolInputException) error)
                                                                .argument()))
                        .build()) {
            Assistant assistant = assistant(model, tools);
            // 12.5 for a long, and an argument the model made up: chat() answers, nothing runs.
            String lossy = assistant.chat("e", "charge {\"cents\":12.5}");
            for (String part : new String[] {"charge", "cents", "12.5", "whole number"}) {
                assertTrue(lossy.contains(part), lossy);
            }
            assertTrue(lossy.contains("it was not run"), lossy);
            String extra = assistant.chat("e", "charge {\"cents\":1250,\"currency\":\"EUR\"}");
            for (String part : new String[] {"charge", "currency", "cents", "call it again"}) {
                assertTrue(extra.contains(part), extra);
            }
            // The corrected call runs.
            assertEquals("charged 1250", assistant.chat("e", "charge {\"cents\":1250}"));
        }
        assertEquals(1, strict.charges.get());
        assertTrue(model.results.get(0).isError());
        assertTrue(model.results.get(1).isError());
        assertEquals(List.of("charge:cents", "charge:currency"), told);
    }

    @Test
    void a_model_error_listener_that_throws_changes_nothing_the_model_reads() {
        Strict strict = new Strict();
        ScriptedModel model = new ScriptedModel(2);
        // The listener's failure is logged as a warning: captured here and asserted, not printed.
        java.util.logging.Logger log =
                java.util.logging.Logger.getLogger(IdempotentTools.class.getName());
        List<String> warnings = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler capture =
                new java.util.logging.Handler() {
                    @Override
                    public void publish(java.util.logging.LogRecord r) {
                        warnings.add(r.getMessage());
                    }

                    @Override
                    public void flush() {}

                    @Override
                    public void close() {}
                };
        log.addHandler(capture);
        log.setUseParentHandlers(false);
        try (IdempotentTools tools =
                IdempotentTools.builder()
                        .tools(strict)
                        .modelErrorListener(
                                (tool, error, text) -> {
                                    throw new IllegalStateException("a broken listener");
                                })
                        .build()) {
            // Concurrent tool calls: either may be the one that ran.
            String answer = assistant(model, tools).chat("h", "charge {\"cents\":7}");
            assertEquals(
                    Set.of(
                            "charged 7",
                            "charge was already called with these arguments; it was not run"
                                    + " again"),
                    Set.of(answer.split(" \\| ")),
                    answer);
        } finally {
            log.removeHandler(capture);
            log.setUseParentHandlers(true);
        }
        assertEquals(1, strict.charges.get());
        assertTrue(
                warnings.stream()
                        .anyMatch(w -> w.contains("a ModelErrorListener failed on `charge`")),
                warnings.toString());
    }

    /** A card charge whose provider times out after the request left. */
    public static class Payments {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "charge_card")
        @Idempotent(effect = Effect.EFFECTFUL)
        public String chargeCard(long cents, IdempotencyContext context) {
            runs.incrementAndGet();
            throw new UncheckedIOException(
                    new SocketTimeoutException("no answer from the payment provider"));
        }
    }

    @Test
    void the_call_that_ran_is_told_its_outcome_is_unknown_and_the_repeat_that_it_met_a_held_one() {
        Payments payments = new Payments();
        ScriptedModel model = new ScriptedModel(2);
        List<IndeterminateOutcomeException> errors =
                Collections.synchronizedList(new ArrayList<>());
        List<String> texts = Collections.synchronizedList(new ArrayList<>());
        try (IdempotentTools tools =
                IdempotentTools.builder()
                        .tools(payments)
                        .modelErrorListener(
                                (tool, error, text) -> {
                                    errors.add((IndeterminateOutcomeException) error);
                                    texts.add(tool + ": " + text);
                                })
                        .build()) {
            Assistant assistant =
                    AiServices.builder(Assistant.class)
                            .chatModel(model)
                            .chatMemoryProvider(id -> MessageWindowChatMemory.withMaxMessages(50))
                            .tools(tools.aiServiceTools())
                            .build();
            String answer = assistant.chat("f", "charge_card {\"cents\":1250}");
            String[] results = answer.split(" \\| ");
            assertEquals(2, results.length, answer);
            assertEquals(
                    "charge_card ran and failed, so its outcome is unknown: it may or may not have"
                            + " taken effect (do not call it again before checking its effect)",
                    results[0]);
            assertTrue(results[1].startsWith("an identical earlier charge_card call"), answer);
            assertTrue(results[1].contains("it was not run again"), answer);
            assertEquals(
                    List.of("charge_card: " + results[0], "charge_card: " + results[1]), texts);
        }
        assertEquals(1, payments.runs.get(), "the body ran once");
        assertEquals(2, errors.size());
        assertTrue(errors.get(0).ranBody());
        assertFalse(errors.get(1).ranBody());
        assertTrue(errors.get(0).getCause() instanceof UncheckedIOException, "the body's error");
        for (ToolExecutionResultMessage m : model.results) {
            assertTrue(m.isError());
            assertFalse(KEY_HEX.matcher(m.text()).find(), m.text());
        }
    }

    public static class MemoryIdTool {
        @Tool
        @Idempotent
        public String remember(@ToolMemoryId Object memoryId, String what) {
            return what;
        }
    }

    @Test
    void a_parameter_langchain4j_fills_in_is_refused_when_built_naming_the_fix() {
        IllegalArgumentException refused =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> IdempotentTools.builder().tools(new MemoryIdTool()).build());
        assertTrue(refused.getMessage().contains("@ToolMemoryId"), refused.getMessage());
        assertTrue(refused.getMessage().contains("IdempotencyContext"), refused.getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () -> IdempotentTools.builder().tools(new Object()).build());
    }

    private static ToolSpecification spec(IdempotentTools tools, String name) {
        for (AiServiceTool t : tools.aiServiceTools()) {
            if (t.name().equals(name)) {
                return t.toolSpecification();
            }
        }
        assertNull(name, "no tool named " + name);
        return null;
    }
}
