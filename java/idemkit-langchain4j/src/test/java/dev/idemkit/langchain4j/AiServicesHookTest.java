package dev.idemkit.langchain4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.IdempotencyStore;
import dev.idemkit.Idempotent;
import dev.langchain4j.agent.tool.P;
import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.agent.tool.ToolSpecifications;
import dev.langchain4j.memory.chat.MessageWindowChatMemory;
import dev.langchain4j.service.AiServiceContext;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.MemoryId;
import dev.langchain4j.service.UserMessage;
import dev.langchain4j.service.tool.DefaultToolExecutor;
import dev.langchain4j.service.tool.ToolProviderResult;
import dev.langchain4j.service.tool.ToolService;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Plain LangChain4j wiring, {@code AiServices.builder(Agent.class).tools(new Flights())}, with no
 * idemkit wrapper in the app's code: the META-INF/services hook runs the @Idempotent tools through
 * IdempotentTools, or refuses the service loudly; it never runs them unprotected.
 */
class AiServicesHookTest {
    interface Agent {
        String chat(@MemoryId String conversation, @UserMessage String message);
    }

    public static class Flights {
        final AtomicInteger booked = new AtomicInteger();

        @Tool(name = "book", value = "Books a seat and returns the booking reference")
        @Idempotent
        public String book(@P("the flight number") String flight) {
            return "BK-" + flight + "-" + booked.incrementAndGet();
        }
    }

    /** No @Idempotent: LangChain4j's own business. */
    public static class Seats {
        final AtomicInteger counted = new AtomicInteger();

        @Tool(name = "seats", value = "Counts free seats")
        public int seats(String flight) {
            return 40 + counted.incrementAndGet();
        }
    }

    @AfterEach
    void forget_the_defaults() {
        IdempotentTools.clearDefaults();
    }

    private static Agent agent(ScriptedModel model, Object... tools) {
        return AiServices.builder(Agent.class)
                .chatModel(model)
                .chatMemoryProvider(id -> MessageWindowChatMemory.withMaxMessages(50))
                .tools(tools)
                .executeToolsConcurrently()
                .build();
    }

