package dev.idemkit.spring.boot3;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.IdempotencyStore;
import dev.idemkit.RedisIdempotencyStore;
import java.util.Arrays;
import java.util.UUID;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The same Boot 3.5 app with {@code idemkit.store.url} naming Redis ({@code IDEMKIT_REDIS_URL}): a
 * bean's tool and a new-made tool object, each asked four times per turn on two turns, run once.
 */
@SpringBootTest(classes = Boot3App.class)
class Boot3RedisTest {
    @BeforeAll
    static void needsRedis() {
        String url = System.getenv("IDEMKIT_REDIS_URL");
        if (url == null || url.isEmpty()) {
            String message =
                    "IDEMKIT_REDIS_URL is not set: SKIPPING the Boot 3 Redis tests (start the"
                            + " servers with scripts/services.sh start, then eval"
                            + " \"$(scripts/services.sh env)\")";
            String list = System.getenv().getOrDefault("IDEMKIT_REQUIRE_SERVICES", "");
            if (Arrays.stream(list.split("[ ,]+"))
                    .anyMatch(n -> n.equals("1") || n.equals("IDEMKIT_REDIS_URL"))) {
                Assertions.fail(
                        message + "; IDEMKIT_REQUIRE_SERVICES guarantees it, so this fails");
            }
            System.err.println("idemkit: " + message);
            Assumptions.abort(message);
        }
    }

    @DynamicPropertySource
    static void store(DynamicPropertyRegistry properties) {
        properties.add("idemkit.store.url", () -> System.getenv("IDEMKIT_REDIS_URL"));
        properties.add(
                "idemkit.store.key-prefix", () -> "idemkit-boot3-test:" + UUID.randomUUID() + ":");
    }

    @Autowired Boot3App.Seats seats;
    @Autowired ChatModel model;
    @Autowired IdempotencyStore store;

    @Test
    void a_beans_tool_and_a_new_made_tool_object_each_run_once_on_redis() {
        assertTrue(store instanceof RedisIdempotencyStore, store.toString());
        int before = seats.runs();
        ChatClient chat =
                ChatClient.create(new ScriptedChatModel(4, "book_seat", "{\"flight\":\"BA301\"}"));
        for (int turn = 0; turn < 2; turn++) {
            String answer = chat.prompt().user("Book BA301").tools(seats).call().content();
            assertEquals(
                    String.format(Boot3WiringsTest.FOUR, "\"BK-BA301-" + (before + 1) + "\""),
                    answer);
        }
        assertEquals(before + 1, seats.runs(), "eight identical calls of the bean's tool");

        int flights = Boot3App.Flights.RUNS.get();
        String once = String.format(Boot3WiringsTest.FOUR, "\"FL-BA117-" + (flights + 1) + "\"");
        String conversation = "conversation-" + UUID.randomUUID();
        assertEquals(once, Boot3App.askFlights(model, conversation));
        assertEquals(once, Boot3App.askFlights(model, conversation));
        assertEquals(flights + 1, Boot3App.Flights.RUNS.get(), "eight identical new-made calls");
    }
}
