package dev.idemkit.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.Idempotent;
import dev.idemkit.springai.IdempotentToolCallbacks;
import dev.idemkit.springai.IdempotentToolCallingManager;
import dev.idemkit.springai.ScriptedChatModel;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.memory.ChatMemory;
import org.springframework.ai.model.tool.ToolCallingManager;
import org.springframework.ai.tool.ToolCallbackProvider;
import org.springframework.ai.tool.annotation.Tool;
import org.springframework.ai.tool.method.MethodToolCallbackProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Every Spring AI wiring of an {@code @Idempotent} {@code @Tool}, with the starter and Spring AI's
 * own ChatClient and ToolCallingManager (a scripted model): the same call four times in one
 * response, again on a second turn, and from 8 threads at once runs the body (counted in the tool)
 * once. Subclassed once per store ({@link SpringAiWiringsMemoryTest}, {@link
 * SpringAiWiringsRedisTest}); each test books its own flight, so each key is new.
 */
abstract class SpringAiWirings {
    /** A bean whose tool Spring AI calls through the bean (the starter's proxy). */
    public static class Seats {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "book_seat", description = "Books a seat")
        @Idempotent
        public String book(String flight) throws InterruptedException {
            return booked(runs, flight);
        }

        /**
         * The body runs so far (a method: the bean is a proxy, whose fields are not the bean's).
         */
        public int runs() {
            return runs.get();
        }
    }

    /** No bean: an object made per prompt, {@code .tools(new Flights())}. */
    public static class Flights {
        static final AtomicInteger RUNS = new AtomicInteger();

        @Tool(name = "book_seat", description = "Books a seat")
        @Idempotent
        public String book(String flight) throws InterruptedException {
            return booked(RUNS, flight);
        }
    }

    static String booked(AtomicInteger runs, String flight) throws InterruptedException {
        int run = runs.incrementAndGet();
        Thread.sleep(50); // long enough for the other threads' calls to overlap this one
        return "BK-" + flight + "-" + run;
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class App {
        @Bean
        Seats seats() {
            return new Seats();
        }

        @Bean
        ToolCallbackProvider seatTools(Seats seats) {
            return MethodToolCallbackProvider.builder().toolObjects(seats).build();
        }

        /** The manager a Spring AI model auto-configuration would make; the starter wraps it. */
        @Bean
        ToolCallingManager toolCallingManager() {
            return ToolCallingManager.builder().build();
        }
    }

    /** How an application hands Spring AI its tools. */
    enum Wiring {
        TOOLS_BEAN,
        DEFAULT_TOOLS_BEAN,
        METHOD_TOOL_CALLBACK_PROVIDER_BEAN,
        TOOLS_NEW_OBJECT,
        /** The starter's {@code IdempotentToolCallbacks} bean, as prompt tool callbacks. */
        IDEMPOTENT_TOOL_CALLBACKS_BEAN
    }

    @Autowired Seats seats;
    @Autowired ToolCallbackProvider seatTools;
    @Autowired IdempotentToolCallbacks idempotentToolCallbacks;
    @Autowired ToolCallingManager manager;

    private static final AtomicInteger FLIGHTS = new AtomicInteger();

    /** One request of {@code wiring} to {@code chat}. */
    private String ask(Wiring wiring, ChatClient chat, String conversation) {
        ChatClient.ChatClientRequestSpec prompt = chat.prompt();
        switch (wiring) {
            case DEFAULT_TOOLS_BEAN:
                break; // the client's default
            case TOOLS_BEAN:
                prompt = prompt.tools(seats);
                break;
            case METHOD_TOOL_CALLBACK_PROVIDER_BEAN:
                prompt = prompt.toolCallbacks(seatTools);
                break;
            case IDEMPOTENT_TOOL_CALLBACKS_BEAN:
                prompt = prompt.toolCallbacks(idempotentToolCallbacks);
                break;
            default:
                prompt = prompt.tools(new Flights());
        }
        return prompt.user("Book a seat")
                .toolContext(Map.of(ChatMemory.CONVERSATION_ID, conversation))
                .call()
                .content();
    }

    private int runs(Wiring wiring) {
        return wiring == Wiring.TOOLS_NEW_OBJECT ? Flights.RUNS.get() : seats.runs();
    }

    /** A client whose model asks for {@code calls} identical book_seat calls per request. */
    private ChatClient client(Wiring wiring, int calls, String flight) {
        assertTrue(manager instanceof IdempotentToolCallingManager, manager.toString());
        ChatClient.Builder client =
                ChatClient.builder(
                        new ScriptedChatModel(
                                calls, "book_seat", "{\"flight\":\"" + flight + "\"}", manager));
        if (wiring == Wiring.DEFAULT_TOOLS_BEAN) {
            client.defaultTools(seats);
        }
        return client.build();
    }

    @ParameterizedTest
    @EnumSource(Wiring.class)
    void four_calls_in_one_response_and_a_second_turn_run_the_body_once(Wiring wiring) {
        String flight = "BA" + FLIGHTS.incrementAndGet();
        int before = runs(wiring);
        ChatClient client = client(wiring, 4, flight);
        String ref = "\"BK-" + flight + "-" + (before + 1) + "\"";
        for (int turn = 0; turn < 2; turn++) {
            assertEquals(
                    String.join(" | ", ref, ref, ref, ref), ask(wiring, client, "conversation-1"));
        }
        assertEquals(before + 1, runs(wiring), "eight identical calls, one body run");
    }

    @ParameterizedTest
    @EnumSource(Wiring.class)
    void eight_threads_sending_the_identical_request_at_once_run_the_body_once(Wiring wiring)
            throws Exception {
        String flight = "AF" + FLIGHTS.incrementAndGet();
        int before = runs(wiring);
        ChatClient client = client(wiring, 1, flight);
        String ref = "\"BK-" + flight + "-" + (before + 1) + "\"";
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<String>> answers = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                answers.add(
                        pool.submit(
                                () -> {
                                    start.await();
                                    return ask(wiring, client, "conversation-8");
                                }));
            }
            start.countDown();
            for (Future<String> answer : answers) {
                assertEquals(ref, answer.get());
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(before + 1, runs(wiring), "eight identical requests, one body run");
    }
}
