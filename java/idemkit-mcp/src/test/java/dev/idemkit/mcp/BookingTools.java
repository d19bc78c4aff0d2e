package dev.idemkit.mcp;

import dev.idemkit.Effect;
import dev.idemkit.Idempotent;
import dev.idemkit.KeyStrategy;
import dev.idemkit.Tool;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The tools the MCP tests serve; every body run is counted (and, for a server in a child JVM,
 * appended to a file) when it starts, before any sleep.
 */
public class BookingTools {
    final AtomicInteger bookings = new AtomicInteger();
    final AtomicInteger charges = new AtomicInteger();
    final AtomicInteger lookups = new AtomicInteger();
    final AtomicInteger pings = new AtomicInteger();
    final AtomicInteger inFlight = new AtomicInteger();
    volatile long sleepMs;
    private final Path runs;

    BookingTools(Path runs) {
        this.runs = runs;
    }

    BookingTools() {
        this(null);
    }

    /** A booking: one seat on one flight. */
    public record Booking(String flight, String seat, int number) {}

    @Tool(name = "book_flight", description = "Books a seat on a flight", timeoutMs = 20_000)
    @Idempotent(leaseSeconds = 60)
    @McpHints(destructive = false, openWorld = true, title = "Book a flight")
    public Booking book(String flight, String seat) throws InterruptedException {
        int n = bookings.incrementAndGet();
        inFlight.incrementAndGet();
        try {
            count("book_flight");
            if (sleepMs > 0) {
                Thread.sleep(sleepMs);
            }
            return new Booking(flight, seat, n);
        } finally {
            inFlight.decrementAndGet();
        }
    }

    @Tool(name = "charge_card", description = "Charges a card")
    @Idempotent(effect = Effect.EFFECTFUL)
    public String charge(String card, int cents) {
        charges.incrementAndGet();
        throw new IllegalStateException("the gateway timed out after sending the charge");
    }

    @Tool(name = "flight_status", description = "Reads a flight's status")
    @Idempotent(effect = Effect.READ_ONLY, strategy = KeyStrategy.NONE)
    public Map<String, Object> status(String flight) {
        lookups.incrementAndGet();
        return Map.of("flight", flight, "status", "on time");
    }

    @Tool(name = "new_trip", description = "Opens a new trip")
    @Idempotent(strategy = KeyStrategy.UUID)
    public String newTrip(String name) {
        return "trip " + name;
    }

    @Tool(name = "send_note", description = "Sends a note (unprotected)")
    public String note(String text) {
        pings.incrementAndGet();
        return "sent " + text;
    }

    private void count(String what) {
        if (runs == null) {
            return;
        }
        try {
            Files.writeString(
                    runs, what + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
