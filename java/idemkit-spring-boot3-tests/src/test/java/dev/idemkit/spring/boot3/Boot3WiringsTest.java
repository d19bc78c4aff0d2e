package dev.idemkit.spring.boot3;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.InMemoryIdempotencyStore;
import dev.idemkit.springai.IdempotentToolCallingManager;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.model.tool.ToolCallingManager;
import org.springframework.ai.tool.ToolCallbackProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.core.SpringVersion;

/**
 * The starter and idemkit-spring-ai on Spring Boot 3.5 / Spring AI 1.1, memory store: each way of
 * wiring an {@code @Idempotent} tool, asked for the same call four times in one response (and on a
 * second turn, or from eight threads), runs the body once.
 */
@SpringBootTest(classes = Boot3App.class)
class Boot3WiringsTest {
    @Autowired Boot3App.Seats seats;
    @Autowired Boot3App.Payments payments;
    @Autowired ChatModel model;
    @Autowired ToolCallingManager manager;
    @Autowired dev.idemkit.IdempotencyStore store;

    @Autowired
    @Qualifier("seatTools")
    ToolCallbackProvider seatTools;

    static final String FOUR = "%1$s | %1$s | %1$s | %1$s";

    /** A model of its own with Spring AI's plain manager: only the bean's proxy protects. */
    static ChatClient.Builder unwrapped(String flight) {
        return ChatClient.builder(
                new ScriptedChatModel(4, "book_seat", "{\"flight\":\"" + flight + "\"}"));
    }

    @Test
    void it_runs_on_boot_3_5_spring_6_2_and_spring_ai_1_1() {
        assertEquals("3.5.7", SpringBootVersion.getVersion());
        assertTrue(SpringVersion.getVersion().startsWith("6.2."), SpringVersion.getVersion());
        String ai =
                ToolCallingManager.class
                        .getProtectionDomain()
                        .getCodeSource()
                        .getLocation()
                        .toString();
        assertTrue(ai.contains("spring-ai-model-1.1.2"), ai);
        assertTrue(store instanceof InMemoryIdempotencyStore);
    }

    @Test
    void tools_of_a_bean_run_the_body_once_for_four_identical_calls_and_two_turns() {
        int before = seats.runs();
        ChatClient chat = unwrapped("BA201").build();
        for (int turn = 0; turn < 2; turn++) {
            String answer = chat.prompt().user("Book BA201").tools(seats).call().content();
            assertEquals(String.format(FOUR, "\"BK-BA201-" + (before + 1) + "\""), answer);
        }
        assertEquals(before + 1, seats.runs());
    }

    @Test
    void default_tools_of_a_bean_run_the_body_once_for_four_identical_calls_and_two_turns() {
        int before = seats.runs();
        ChatClient chat = unwrapped("BA202").defaultTools(seats).build();
        for (int turn = 0; turn < 2; turn++) {
            String answer = chat.prompt().user("Book BA202").call().content();
            assertEquals(String.format(FOUR, "\"BK-BA202-" + (before + 1) + "\""), answer);
        }
        assertEquals(before + 1, seats.runs());
    }

    @Test
    void a_method_tool_callback_provider_bean_runs_the_body_once_for_four_identical_calls() {
        int before = seats.runs();
        ChatClient chat = unwrapped("BA203").defaultToolCallbacks(seatTools).build();
        for (int turn = 0; turn < 2; turn++) {
            String answer = chat.prompt().user("Book BA203").call().content();
            assertEquals(String.format(FOUR, "\"BK-BA203-" + (before + 1) + "\""), answer);
        }
        assertEquals(before + 1, seats.runs());
    }

    @Test
    void tools_of_a_bean_from_eight_threads_run_the_body_once() throws Exception {
        int before = seats.runs();
        ChatClient chat = unwrapped("BA204").build();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Callable<String>> asks = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                asks.add(() -> chat.prompt().user("Book BA204").tools(seats).call().content());
            }
            for (Future<String> answer : pool.invokeAll(asks)) {
                assertEquals(
                        String.format(FOUR, "\"BK-BA204-" + (before + 1) + "\""), answer.get());
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(before + 1, seats.runs(), "32 identical calls from 8 threads, one body run");
    }

    @Test
    void a_new_made_tool_object_runs_once_through_the_wrapped_tool_calling_manager() {
        assertTrue(manager instanceof IdempotentToolCallingManager, manager.toString());
        int before = Boot3App.Flights.RUNS.get();
        String once = String.format(FOUR, "\"FL-BA117-" + (before + 1) + "\"");
        assertEquals(once, Boot3App.askFlights(model, "conversation-boot3"));
        assertEquals(once, Boot3App.askFlights(model, "conversation-boot3"));
        assertEquals(before + 1, Boot3App.Flights.RUNS.get(), "eight identical calls, one run");
    }

    @Test
    void a_plain_service_bean_charges_once_for_the_same_charge_twice() {
        int before = payments.charges();
        String first = payments.charge("o-boot3", 500);
        assertEquals(first, payments.charge("o-boot3", 500));
        assertEquals(before + 1, payments.charges());
    }
}
