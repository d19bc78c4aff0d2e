package com.example.seats;

import dev.idemkit.Idempotent;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.memory.ChatMemory;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.tool.annotation.Tool;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.stereotype.Component;

@SpringBootApplication
public class SeatApp {
    @Component
    public static class Seats {
        private final AtomicInteger booked = new AtomicInteger();

        @Tool(name = "book_seat", description = "Books a seat and returns the booking reference")
        @Idempotent
        public String bookSeat(String flight) {
            return "BK-" + flight + "-" + booked.incrementAndGet();
        }

        public int booked() {
            return booked.get();
        }
    }

    @Component
    public static class Agent {
        private final ChatClient chat;

        Agent(ChatModel model, Seats seats) {
            this.chat = ChatClient.builder(model).defaultTools(seats).build();
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
