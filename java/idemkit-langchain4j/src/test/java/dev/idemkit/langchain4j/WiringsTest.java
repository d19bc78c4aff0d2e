package dev.idemkit.langchain4j;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.idemkit.IdempotencyStore;
import dev.idemkit.Idempotent;
import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.memory.chat.MessageWindowChatMemory;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.MemoryId;
import dev.langchain4j.service.UserMessage;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every plain LangChain4j wiring of an {@code @Idempotent} tool, on every store, with LangChain4j's
 * own {@code AiServices} and a scripted model: the same call four times in one response, again on a
 * second turn, and from 8 threads at once runs the body (counted in the tool) once.
 */
class WiringsTest {
    interface Agent {
        String chat(@MemoryId String conversation, @UserMessage String message);
    }

    public static class Flights {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "book", value = "Books a seat and returns the booking reference")
        @Idempotent
        public String book(String flight) throws InterruptedException {
            int run = runs.incrementAndGet();
            Thread.sleep(50); // long enough for the other threads' calls to overlap this one
            return "BK-" + flight + "-" + run;
        }
    }

    /** How an application hands LangChain4j its tools; each wires {@code flights} over a store. */
    enum Wiring {
        /** {@code AiServices.builder(...).tools(new Flights())}, the ServiceLoader hook. */
        AI_SERVICES_TOOLS {
            @Override
            Agent agent(
                    ScriptedModel model,
                    Flights flights,
                    IdempotencyStore store,
                    List<AutoCloseable> opened) {
                IdempotentTools.defaults(store);
                return builder(model).tools(flights).build();
            }
        },
        /** {@code .tools(IdempotentTools.builder()...build().aiServiceTools())}. */
        IDEMPOTENT_TOOLS {
            @Override
            Agent agent(
                    ScriptedModel model,
                    Flights flights,
                    IdempotencyStore store,
                    List<AutoCloseable> opened) {
                IdempotentTools tools =
                        IdempotentTools.builder().tools(flights).store(store).build();
                opened.add(tools);
                return builder(model).tools(tools.aiServiceTools()).build();
            }
        };

        /**
         * The agent; what it opens that the test closes (before the store) goes in {@code opened}.
         */
        abstract Agent agent(
                ScriptedModel model,
                Flights flights,
                IdempotencyStore store,
                List<AutoCloseable> opened);

        static AiServices<Agent> builder(ScriptedModel model) {
            return AiServices.builder(Agent.class)
                    .chatModel(model)
                    .chatMemoryProvider(id -> MessageWindowChatMemory.withMaxMessages(200));
        }
    }

    /** Each wiring on each store of {@link Services#stores()}. */
    static Stream<Arguments> wirings() {
        return Stream.of(Wiring.values())
                .flatMap(w -> Services.stores().map(s -> Arguments.of(w, s.get()[0], s.get()[1])));
    }

    /** The tools a wiring opened, closed after each test (before its store). */
    private final List<AutoCloseable> opened = new ArrayList<>();

    @AfterEach
    void forget_the_defaults() throws Exception {
        IdempotentTools.clearDefaults();
        for (AutoCloseable c : opened) {
            c.close();
        }
        opened.clear();
    }

    @ParameterizedTest(name = "{0} on {1}")
    @MethodSource("wirings")
    void four_calls_in_one_response_and_a_second_turn_run_the_body_once(
            Wiring wiring, String store, Supplier<IdempotencyStore> stores) throws Exception {
        Flights flights = new Flights();
        try (IdempotencyStore s = stores.get()) {
            Agent agent =
                    wiring.agent(
                            new ScriptedModel(4, "book", "{\"flight\":\"BA117\"}"),
                            flights,
                            s,
                            opened);
            for (int turn = 0; turn < 2; turn++) {
                assertEquals(
                        "BK-BA117-1 | BK-BA117-1 | BK-BA117-1 | BK-BA117-1",
                        agent.chat("conversation-1", "Book me on BA117"));
            }
            forget_the_defaults();
        }
        assertEquals(1, flights.runs.get(), "eight identical calls, one body run");
    }

    @ParameterizedTest(name = "{0} on {1}")
    @MethodSource("wirings")
    void eight_threads_sending_the_identical_request_at_once_run_the_body_once(
            Wiring wiring, String store, Supplier<IdempotencyStore> stores) throws Exception {
        Flights flights = new Flights();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try (IdempotencyStore s = stores.get()) {
            Agent agent =
                    wiring.agent(
                            new ScriptedModel(1, "book", "{\"flight\":\"AF7\"}"),
                            flights,
                            s,
                            opened);
            CountDownLatch start = new CountDownLatch(1);
            List<Future<String>> answers = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                answers.add(
                        pool.submit(
                                () -> {
                                    start.await();
                                    return agent.chat("conversation-8", "Book me on AF7");
                                }));
            }
            start.countDown();
            // The chats share one conversation's memory: an answer may join several results.
            for (Future<String> answer : answers) {
                for (String part : answer.get().split(" \\| ")) {
                    assertEquals("BK-AF7-1", part);
                }
            }
            forget_the_defaults();
        } finally {
            pool.shutdownNow();
        }
        assertEquals(1, flights.runs.get(), "eight identical requests, one body run");
    }
}
