package dev.idemkit.demo;

import dev.idemkit.CachedFailureException;
import dev.idemkit.FailFastException;
import dev.idemkit.IdempotencyContext;
import dev.idemkit.IdempotencyException;
import dev.idemkit.IdempotencyHint;
import dev.idemkit.Idempotent;
import dev.idemkit.InMemoryIdempotencyStore;
import dev.idemkit.RetryBehavior;
import dev.idemkit.Tool;
import dev.idemkit.ToolDispatcher;
import dev.idemkit.ToolParam;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An agent-style program on the in-memory store: the tool calls a model loop makes, with the
 * retries such loops make, and what idemkit does with each. Run it with {@code scripts/demo.sh}.
 */
public final class AgentDemo {
    /** The side effects, counted. */
    public static final class TravelTools {
        final AtomicInteger bookings = new AtomicInteger();
        final AtomicInteger emails = new AtomicInteger();
        final AtomicInteger charges = new AtomicInteger();
        final AtomicInteger orders = new AtomicInteger();
        final AtomicInteger slowBookings = new AtomicInteger();

        @Tool(
                name = "book_flight",
                description = "Books a seat on a flight",
                idempotencyHint = IdempotencyHint.REQUIRED)
        @Idempotent(keyArguments = {"flight", "passenger"})
        public String bookFlight(
                @ToolParam(name = "flight") String flight,
                @ToolParam(name = "passenger") String passenger,
                @ToolParam(name = "note") String note) {
            return "BK-" + flight + "-" + bookings.incrementAndGet();
        }

        @Tool(
                name = "book_hotel",
                description = "Books a hotel room (slow upstream)",
                timeoutMs = 300)
        @Idempotent(leaseSeconds = 30)
        public String bookHotel(String hotel, String nights) throws InterruptedException {
            int n = slowBookings.incrementAndGet();
            Thread.sleep(500); // the upstream API is slow today
            return "HT-" + hotel + "-" + n;
        }

        @Tool(name = "send_email", description = "Sends an email")
        @Idempotent
        public String sendEmail(String to, String subject, IdempotencyContext context)
                throws InterruptedException {
            emails.incrementAndGet();
            Thread.sleep(50);
            // The key can travel upstream as an Idempotency-Key header.
            return "msg-" + context.key().substring(0, 8);
        }

        @Tool(name = "charge_card", description = "Charges a card")
        @Idempotent(cacheFailures = true)
        public String chargeCard(String card, long cents) {
            charges.incrementAndGet();
            throw new PaymentDeclined("card " + card + " declined: insufficient funds");
        }

        @Tool(name = "place_order", description = "Places an order")
        @Idempotent(onCacheHit = RetryBehavior.FAIL_FAST)
        public String placeOrder(String sku, int quantity) {
            return "ORD-" + orders.incrementAndGet();
        }
    }

    /** What the payment provider throws. */
    public static final class PaymentDeclined extends RuntimeException {
        private static final long serialVersionUID = 1L;

        public PaymentDeclined(String message) {
            super(message);
        }
    }

    private AgentDemo() {}

