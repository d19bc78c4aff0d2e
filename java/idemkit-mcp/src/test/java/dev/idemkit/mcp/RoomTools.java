package dev.idemkit.mcp;

import dev.idemkit.Effect;
import dev.idemkit.Idempotent;
import dev.idemkit.Tool;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The Java twin of the Rust example {@code examples/mcp_booking.rs}: the same tool name, arguments,
 * policy (EFFECTFUL, HASH_INPUT) and result (a confirmation text), so that the two servers key a
 * call alike and either answers the other's record.
 */
public class RoomTools {
    final AtomicInteger runs = new AtomicInteger();

    @Tool(name = "book_room", description = "Books a room for one night")
    @Idempotent(effect = Effect.EFFECTFUL)
    @McpHints(destructive = false, openWorld = true)
    public String book(String guest, String night) {
        runs.incrementAndGet();
        return "booking-" + guest + "-" + UUID.randomUUID();
    }
}
