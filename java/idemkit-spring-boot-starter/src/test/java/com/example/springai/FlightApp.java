package com.example.springai;

import dev.idemkit.Idempotent;
import dev.idemkit.springai.IdempotentToolCallbacks;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.memory.ChatMemory;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.tool.annotation.Tool;
import org.springframework.ai.tool.annotation.ToolParam;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.stereotype.Component;

@SpringBootApplication
public class FlightApp {
    @Component
    public static class Flights {
        private final AtomicInteger booked = new AtomicInteger();

        @Tool(name = "book_flight", description = "Books a seat and returns the booking reference")
        @Idempotent
        public String bookFlight(@ToolParam(description = "the flight number") String flight) {
            return "BK-" + flight + "-" + booked.incrementAndGet();
        }

        public int booked() {
            return booked.get();
        }
    }

    @Component
    public static class Agent {
        private final ChatClient chat;

        Agent(ChatModel model, IdempotentToolCallbacks idempotentTools) {
            this.chat = ChatClient.builder(model).defaultToolCallbacks(idempotentTools).build();
        }

        public String ask(String conversation, String message) {
            return chat.prompt()
                    .user(message)
                    .toolContext(Map.of(ChatMemory.CONVERSATION_ID, conversation))
                    .call()
                    .content();
        }
    }
}
