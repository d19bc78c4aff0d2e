package com.example.newtools;

import dev.idemkit.Idempotent;
import dev.idemkit.springai.ScriptedChatModel;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.memory.ChatMemory;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.model.tool.ToolCallingManager;
import org.springframework.ai.tool.annotation.Tool;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/** An app that wires its tools Spring AI's own way: a new-made object per prompt, no bean. */
@SpringBootApplication
public class NewToolsApp {
    /** Bookings across all the Flights objects. */
    public static final AtomicInteger BOOKED = new AtomicInteger();

    public static class Flights {
        @Tool(name = "book_flight", description = "Books a seat")
        @Idempotent
        public String bookFlight(String flight) {
            return "BK-" + flight + "-" + BOOKED.incrementAndGet();
        }
    }

    /** The manager a Spring AI model auto-configuration would make. */
    @Bean
    ToolCallingManager toolCallingManager() {
        return ToolCallingManager.builder().build();
    }

    /** The model takes the manager bean, as Spring AI's models do. */
    @Bean
    ChatModel chatModel(ToolCallingManager tools) {
        return new ScriptedChatModel(4, "book_flight", "{\"flight\":\"BA117\"}", tools);
    }

    public static String ask(ChatModel model, String conversation) {
        return ChatClient.create(model)
                .prompt()
                .user("Book me on BA117")
                .tools(new Flights())
                .toolContext(Map.of(ChatMemory.CONVERSATION_ID, conversation))
                .call()
                .content();
    }
}
