package dev.idemkit.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.example.seats.SeatApp;
import dev.idemkit.springai.ScriptedChatModel;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.model.tool.ToolCallingManager;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

/**
 * The README's first Spring example (SeatApp, compared verbatim): the starter, {@code @Idempotent}
 * on a bean's {@code @Tool}, wired by {@code defaultTools(bean)}. A scripted model asks for the
 * same call twice per request; four requests book one seat.
 */
@SpringBootTest(classes = {SeatApp.class, SeatAppTest.Model.class})
class SeatAppTest {
    @TestConfiguration(proxyBeanMethods = false)
    static class Model {
        /** The manager a Spring AI model auto-configuration would make. */
        @Bean
        ToolCallingManager toolCallingManager() {
            return ToolCallingManager.builder().build();
        }

        @Bean
        ChatModel chatModel(ToolCallingManager tools) {
            return new ScriptedChatModel(2, "book_seat", "{\"flight\":\"BA117\"}", tools);
        }
    }

    @Autowired SeatApp.Agent agent;
    @Autowired SeatApp.Seats seats;

    @Test
    void four_requests_of_two_identical_calls_book_one_seat() {
        for (int i = 0; i < 4; i++) {
            assertEquals(
                    "\"BK-BA117-1\" | \"BK-BA117-1\"",
                    agent.ask("conversation-42", "Book me on BA117"));
        }
        assertEquals(1, seats.booked(), "eight identical calls, one body run");
    }

    @Test
    void the_readme_shows_the_app_verbatim() throws Exception {
        String readme = Files.readString(Path.of("../README.md"));
        String source = Files.readString(Path.of("src/test/java/com/example/seats/SeatApp.java"));
        assertTrue(
                readme.contains("```java\n" + source + "```"),
                "java/README.md must show SeatApp.java verbatim in a java block");
    }
}