    private static String attempt(
            ToolDispatcher dispatcher, String tool, Map<String, Object> input) {
        try {
            return "got " + dispatcher.call(tool, input);
        } catch (IdempotencyException e) {
            return "got " + e.getClass().getSimpleName() + " (" + e.kind() + ")";
        } catch (RuntimeException e) {
            return "got " + e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    private static void show(String scenario, int ran, List<String> answers) {
        System.out.printf("%-34s body ran %dx%n", scenario, ran);
        for (int i = 0; i < answers.size(); i++) {
            System.out.printf("    call %d: %s%n", i + 1, answers.get(i));
        }
    }

    public static void main(String[] args) throws Exception {
        TravelTools tools = new TravelTools();
        try (InMemoryIdempotencyStore store = new InMemoryIdempotencyStore()) {
            System.out.println(
                    "idemkit agent demo (store: "
                            + store.describe()
                            + ", tenant acme, run trip-42)");
            // The dispatcher warns, rightly, that REQUIRED tools on an in-memory store are
            // deduplicated in this process only: say first that this is expected here.
            System.out.println(
                    "(the warning below is expected: REQUIRED tools want a shared store, Redis or"
                            + " PostgreSQL, in production; this demo keeps to memory)");
            System.out.flush();
            ToolDispatcher agent =
                    ToolDispatcher.builder()
                            .tools(tools)
                            .store(store)
                            .tenant("acme")
                            .run("trip-42")
                            .build();
            System.out.println();

            // 1. The model re-asks for the same booking (its note differs, but the key arguments
            // don't).
            List<String> answers = new ArrayList<>();
            answers.add(
                    attempt(
                            agent,
                            "book_flight",
                            Map.of("flight", "BA117", "passenger", "Ana", "note", "window")));
            answers.add(
                    attempt(
                            agent,
                            "book_flight",
                            Map.of(
                                    "flight",
                                    "BA117",
                                    "passenger",
                                    "Ana",
                                    "note",
                                    "window please!")));
            show("1. retried booking", tools.bookings.get(), answers);

            // 2. The call times out at the caller; the caller retries and gets the remembered
            // result.
            answers = new ArrayList<>();
            answers.add(attempt(agent, "book_hotel", Map.of("hotel", "Ritz", "nights", "2")));
            answers.add(attempt(agent, "book_hotel", Map.of("hotel", "Ritz", "nights", "2")));
            show("2. timed out, then retried", tools.slowBookings.get(), answers);

            // 3. Eight workers send the same email at once.
            int workers = 8;
            CyclicBarrier start = new CyclicBarrier(workers);
            ExecutorService pool = Executors.newFixedThreadPool(workers);
            List<Future<String>> sent = new ArrayList<>();
            for (int i = 0; i < workers; i++) {
                sent.add(
                        pool.submit(
                                () -> {
                                    start.await();
                                    return attempt(
                                            agent,
                                            "send_email",
                                            Map.of(
                                                    "to",
                                                    "ana@example.com",
                                                    "subject",
                                                    "Your trip"));
                                }));
            }
            answers = new ArrayList<>();
            for (Future<String> f : sent) {
                answers.add(f.get());
            }
            pool.shutdown();
            show("3. 8 concurrent duplicates", tools.emails.get(), answers);

            // 4. A declined charge is remembered: the retry does not charge again.
            answers = new ArrayList<>();
            answers.add(attempt(agent, "charge_card", Map.of("card", "4242", "cents", 129900)));
            try {
                agent.call("charge_card", Map.of("card", "4242", "cents", 129900));
            } catch (CachedFailureException e) {
                answers.add(
                        "got CachedFailureException: originally "
                                + e.originalType().replace('$', '.')
                                + ": "
                                + e.originalMessage());
            }
            show("4. cached failure", tools.charges.get(), answers);

            // 5. An order must never be placed twice, and a repeat should say so at once.
            answers = new ArrayList<>();
            answers.add(attempt(agent, "place_order", Map.of("sku", "TENT-2", "quantity", 1)));
            try {
                agent.call("place_order", Map.of("sku", "TENT-2", "quantity", 1));
            } catch (FailFastException e) {
                answers.add(
                        "got FailFastException: "
                                + e.getMessage().substring(0, e.getMessage().indexOf(" under")));
            }
            show("5. FAIL_FAST repeat", tools.orders.get(), answers);

            System.out.println();
            System.out.println("events: " + store.eventCounts());
            // What each count means (IdempotencyStore.eventCounts, SPEC section 3).
            System.out.println(
                    "  how the store answered the calls above: acquired = a key was claimed and"
                            + " its body ran; deduplicated = a remembered outcome answered, the"
                            + " body did not run; waited = a call waited for another caller's"
                            + " claim; failed_fast = FAIL_FAST refused a repeat; released = a"
                            + " failed body's claim was freed so a retry runs again; the others"
                            + " (wait_timed_out, indeterminate, store_error, record_failed,"
                            + " retried) count timeouts, unknown outcomes and faults.");
        }
    }
}
