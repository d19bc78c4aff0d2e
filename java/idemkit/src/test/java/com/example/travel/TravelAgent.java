package com.example.travel;

import dev.idemkit.FailFastException;
import dev.idemkit.IdempotencyContext;
import dev.idemkit.IdempotencyHint;
import dev.idemkit.IdempotencyKeySupplier;
import dev.idemkit.Idempotent;
import dev.idemkit.InMemoryIdempotencyStore;
import dev.idemkit.KeyStrategy;
import dev.idemkit.RetryBehavior;
import dev.idemkit.Tool;
import dev.idemkit.ToolDispatcher;
import dev.idemkit.ToolParam;
import java.util.Map;

public class TravelAgent {
    /** Tools a model can call. The class's policy applies to every tool without its own. */
    @Idempotent(ttlSeconds = 86_400)
    public static class TravelTools {
        @Tool(
                name = "book_flight",
                description = "Books a seat",
                idempotencyHint = IdempotencyHint.REQUIRED)
        @Idempotent(
                keyArguments = {"flight", "passenger"},
                cacheFailures = true)
        public String bookFlight(
                @ToolParam(name = "flight", description = "Flight number") String flight,
                @ToolParam(name = "passenger") String passenger,
                @ToolParam(name = "note") String note,
                IdempotencyContext context) {
            // context.key() is the 64-hex key: send it upstream as an Idempotency-Key header.
            return "BK-" + flight + "-" + context.key().substring(0, 8);
        }

        @Tool(name = "send_email", timeoutMs = 10_000)
        public String sendEmail(
                @ToolParam(name = "to") String to, @ToolParam(name = "subject") String subject) {
            return "sent to " + to;
        }
    }

    /** EXPLICIT keys: the class says what makes two calls the same. */
    public static class IssueTools implements IdempotencyKeySupplier {
        @Override
        public String idempotencyKeyFor(Map<String, Object> input) {
            return (String) input.get("title");
        }

        @Tool(name = "create_issue")
        @Idempotent(strategy = KeyStrategy.EXPLICIT, onCacheHit = RetryBehavior.FAIL_FAST)
        public int createIssue(
                @ToolParam(name = "title") String title, @ToolParam(name = "body") String body) {
            return 4711;
        }
    }

    public static void main(String[] args) {
        try (InMemoryIdempotencyStore store = new InMemoryIdempotencyStore()) {
            ToolDispatcher tools =
                    ToolDispatcher.builder()
                            .tools(new TravelTools(), new IssueTools())
                            .store(store)
                            .tenant("acme")
                            .run("trip-42")
                            .build();

            // What a model sends is JSON text; a retry (here with another note) gets the first
            // result.
            String first =
                    tools.call(
                            "book_flight",
                            "{\"flight\":\"BA117\",\"passenger\":\"Ana\",\"note\":\"window\"}",
                            String.class);
            String retry =
                    tools.call(
                            "book_flight",
                            Map.of("flight", "BA117", "passenger", "Ana", "note", "aisle"),
                            String.class);
            System.out.println(first.equals(retry)); // true: booked once

            int issue =
                    tools.call(
                            "create_issue",
                            Map.of("title", "Fix login", "body", "..."),
                            Integer.class);
            try {
                tools.call("create_issue", Map.of("title", "Fix login", "body", "..."));
            } catch (FailFastException repeat) {
                System.out.println("issue " + issue + " exists: " + repeat.key());
            }

            // Another tenant is another key space.
            tools.withTenant("globex")
                    .call("send_email", Map.of("to", "bo@example.com", "subject", "Hi"));
        }
    }
}
