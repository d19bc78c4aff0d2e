package dev.idemkit.springai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.IdempotencyEvent;
import dev.idemkit.IdempotencyStore;
import dev.idemkit.Idempotent;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.model.ToolContext;
import org.springframework.ai.model.tool.ToolCallingManager;
import org.springframework.ai.tool.annotation.Tool;

/**
 * Tools wired Spring AI's own way ({@code .tools(new Flights())}, no Spring bean, no proxy) behind
 * {@link IdempotentToolCallingManager}: a real ChatClient over a scripted model that asks for the
 * same call several times. The body runs are counted in the tool.
 */
class IdempotentToolCallingManagerTest {
    private static final String BOOK = "{\"flight\":\"BA117\"}";

    public static class Flights {
        final AtomicInteger bookings = new AtomicInteger();
        final AtomicInteger searches = new AtomicInteger();

        @Tool(name = "book_flight", description = "Books a seat on a flight")
        @Idempotent
        public String bookFlight(String flight) {
            return "BK-" + flight + "-" + bookings.incrementAndGet();
        }

        @Tool(description = "Counts free seats")
        public int seats(String flight) {
            return 40 + searches.incrementAndGet();
        }
    }

    public static class WithToolContext {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(description = "Reads the context")
        @Idempotent
        public String read(String what, ToolContext context) {
            runs.incrementAndGet();
            return what;
        }
    }

    private static ScriptedChatModel model(
            int repeats, String tool, String arguments, IdempotentToolCallbacks tools) {
        return new ScriptedChatModel(
                repeats,
                tool,
                arguments,
                tools.toolCallingManager(ToolCallingManager.builder().build()));
    }

    private static String ask(ScriptedChatModel model, Object tools, String conversation) {
        return ChatClient.create(model)
                .prompt()
                .user("Book me on BA117")
                .tools(tools)
                .toolContext(IdempotentToolCallbacks.toolContext("acme", conversation))
                .call()
                .content();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.idemkit.springai.IdempotentToolCallbacksTest#stores")
    void a_new_made_tool_object_books_once_in_one_response_across_turns_and_from_8_threads(
            String name, Supplier<IdempotencyStore> stores) throws Exception {
        Flights flights = new Flights();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try (IdempotencyStore store = stores.get();
                IdempotentToolCallbacks tools =
                        IdempotentToolCallbacks.builder().store(store).build()) {
            ScriptedChatModel model = model(4, "book_flight", BOOK, tools);
            String once = "\"BK-BA117-1\"";
            assertEquals(
                    String.join(" | ", Collections.nCopies(4, once)), ask(model, flights, "c"));
            assertEquals(1, flights.bookings.get(), "four calls in one response");
            // The next turn: a new tool object each prompt, as an app writes it.
            assertEquals(
                    String.join(" | ", Collections.nCopies(4, once)), ask(model, flights, "c"));
            CountDownLatch start = new CountDownLatch(1);
            List<Future<String>> answers = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                answers.add(
                        pool.submit(
                                () -> {
                                    start.await();
                                    return ask(model, flights, "c");
                                }));
            }
            start.countDown();
            for (Future<String> a : answers) {
                assertEquals(String.join(" | ", Collections.nCopies(4, once)), a.get());
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(1, flights.bookings.get(), "40 identical calls, one body run");
    }

    @Test
    void a_callback_already_idemkits_is_protected_once_with_the_same_events() {
        List<IdempotencyEvent> direct = Collections.synchronizedList(new ArrayList<>());
        List<IdempotencyEvent> managed = Collections.synchronizedList(new ArrayList<>());
        Flights first = new Flights();
        try (IdempotentToolCallbacks tools =
                IdempotentToolCallbacks.builder()
                        .toolObjects(first)
                        .listener(direct::add)
                        .build()) {
            // Spring AI's plain manager: the reference count of events.
            ChatClient.create(new ScriptedChatModel(4, "book_flight", BOOK))
                    .prompt()
                    .user("Book")
                    .toolCallbacks(tools.getToolCallbacks())
                    .toolContext(IdempotentToolCallbacks.toolContext(null, "x"))
                    .call()
                    .content();
        }
        Flights second = new Flights();
        try (IdempotentToolCallbacks tools =
                IdempotentToolCallbacks.builder()
                        .toolObjects(second)
                        .listener(managed::add)
                        .build()) {
            ChatClient.create(model(4, "book_flight", BOOK, tools))
                    .prompt()
                    .user("Book")
                    .toolCallbacks(tools.getToolCallbacks())
                    .toolContext(IdempotentToolCallbacks.toolContext(null, "x"))
                    .call()
                    .content();
        }
        assertEquals(1, first.bookings.get());
        assertEquals(1, second.bookings.get());
        assertEquals(kinds(direct), kinds(managed), "no double events");
        assertTrue(direct.size() >= 4, direct.toString());
    }

    @Test
    void a_new_made_object_tells_the_listeners_once_per_event() {
        List<IdempotencyEvent> wrapped = Collections.synchronizedList(new ArrayList<>());
        List<IdempotencyEvent> managed = Collections.synchronizedList(new ArrayList<>());
        try (IdempotentToolCallbacks tools =
                IdempotentToolCallbacks.builder()
                        .toolObjects(new Flights())
                        .listener(wrapped::add)
                        .build()) {
            ChatClient.create(new ScriptedChatModel(4, "book_flight", BOOK))
                    .prompt()
                    .user("Book")
                    .toolCallbacks(tools.getToolCallbacks())
                    .toolContext(IdempotentToolCallbacks.toolContext(null, "y"))
                    .call()
                    .content();
        }
        Flights flights = new Flights();
        try (IdempotentToolCallbacks tools =
                IdempotentToolCallbacks.builder().listener(managed::add).build()) {
            ask(model(4, "book_flight", BOOK, tools), flights, "y");
        }
        assertEquals(1, flights.bookings.get());
        assertEquals(kinds(wrapped), kinds(managed));
    }

    @Test
    void an_unannotated_tool_runs_each_time_as_spring_ai_runs_it() {
        Flights flights = new Flights();
        try (IdempotentToolCallbacks tools = IdempotentToolCallbacks.builder().build()) {
            assertEquals("41 | 42 | 43", ask(model(3, "seats", BOOK, tools), flights, "s"));
        }
        assertEquals(3, flights.searches.get());
    }

    @Test
    void an_idempotent_tool_that_cannot_be_protected_is_refused_naming_it_and_never_runs() {
        WithToolContext tool = new WithToolContext();
        // The refusal is also logged as a warning: captured here and asserted, not printed.
        java.util.logging.Logger log =
                java.util.logging.Logger.getLogger(IdempotentToolCallingManager.class.getName());
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
        try (IdempotentToolCallbacks tools = IdempotentToolCallbacks.builder().build()) {
            String answer = ask(model(2, "read", "{\"what\":\"seat\"}", tools), tool, "t");
            for (String part : new String[] {"`read`", "not run", "IdempotencyContext"}) {
                assertTrue(answer.contains(part), answer);
            }
        } finally {
            log.removeHandler(capture);
            log.setUseParentHandlers(true);
        }
        assertEquals(0, tool.runs.get());
        assertTrue(warnings.stream().anyMatch(w -> w.contains("tool `read`")), warnings.toString());
    }

    private static List<String> kinds(List<IdempotencyEvent> events) {
        List<String> kinds = new ArrayList<>();
        for (IdempotencyEvent e : events) {
            kinds.add(e.kind() + ":" + e.tool());
        }
        return kinds;
    }
}
