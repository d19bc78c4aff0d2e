package dev.idemkit.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.idemkit.Idempotent;
import dev.idemkit.springai.ScriptedChatModel;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.tool.ToolCallbackProvider;
import org.springframework.ai.tool.annotation.Tool;
import org.springframework.ai.tool.method.MethodToolCallbackProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * A bean's Spring AI tool wired the framework's own way ({@code ChatClient...tools(bean)}): the
 * scripted model asks for the same {@code book} call four times in one response, and again on a
 * second turn; the starter's proxy runs the body once.
 */
@SpringBootTest(classes = BeanToolsTest.App.class)
class BeanToolsTest {
    public static class Seats {
        private final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "book_seat", description = "Books a seat")
        @Idempotent
        public String book(String flight) {
            return "BK-" + flight + "-" + runs.incrementAndGet();
        }

        public int runs() {
            return runs.get();
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class App {
        @Bean
        Seats seats() {
            return new Seats();
        }
    }

    @Autowired Seats seats;

    @Test
    void tools_of_a_bean_run_the_body_once_for_four_identical_calls_and_two_turns() {
        int before = seats.runs();
        ChatClient chat =
                ChatClient.create(new ScriptedChatModel(4, "book_seat", "{\"flight\":\"BA117\"}"));
        for (int turn = 0; turn < 2; turn++) {
            String answer = chat.prompt().user("Book BA117").tools(seats).call().content();
            String once = "\"BK-BA117-" + (before + 1) + "\"";
            assertEquals(String.join(" | ", once, once, once, once), answer);
        }
        assertEquals(before + 1, seats.runs());
    }

    @Test
    void default_tools_of_a_bean_run_the_body_once_for_four_identical_calls_and_two_turns() {
        int before = seats.runs();
        ChatClient chat =
                ChatClient.builder(new ScriptedChatModel(4, "book_seat", "{\"flight\":\"BA118\"}"))
                        .defaultTools(seats)
                        .build();
        for (int turn = 0; turn < 2; turn++) {
            String answer = chat.prompt().user("Book BA118").call().content();
            String once = "\"BK-BA118-" + (before + 1) + "\"";
            assertEquals(String.join(" | ", once, once, once, once), answer);
        }
        assertEquals(before + 1, seats.runs());
    }

    @Test
    void a_method_tool_callback_provider_over_a_bean_runs_the_body_once_for_four_identical_calls() {
        int before = seats.runs();
        ToolCallbackProvider provider =
                MethodToolCallbackProvider.builder().toolObjects(seats).build();
        ChatClient chat =
                ChatClient.create(new ScriptedChatModel(4, "book_seat", "{\"flight\":\"BA119\"}"));
        for (int turn = 0; turn < 2; turn++) {
            String answer =
                    chat.prompt()
                            .user("Book BA119")
                            .toolCallbacks(provider.getToolCallbacks())
                            .call()
                            .content();
            String once = "\"BK-BA119-" + (before + 1) + "\"";
            assertEquals(String.join(" | ", once, once, once, once), answer);
        }
        assertEquals(before + 1, seats.runs());
    }
}
