package com.example.langchain4j;

import dev.idemkit.Idempotent;
import dev.idemkit.langchain4j.IdempotentTools;
import dev.langchain4j.agent.tool.P;
import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.memory.chat.MessageWindowChatMemory;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.MemoryId;
import dev.langchain4j.service.UserMessage;
import java.util.concurrent.atomic.AtomicInteger;

public class FlightAgent {
    interface Assistant {
        String chat(@MemoryId String conversation, @UserMessage String message);
    }

    public static class Flights {
        final AtomicInteger booked = new AtomicInteger();

        @Tool(name = "book_flight", value = "Books a seat and returns the booking reference")
        @Idempotent
        public String bookFlight(@P("the flight number") String flight) {
            return "BK-" + flight + "-" + booked.incrementAndGet();
        }
    }

    /** Asks the model four times to book BA117; returns how many flights it booked. */
    public static int bookFourTimes(ChatModel model) {
        Flights flights = new Flights();
        try (IdempotentTools tools =
                IdempotentTools.builder().tools(flights).tenant("acme").build()) {
            Assistant assistant =
                    AiServices.builder(Assistant.class)
                            .chatModel(model)
                            .chatMemoryProvider(id -> MessageWindowChatMemory.withMaxMessages(20))
                            .tools(tools.aiServiceTools())
                            .build();
            for (int i = 0; i < 4; i++) {
                System.out.println(assistant.chat("conversation-42", "Book me on BA117"));
            }
        }
        return flights.booked.get();
    }
}
