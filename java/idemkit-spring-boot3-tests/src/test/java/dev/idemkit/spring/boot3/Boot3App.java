package dev.idemkit.spring.boot3;

import dev.idemkit.Idempotent;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.memory.ChatMemory;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.model.tool.ToolCallingManager;
import org.springframework.ai.tool.ToolCallbackProvider;
import org.springframework.ai.tool.annotation.Tool;
import org.springframework.ai.tool.method.MethodToolCallbackProvider;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;

/**
 * A Boot 3.5 / Spring AI 1.1 app with an {@code @Idempotent} tool on a bean, a {@code
 * MethodToolCallbackProvider} bean over it, a tool class made anew per prompt, a plain service, and
 * a {@code ToolCallingManager} bean its chat model takes (as Spring AI's model starters wire it).
 */
@SpringBootConfiguration(proxyBeanMethods = false)
@EnableAutoConfiguration
public class Boot3App {
    /** A tool bean: each body run counts. */
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

    /** A tool class the app makes per prompt ({@code tools(new Flights())}): no bean, no proxy. */
    public static class Flights {
        /** Body runs across all Flights objects. */
        public static final AtomicInteger RUNS = new AtomicInteger();

        @Tool(name = "book_flight", description = "Books a flight")
        @Idempotent
        public String bookFlight(String flight) {
            return "FL-" + flight + "-" + RUNS.incrementAndGet();
        }
    }

    /** A service bean, not a tool: {@code @Idempotent} through the bean. */
    public static class Payments {
        private final AtomicInteger charges = new AtomicInteger();

        @Idempotent
        public String charge(String order, long cents) {
            return "ch-" + order + "-" + cents + "-" + charges.incrementAndGet();
        }

        public int charges() {
            return charges.get();
        }
    }

    @Bean
    Seats seats() {
        return new Seats();
    }

    @Bean
    Payments payments() {
        return new Payments();
    }

    /** The app's provider over the tool bean. */
    @Bean
    ToolCallbackProvider seatTools(Seats seats) {
        return MethodToolCallbackProvider.builder().toolObjects(seats).build();
    }

    /** The manager a Spring AI model starter would make; the idemkit starter wraps it. */
    @Bean
    ToolCallingManager toolCallingManager() {
        return ToolCallingManager.builder().build();
    }

    /** The model takes the manager bean, as Spring AI's models do. */
    @Bean
    ChatModel chatModel(ToolCallingManager tools) {
        return new ScriptedChatModel(4, "book_flight", "{\"flight\":\"BA117\"}", tools);
    }

    /** {@code tools(new Flights())} on one conversation. */
    public static String askFlights(ChatModel model, String conversation) {
        return ChatClient.create(model)
                .prompt()
                .user("Book me on BA117")
                .tools(new Flights())
                .toolContext(Map.of(ChatMemory.CONVERSATION_ID, conversation))
                .call()
                .content();
    }
}
