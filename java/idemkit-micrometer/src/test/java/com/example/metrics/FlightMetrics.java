package com.example.metrics;

import dev.idemkit.Idempotent;
import dev.idemkit.InMemoryIdempotencyStore;
import dev.idemkit.Tool;
import dev.idemkit.ToolDispatcher;
import dev.idemkit.micrometer.IdempotencyMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

public class FlightMetrics {
    public static class Flights {
        @Tool(name = "book_flight")
        @Idempotent
        public String bookFlight(String flight) {
            return "BK-" + flight;
        }
    }

    public static void main(String[] args) {
        MeterRegistry registry = new SimpleMeterRegistry();
        try (InMemoryIdempotencyStore store = new InMemoryIdempotencyStore();
                ToolDispatcher dispatcher =
                        ToolDispatcher.builder()
                                .tools(new Flights())
                                .store(store)
                                .listener(new IdempotencyMetrics(registry))
                                .build()) {
            for (int i = 0; i < 4; i++) {
                dispatcher.call("book_flight", "{\"flight\":\"BA117\"}");
            }
        }
        double deduplicated =
                registry.get(IdempotencyMetrics.EVENTS)
                        .tag("kind", "deduplicated")
                        .counter()
                        .count();
        System.out.println("deduplicated: " + (long) deduplicated);
    }
}
