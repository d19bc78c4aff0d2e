package com.example.modular;

import com.example.modular.hidden.HiddenTools;
import com.fasterxml.jackson.core.type.TypeReference;
import dev.idemkit.Idempotent;
import dev.idemkit.Tool;
import dev.idemkit.ToolDispatcher;
import dev.idemkit.ToolParam;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/** Calls one tool twice through idemkit on the in-memory store: the body runs once. */
public final class Main {
    /** The tool: counts how often its body really runs. */
    public static final class Bookings {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "book_room")
        @Idempotent
        public List<String> bookRoom(@ToolParam(name = "room") String room) {
            runs.incrementAndGet();
            return List.of("BK-" + room);
        }
    }

    public static void main(String[] args) {
        Bookings bookings = new Bookings();
        try (ToolDispatcher dispatcher = ToolDispatcher.builder().tools(bookings).build()) {
            TypeReference<List<String>> asList = new TypeReference<>() {};
            List<String> first = dispatcher.call("book_room", "{\"room\":\"12\"}", asList);
            List<String> retry = dispatcher.call("book_room", "{\"room\":\"12\"}", asList);
            Module idemkit = ToolDispatcher.class.getModule();
            System.out.println(
                    "idemkit module: "
                            + idemkit.getName()
                            + (idemkit.getDescriptor().isAutomatic() ? " (automatic)" : ""));
            System.out.println("first: " + first + ", retry: " + retry);
            System.out.println("body ran: " + bookings.runs.get());
        }
        try (ToolDispatcher refused = ToolDispatcher.builder().tools(new HiddenTools()).build()) {
            System.out.println("hidden tools registered: " + refused.toolNames());
        } catch (IllegalStateException e) {
            System.out.println("hidden tools refused: " + e.getMessage());
        }
    }
}