    @Test
    void the_hook_is_in_place_on_the_pinned_langchain4j_version() throws Exception {
        // Fails when an upgrade stops asking the AiServiceContextFactory, or replaces the tool
        // service: then .tools(new Flights()) would bypass idemkit.
        AiServiceContext context = AiServiceContext.create(Agent.class);
        assertInstanceOf(IdempotentToolService.class, context.toolService);
        Properties pom = new Properties();
        try (InputStream in =
                AiServices.class.getResourceAsStream(
                        "/META-INF/maven/dev.langchain4j/langchain4j/pom.properties")) {
            pom.load(in);
        }
        assertEquals(
                "1.19.0",
                pom.getProperty("version"),
                "the AiServices hook is verified on LangChain4j 1.19.0: re-verify it (this test and"
                        + " AiServicesHookTest's others) before changing langchain4j.version");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.idemkit.langchain4j.Services#stores")
    void four_requests_across_turns_book_one_flight(
            String name, Supplier<IdempotencyStore> stores) {
        Flights flights = new Flights();
        try (IdempotencyStore store = stores.get()) {
            IdempotentTools.defaults(store);
            Agent agent = agent(new ScriptedModel(1, "book", "{\"flight\":\"BA117\"}"), flights);
            for (int i = 0; i < 4; i++) {
                assertEquals("BK-BA117-1", agent.chat("conversation-42", "Book me on BA117"));
            }
        }
        assertEquals(1, flights.booked.get(), "the body ran once");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.idemkit.langchain4j.Services#stores")
    void four_identical_calls_in_one_response_book_one_flight(
            String name, Supplier<IdempotencyStore> stores) {
        Flights flights = new Flights();
        try (IdempotencyStore store = stores.get()) {
            IdempotentTools.defaults(IdempotentTools.builder().store(store).tenant("acme"));
            Agent agent = agent(new ScriptedModel(4), flights);
            assertEquals(
                    "BK-LH400-1 | BK-LH400-1 | BK-LH400-1 | BK-LH400-1",
                    agent.chat("c", "book {\"flight\":\"LH400\"}"));
        }
        assertEquals(1, flights.booked.get(), "the body ran once");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.idemkit.langchain4j.Services#stores")
    void eight_threads_asking_at_once_book_one_flight(
            String name, Supplier<IdempotencyStore> stores) throws Exception {
        Flights flights = new Flights();
        int threads = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try (IdempotencyStore store = stores.get()) {
            IdempotentTools.defaults(store);
            Agent agent = agent(new ScriptedModel(1, "book", "{\"flight\":\"AF7\"}"), flights);
            CountDownLatch start = new CountDownLatch(1);
            List<Future<String>> answers = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                answers.add(
                        pool.submit(
                                () -> {
                                    start.await();
                                    return agent.chat("conversation-8", "Book me on AF7");
                                }));
            }
            start.countDown();
            // Chats of one conversation share its memory: an answer may join several results.
            for (Future<String> answer : answers) {
                for (String part : answer.get().split(" \\| ")) {
                    assertEquals("BK-AF7-1", part);
                }
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(1, flights.booked.get(), "the body ran once");
    }

    @Test
    void without_a_store_the_service_is_refused_naming_the_tool_and_the_fix() {
        Flights flights = new Flights();
        IllegalStateException refused =
                assertThrows(
                        IllegalStateException.class, () -> agent(new ScriptedModel(4), flights));
        String m = refused.getMessage();
        assertTrue(m.contains("`book`"), m);
        assertTrue(m.contains(Flights.class.getName() + ".book"), m);
        assertTrue(m.contains("IdempotentTools.defaults(store)"), m);
        assertEquals(0, flights.booked.get(), "the body never ran");
    }

    @Test
    void an_unannotated_tool_object_is_left_as_langchain4j_runs_it() {
        Seats seats = new Seats();
        // No defaults needed: nothing of idemkit's is involved.
        AiServiceContext context = AiServiceContext.create(Agent.class);
        Agent agent =
                AiServices.<Agent>builder(context)
                        .chatModel(new ScriptedModel(3))
                        .chatMemoryProvider(id -> MessageWindowChatMemory.withMaxMessages(50))
                        .tools(seats)
                        .build();
        assertInstanceOf(
                DefaultToolExecutor.class, context.toolService.toolExecutors().get("seats"));
        assertEquals("41 | 42 | 43", agent.chat("s", "seats {\"flight\":\"BA117\"}"));
        assertEquals(3, seats.counted.get(), "LangChain4j ran each call");
    }

    @Test
    void langchain4j_executors_of_an_idempotent_method_are_refused_on_every_other_path()
            throws Exception {
        IdempotencyStore store = new dev.idemkit.InMemoryIdempotencyStore();
        IdempotentTools.defaults(store);
        Flights flights = new Flights();
        Method book = Flights.class.getMethod("book", String.class);
        ScriptedModel model = new ScriptedModel(1, "book", "{\"flight\":\"BA117\"}");
        List<Runnable> paths =
                List.of(
                        () -> AiServices.builder(Agent.class).tools(ToolService.findTools(flights)),
                        // A provider's tools are checked when it provides them, before the model
                        // sees them.
                        () ->
                                AiServices.builder(Agent.class)
                                        .chatModel(model)
                                        .chatMemoryProvider(
                                                id -> MessageWindowChatMemory.withMaxMessages(50))
                                        .toolProvider(
                                                request ->
                                                        new ToolProviderResult(
                                                                ToolService.findTools(flights)))
                                        .build()
                                        .chat("p", "Book me on BA117"));
        for (Runnable path : paths) {
            IllegalStateException refused = assertThrows(IllegalStateException.class, path::run);
            String m = refused.getMessage();
            assertTrue(m.contains("`book`") && m.contains("unprotected"), m);
            assertTrue(m.contains("IdempotentTools"), m);
        }
        assertEquals(0, flights.booked.get(), "the body never ran");
        // idemkit's own wrapper still passes.
        try (IdempotentTools tools =
                IdempotentTools.builder().tools(flights).store(store).build()) {
            AiServices.builder(Agent.class)
                    .chatModel(model)
                    .chatMemoryProvider(id -> MessageWindowChatMemory.withMaxMessages(50))
                    .tools(tools.aiServiceTools())
                    .build();
        }
        store.close();
    }

    /** What langchain4j-spring-boot-starter's {@code @AiService} hands over for a proxied bean. */
    private static Map<
                    dev.langchain4j.agent.tool.ToolSpecification,
                    dev.langchain4j.service.tool.ToolExecutor>
            executors(Flights flights) throws Exception {
        Method book = Flights.class.getMethod("book", String.class);
        return Map.of(
                ToolSpecifications.toolSpecificationFrom(book),
                new DefaultToolExecutor(flights, book, book));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.idemkit.langchain4j.Services#stores")
    void a_langchain4j_executor_in_tools_map_runs_through_idemkit_with_the_defaults(
            String name, Supplier<IdempotencyStore> stores) throws Exception {
        Flights flights = new Flights();
        try (IdempotencyStore store = stores.get()) {
            IdempotentTools.defaults(store);
            Agent agent =
                    AiServices.builder(Agent.class)
                            .chatModel(new ScriptedModel(4))
                            .chatMemoryProvider(id -> MessageWindowChatMemory.withMaxMessages(50))
                            .tools(executors(flights))
                            .build();
            for (int turn = 0; turn < 2; turn++) {
                assertEquals(
                        "BK-LH401-1 | BK-LH401-1 | BK-LH401-1 | BK-LH401-1",
                        agent.chat("c", "book {\"flight\":\"LH401\"}"));
            }
        }
        assertEquals(1, flights.booked.get(), "eight identical calls, the body ran once");
    }

    @Test
    void a_langchain4j_executor_in_tools_map_without_defaults_is_refused() throws Exception {
        Flights flights = new Flights();
        IllegalStateException refused =
                assertThrows(
                        IllegalStateException.class,
                        () -> AiServices.builder(Agent.class).tools(executors(flights)));
        String m = refused.getMessage();
        assertTrue(m.contains("`book`") && m.contains("tools(Map)"), m);
        assertTrue(m.contains("IdempotentTools.defaults(store)"), m);
        assertEquals(0, flights.booked.get(), "the body never ran");
    }
}
