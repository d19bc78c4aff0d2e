package com.example.gradle;

import dev.idemkit.Idempotent;
import dev.idemkit.Tool;
import dev.idemkit.ToolDispatcher;
import dev.idemkit.ToolParam;
import java.util.concurrent.atomic.AtomicInteger;

/** Books a room twice with the same input: idemkit runs the booking once. */
public class BookingApp {
    public static class Rooms {
        final AtomicInteger bookings = new AtomicInteger();

        @Tool(name = "book_room")
        @Idempotent(ttlSeconds = 86_400)
        public String bookRoom(@ToolParam(name = "room") String room) {
            return "BK-" + room + "-" + bookings.incrementAndGet();
        }
    }

    public static void main(String[] args) {
        Rooms rooms = new Rooms();
        try (ToolDispatcher dispatcher = ToolDispatcher.builder().tools(rooms).build()) {
            Object first = dispatcher.call("book_room", "{\"room\":\"12\"}");
            Object retry = dispatcher.call("book_room", "{\"room\":\"12\"}");
            System.out.println("first call: " + first + ", retry: " + retry);
            System.out.println("the booking ran " + rooms.bookings.get() + " time(s)");
        }
    }
}
