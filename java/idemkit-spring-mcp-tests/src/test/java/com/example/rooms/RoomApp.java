package com.example.rooms;

import dev.idemkit.Idempotent;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.ai.tool.annotation.Tool;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.stereotype.Component;

/**
 * An app with the idemkit starter and Spring AI's MCP server starter on its classpath, and nothing
 * else: its {@code @Idempotent @Tool} bean is served over MCP, protected.
 */
@SpringBootApplication
public class RoomApp {
    @Component
    public static class Rooms {
        private final AtomicInteger booked = new AtomicInteger();

        @Tool(name = "book_room", description = "Books a room for one night")
        @Idempotent
        public String bookRoom(String guest, String night) {
            return "booking-" + guest + "-" + night + "-" + booked.incrementAndGet();
        }

        public int booked() {
            return booked.get();
        }
    }
}
