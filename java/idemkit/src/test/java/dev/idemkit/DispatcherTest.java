package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.type.TypeReference;
import java.io.IOException;
import java.lang.reflect.UndeclaredThrowableException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The dispatcher against every row of SPEC §1/§3/§6/§7, on the in-memory store. */
class DispatcherTest {
    private final InMemoryIdempotencyStore store = new InMemoryIdempotencyStore();

    @AfterEach
    void close() {
        store.close();
    }

    ToolDispatcher dispatcher(Object... tools) {
        return ToolDispatcher.builder().tools(tools).store(store).build();
    }

    public static class Booking {
        public String flight;
        public String seat;

        public Booking() {}

        Booking(String flight, String seat) {
            this.flight = flight;
            this.seat = seat;
        }
    }

    static class Tools {
        final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        final List<String> keys = new java.util.concurrent.CopyOnWriteArrayList<>();
        volatile boolean failNext;

        int runs(String tool) {
            return runs.computeIfAbsent(tool, t -> new AtomicInteger()).get();
        }

        void ran(String tool, IdempotencyContext context) {
            runs.computeIfAbsent(tool, t -> new AtomicInteger()).incrementAndGet();
            keys.add(String.valueOf(context == null ? null : context.key()));
        }

        @Tool(name = "book")
        @Idempotent
        public Booking book(String flight, String seat, IdempotencyContext context) {
            ran("book", context);
            return new Booking(flight, seat);
        }

        @Tool(name = "book_many")
        @Idempotent
        public List<Booking> bookMany(List<String> flights, IdempotencyContext context) {
            ran("book_many", context);
            List<Booking> out = new ArrayList<>();
            for (String f : flights) {
                out.add(new Booking(f, "1A"));
            }
            return out;
        }

        @Tool(name = "by_flight")
        @Idempotent(keyArguments = {"flight"})
        public String byFlight(String flight, String requestId, IdempotencyContext context) {
            ran("by_flight", context);
            return flight + "/" + requestId;
        }

        @Tool(name = "charge")
        @Idempotent
        public String charge(Object amount, IdempotencyContext context) {
            ran("charge", context);
            return context.key();
        }

        @Tool(name = "send_email")
        @Idempotent(cacheFailures = true)
        public String sendEmail(String to, IdempotencyContext context) throws IOException {
            ran("send_email", context);
            if (failNext) {
                throw new IOException("smtp down for " + to);
            }
            return "sent:" + to;
        }

        @Tool(name = "flaky")
        @Idempotent
        public String flaky(String id, IdempotencyContext context) {
            ran("flaky", context);
            if (failNext) {
                throw new IllegalStateException("flaky " + id);
            }
            return "ok:" + id;
        }

        @Tool(name = "retry_failures")
        @Idempotent(cacheFailures = true, onCacheHit = RetryBehavior.RETURN_CACHED_IF_SUCCESS)
        public String retryFailures(String id, IdempotencyContext context) {
            ran("retry_failures", context);
            if (failNext) {
                throw new IllegalStateException("failed " + id);
            }
            return "ok:" + id;
        }

        @Tool(name = "order")
        @Idempotent(onCacheHit = RetryBehavior.FAIL_FAST)
        public String order(String item, IdempotencyContext context) throws InterruptedException {
            ran("order", context);
            if (item.equals("slow")) {
                Thread.sleep(500);
            }
            return "ordered:" + item;
        }

        @Tool(name = "uuid_tool")
        @Idempotent(strategy = KeyStrategy.UUID)
        public String uuidTool(String x, IdempotencyContext context) {
            ran("uuid_tool", context);
            return context.key();
        }

        @Tool(name = "plain")
        public String plain(String x, IdempotencyContext context) {
            ran("plain", context);
            return String.valueOf(context.key());
        }

        @Tool(name = "short_ttl")
        @Idempotent(ttlSeconds = 1)
        public String shortTtl(String x, IdempotencyContext context) {
            ran("short_ttl", context);
            return x;
        }

        @Tool(name = "short_lease")
        @Idempotent(leaseSeconds = 1)
        public String shortLease(long sleepMs, IdempotencyContext context)
                throws InterruptedException {
            ran("short_lease", context);
            Thread.sleep(sleepMs);
            return "done";
        }

        @Tool(name = "deadline", timeoutMs = 300)
        @Idempotent(leaseSeconds = 10)
        public String deadline(long sleepMs, IdempotencyContext context)
                throws InterruptedException {
            ran("deadline", context);
            Thread.sleep(sleepMs);
            return "slept " + sleepMs;
        }

        @Tool(name = "late_failure", timeoutMs = 200)
        @Idempotent(leaseSeconds = 10)
        public String lateFailure(long sleepMs, IdempotencyContext context)
                throws InterruptedException {
            ran("late_failure", context);
            Thread.sleep(sleepMs);
            throw new IllegalStateException("failed after " + sleepMs + " ms");
        }

        @Tool(name = "nothing")
        @Idempotent
        public void nothing(String x, IdempotencyContext context) {
            ran("nothing", context);
        }
    }

    static class Issues implements IdempotencyKeySupplier {
        final AtomicInteger supplied = new AtomicInteger();
        final AtomicInteger created = new AtomicInteger();

        @Override
        public String idempotencyKeyFor(Map<String, Object> input) {
            supplied.incrementAndGet();
            return (String) input.get("title");
        }

        @Tool(name = "create_issue")
        @Idempotent(strategy = KeyStrategy.EXPLICIT)
        public String createIssue(String title, String body, IdempotencyContext context) {
            created.incrementAndGet();
            return context.key() + "|" + context.suppliedKey();
        }
    }

    // --- strategies -------------------------------------------------------------------------

    @Test
    void hash_input_runs_the_body_once_per_input() {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        Booking first = (Booking) d.call("book", Map.of("flight", "BA117", "seat", "12A"));
        Booking again = (Booking) d.call("book", "{\"seat\":\"12A\",\"flight\":\"BA117\"}");
        assertEquals("BA117", first.flight);
        assertEquals("BA117", again.flight);
        assertEquals("12A", again.seat);
        assertEquals(1, t.runs("book"));
        d.call("book", Map.of("flight", "BA118", "seat", "12A"));
        assertEquals(2, t.runs("book"));
    }

    @Test
    void inputs_small_and_large_cross_the_boundary_alike() {
        // Up to 512 bytes the input is copied across; beyond, it is read in place.
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        for (int size : new int[] {1, 490, 511, 512, 513, 4_000}) {
            String flight = "F".repeat(size);
            Booking first = (Booking) d.call("book", Map.of("flight", flight, "seat", "1A"));
            Booking again =
                    (Booking) d.call("book", "{\"seat\":\"1A\",\"flight\":\"" + flight + "\"}");
            assertEquals(flight, first.flight);
            assertEquals(flight, again.flight);
        }
        assertEquals(6, t.runs("book"));
        assertEquals(6, new java.util.HashSet<>(t.keys).size());
    }

    @Test
    void a_remembered_result_reads_back_as_the_generic_return_type() {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        d.call("book_many", Map.of("flights", List.of("A1", "B2")));
        @SuppressWarnings("unchecked")
        List<Booking> replayed =
                (List<Booking>) d.call("book_many", Map.of("flights", List.of("A1", "B2")));
        assertEquals(1, t.runs("book_many"));
        assertEquals("B2", replayed.get(1).flight);
        List<Booking> typed =
                d.call(
                        "book_many",
                        Map.of("flights", List.of("A1", "B2")),
                        new TypeReference<List<Booking>>() {});
        assertEquals("A1", typed.get(0).flight);
        Booking one = d.call("book", Map.of("flight", "X", "seat", "1"), Booking.class);
        assertEquals("X", one.flight);
    }

    @Test
    void tenant_and_run_are_part_of_the_key() {
        Tools t = new Tools();
        ToolDispatcher d = ToolDispatcher.builder().tools(t).store(store).tenant("acme").build();
        Map<String, Object> in = Map.of("flight", "BA117", "seat", "1A");
        d.call("book", in);
        d.call("book", in);
        assertEquals(1, t.runs("book"));
        d.withTenant("globex").call("book", in);
        assertEquals(2, t.runs("book"));
        d.withTenant(null).call("book", in);
        d.withTenant("").call("book", in);
        assertEquals(4, t.runs("book"));
        d.withRun("run_2").call("book", in);
        d.withRun("run_2").call("book", in);
        assertEquals(5, t.runs("book"));
    }

    @Test
    void key_arguments_pick_the_members_that_identify_the_effect() {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        assertEquals("BA117/a", d.call("by_flight", Map.of("flight", "BA117", "requestId", "a")));
        assertEquals("BA117/a", d.call("by_flight", Map.of("flight", "BA117", "requestId", "b")));
        assertEquals(1, t.runs("by_flight"));
        InvalidKeyException missing =
                assertThrows(
                        InvalidKeyException.class,
                        () -> d.call("by_flight", Map.of("requestId", "c")));
        assertTrue(missing.getMessage().contains("flight"), missing.getMessage());
        assertEquals(1, t.runs("by_flight"));
    }

    @Test
    void explicit_keys_come_from_the_supplier_once_per_call() {
        Issues issues = new Issues();
        ToolDispatcher d = dispatcher(issues);
        String first =
                (String) d.call("create_issue", Map.of("title", "fix login bug", "body", "a"));
        String again =
                (String) d.call("create_issue", "{\"body\":\"a\",\"title\":\"fix login bug\"}");
        assertEquals(first, again);
        // Another body under the same title is the same issue (SPEC v1.2 §9 rule 1): the key is
        // the application's, so the other fields may differ.
        assertEquals(
                first, d.call("create_issue", "{\"title\":\"fix login bug\",\"body\":\"other\"}"));
        assertEquals(1, issues.created.get());
        assertEquals(3, issues.supplied.get());
        // The context's key is the 64-hex key; suppliedKey() the raw one (SPEC §5).
        assertEquals(
                "eb4ab0e2414b12f09f35bf927fef015f5086d52f00f3988bcb2e3d2861571855|fix login bug",
                first);
    }

    @Test
    void a_null_or_blank_explicit_key_fails_the_call_and_runs_nothing() {
        Issues issues = new Issues();
        ToolDispatcher d = dispatcher(issues);
        Map<String, Object> noTitle = new HashMap<>();
        noTitle.put("body", "x");
        assertThrows(InvalidKeyException.class, () -> d.call("create_issue", noTitle));
        assertThrows(
                InvalidKeyException.class,
                () -> d.call("create_issue", Map.of("title", " \u3000\t", "body", "x")));
        assertThrows(
                InvalidKeyException.class,
                () -> d.call("create_issue", Map.of("title", "", "body", "x")));
        InvalidKeyException lone =
                assertThrows(
                        InvalidKeyException.class,
                        () -> d.call("create_issue", Map.of("title", "a\uDC00", "body", "x")));
        assertTrue(lone.getMessage().contains("explicit key: lone surrogate"), lone.getMessage());
        assertEquals(0, issues.created.get());
        // U+001C is not White_Space: a key.
        d.call("create_issue", Map.of("title", "\u001C", "body", "x"));
        assertEquals(1, issues.created.get());
    }

    @Test
    void uuid_runs_every_call_with_a_fresh_uuid_and_none_runs_unprotected() {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        String a = (String) d.call("uuid_tool", Map.of("x", "1"));
        String b = (String) d.call("uuid_tool", Map.of("x", "1"));
        assertNotEquals(a, b);
        UUID.fromString(a);
        assertEquals(2, t.runs("uuid_tool"));
        assertEquals("null", d.call("plain", Map.of("x", "1")));
        d.call("plain", Map.of("x", "1"));
        assertEquals(2, t.runs("plain"));
    }

    // --- retry behaviours and failures ---------------------------------------------------------

    @Test
    void return_cached_replays_a_remembered_failure_as_cached_failure() {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        t.failNext = true;
        UndeclaredThrowableException first =
                assertThrows(
                        UndeclaredThrowableException.class,
                        () -> d.call("send_email", Map.of("to", "ana@example.com")));
        assertTrue(first.getCause() instanceof IOException);
        t.failNext = false;
        CachedFailureException cached =
                assertThrows(
                        CachedFailureException.class,
                        () -> d.call("send_email", Map.of("to", "ana@example.com")));
        assertEquals("java.io.IOException", cached.originalType());
        assertEquals("smtp down for ana@example.com", cached.originalMessage());
        assertEquals("send_email", cached.tool());
        assertEquals(64, cached.key().length());
        assertEquals(1, t.runs("send_email"));
    }

    @Test
    void a_replay_and_every_refusal_name_the_key_the_first_call_ran_under() {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        t.failNext = true;
        assertThrows(
                UndeclaredThrowableException.class,
                () -> d.call("send_email", Map.of("to", "bo@example.com")));
        String ranUnder = t.keys.get(0);
        assertTrue(ranUnder.matches("[0-9a-f]{64}"), ranUnder);
        assertEquals(
                ranUnder,
                assertThrows(
                                CachedFailureException.class,
                                () -> d.call("send_email", "{\"to\":\"bo@example.com\"}"))
                        .key());
        assertEquals("ordered:pen", d.call("order", Map.of("item", "pen")));
        String orderKey = t.keys.get(1);
        FailFastException repeat =
                assertThrows(FailFastException.class, () -> d.call("order", Map.of("item", "pen")));
        assertEquals(orderKey, repeat.key());
        assertTrue(repeat.getMessage().contains(orderKey), repeat.getMessage());
    }

    @Test
    void without_cache_failures_a_failure_is_released_and_a_retry_runs_again() {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        t.failNext = true;
        IllegalStateException first =
                assertThrows(IllegalStateException.class, () -> d.call("flaky", Map.of("id", "1")));
        assertEquals("flaky 1", first.getMessage());
        t.failNext = false;
        assertEquals("ok:1", d.call("flaky", Map.of("id", "1")));
        assertEquals("ok:1", d.call("flaky", Map.of("id", "1")));
        assertEquals(2, t.runs("flaky"));
    }

    @Test
    void return_cached_if_success_runs_a_remembered_failure_again() {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        t.failNext = true;
        assertThrows(
                IllegalStateException.class, () -> d.call("retry_failures", Map.of("id", "1")));
        t.failNext = false;
        assertEquals("ok:1", d.call("retry_failures", Map.of("id", "1")));
        assertEquals("ok:1", d.call("retry_failures", Map.of("id", "1")));
        assertEquals(2, t.runs("retry_failures"));
    }

    @Test
    void fail_fast_refuses_a_repeat_and_an_in_progress_key_at_once() throws Exception {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        assertEquals("ordered:pen", d.call("order", Map.of("item", "pen")));
        FailFastException repeat =
                assertThrows(FailFastException.class, () -> d.call("order", Map.of("item", "pen")));
        assertEquals(ErrorKind.FAIL_FAST, repeat.kind());
        ExecutorService pool = Executors.newSingleThreadExecutor();
        Future<Object> slow = pool.submit(() -> d.call("order", Map.of("item", "slow")));
        Thread.sleep(150);
        long start = System.nanoTime();
        assertThrows(FailFastException.class, () -> d.call("order", Map.of("item", "slow")));
        assertTrue(
                System.nanoTime() - start < TimeUnit.MILLISECONDS.toNanos(100),
                "fail-fast did not wait");
        assertEquals("ordered:slow", slow.get());
        assertEquals(2, t.runs("order"));
        pool.shutdown();
    }

    @Test
    void a_record_expires_after_its_ttl() throws Exception {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        d.call("short_ttl", Map.of("x", "1"));
        d.call("short_ttl", Map.of("x", "1"));
        assertEquals(1, t.runs("short_ttl"));
        Thread.sleep(1100);
        d.call("short_ttl", Map.of("x", "1"));
        assertEquals(2, t.runs("short_ttl"));
    }

    @Test
    void an_abandoned_lease_is_an_indeterminate_outcome_under_every_behaviour() throws Exception {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        Future<Object> owner = pool.submit(() -> d.call("short_lease", Map.of("sleepMs", 1600)));
        Thread.sleep(200);
        // Waits for the holder until its lease ends, then finds it abandoned.
        IndeterminateOutcomeException e =
                assertThrows(
                        IndeterminateOutcomeException.class,
                        () -> d.call("short_lease", Map.of("sleepMs", 1600)));
        assertEquals("short_lease", e.tool());
        assertTrue(e.getMessage().contains(e.key()), e.getMessage());
        // The owner's late outcome is still recorded: the next caller gets it.
        assertEquals("done", owner.get());
        assertEquals("done", d.call("short_lease", Map.of("sleepMs", 1600)));
        assertEquals(1, t.runs("short_lease"));
        pool.shutdown();
    }

    @Test
    void a_waiter_within_its_deadline_gets_the_holders_result() throws Exception {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        Future<Object> owner = pool.submit(() -> d.call("deadline", Map.of("sleepMs", 250)));
        Thread.sleep(50);
        // Overlapping call with a different sleep is a different key; use the same input.
        ExecutorService second = Executors.newSingleThreadExecutor();
        Future<Object> waiter = second.submit(() -> d.call("deadline", Map.of("sleepMs", 250)));
        assertEquals("slept 250", owner.get());
        assertEquals("slept 250", waiter.get());
        assertEquals(1, t.runs("deadline"));
        pool.shutdown();
        second.shutdown();
    }

    @Test
    void in_progress_past_the_deadline_fails_without_running() throws Exception {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        Future<Object> owner = pool.submit(() -> d.call("deadline", Map.of("sleepMs", 1000)));
        Thread.sleep(100);
        long start = System.nanoTime();
        InProgressException e =
                assertThrows(
                        InProgressException.class,
                        () -> d.call("deadline", Map.of("sleepMs", 1000)));
        long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(waitedMs >= 200 && waitedMs < 900, "waited " + waitedMs + " ms");
        assertEquals(ErrorKind.IN_PROGRESS, e.kind());
        // The owner overran its own deadline: it gets the timeout, and its outcome is recorded.
        java.util.concurrent.ExecutionException late =
                assertThrows(java.util.concurrent.ExecutionException.class, owner::get);
        assertTrue(
                late.getCause() instanceof IdempotencyTimeoutException,
                String.valueOf(late.getCause()));
        assertEquals("slept 1000", d.call("deadline", Map.of("sleepMs", 1000)));
        assertEquals(1, t.runs("deadline"));
        pool.shutdown();
    }

    /**
     * SPEC v1.1 rule 3, as for every face: a body past its deadline gets the timeout; its late
     * outcome settles as usual.
     */
    @Test
    void a_tool_body_overrunning_its_deadline_gets_the_timeout_and_its_late_outcome_settles() {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        // Finished late: recorded, and a repeat replays it without running.
        IdempotencyTimeoutException late =
                assertThrows(
                        IdempotencyTimeoutException.class,
                        () -> d.call("deadline", Map.of("sleepMs", 400)));
        assertEquals(ErrorKind.TIMEOUT, late.kind());
        assertTrue(late.getMessage().contains("outcome was recorded"), late.getMessage());
        assertEquals("slept 400", d.call("deadline", Map.of("sleepMs", 400)));
        assertEquals(1, t.runs("deadline"));
        // Failed late: the caller gets the timeout with the body's error as its cause, the claim is
        // released, and a repeat runs again.
        IdempotencyTimeoutException failed =
                assertThrows(
                        IdempotencyTimeoutException.class,
                        () -> d.call("late_failure", Map.of("sleepMs", 300)));
        assertTrue(
                failed.getCause() instanceof IllegalStateException,
                String.valueOf(failed.getCause()));
        assertTrue(failed.getMessage().contains("released"), failed.getMessage());
        assertThrows(
                IdempotencyTimeoutException.class,
                () -> d.call("late_failure", Map.of("sleepMs", 300)));
        assertEquals(2, t.runs("late_failure"));
        // In time, the body's own error.
        assertThrows(
                IllegalStateException.class, () -> d.call("late_failure", Map.of("sleepMs", 0)));
        assertEquals(3, t.runs("late_failure"));
    }

    @Test
    void interrupting_a_waiting_caller_ends_its_wait() throws Exception {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        Future<Object> owner = pool.submit(() -> d.call("short_lease", Map.of("sleepMs", 700)));
        Thread.sleep(100);
        AtomicInteger outcome = new AtomicInteger();
        java.util.concurrent.atomic.AtomicReference<String> waitedFor =
                new java.util.concurrent.atomic.AtomicReference<>();
        Thread waiter =
                new Thread(
                        () -> {
                            try {
                                d.call("short_lease", Map.of("sleepMs", 700));
                                outcome.set(1);
                            } catch (InProgressException e) {
                                waitedFor.set(e.key());
                                outcome.set(Thread.currentThread().isInterrupted() ? 2 : 3);
                            }
                        });
        waiter.start();
        Thread.sleep(150);
        waiter.interrupt();
        waiter.join(2000);
        assertEquals(
                2,
                outcome.get(),
                "interrupted waiter throws InProgressException and keeps its interrupt flag");
        owner.get();
        assertEquals(t.keys.get(0), waitedFor.get(), "the waiter names the key it waited for");
        pool.shutdown();
    }

    @Test
    void thirty_two_threads_making_the_same_call_run_the_body_once() throws Exception {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        int threads = 32;
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Object>> results = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            results.add(
                    pool.submit(
                            () -> {
                                start.await();
                                return d.call("book", Map.of("flight", "BA117", "seat", "32C"));
                            }));
        }
        for (Future<Object> f : results) {
            assertEquals("32C", ((Booking) f.get(20, TimeUnit.SECONDS)).seat);
        }
        assertEquals(1, t.runs("book"));
        pool.shutdown();
    }

    @Test
    void a_void_tool_is_remembered_too() {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        assertNull(d.call("nothing", Map.of("x", "1")));
        assertNull(d.call("nothing", Map.of("x", "1")));
        assertEquals(1, t.runs("nothing"));
    }

    // --- input handling (SPEC §7) --------------------------------------------------------------

    @Test
    void java_numbers_of_one_value_give_one_key_and_large_longs_keep_their_value() {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        Object two = d.call("charge", Map.of("amount", 2));
        assertEquals(two, d.call("charge", Map.of("amount", 2L)));
        assertEquals(two, d.call("charge", Map.of("amount", 2.0d)));
        assertEquals(two, d.call("charge", Map.of("amount", 2.0f)));
        assertEquals(two, d.call("charge", Map.of("amount", new BigDecimal("2.00"))));
        assertEquals(two, d.call("charge", Map.of("amount", BigInteger.TWO)));
        assertEquals(two, d.call("charge", "{\"amount\":20e-1}"));
        assertEquals(1, t.runs("charge"));
        Object big = d.call("charge", Map.of("amount", 9007199254740993L));
        Object other = d.call("charge", Map.of("amount", 9007199254740992L));
        assertNotEquals(big, other);
        assertEquals(big, d.call("charge", "{\"amount\":9007199254740993}"));
        assertEquals(3, t.runs("charge"));
        // 0.1f stands for 0.1, the same as the double 0.1.
        assertEquals(
                d.call("charge", Map.of("amount", 0.1d)), d.call("charge", Map.of("amount", 0.1f)));
    }

    @Test
    void lone_surrogates_are_refused_with_a_clear_error() {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        InvalidKeyException inMap =
                assertThrows(
                        InvalidKeyException.class,
                        () -> d.call("book", Map.of("flight", "BA\uD800", "seat", "1")));
        assertTrue(
                inMap.getMessage().contains("input.flight: lone surrogate \\ud800"),
                inMap.getMessage());
        InvalidKeyException inText =
                assertThrows(
                        InvalidKeyException.class,
                        () -> d.call("book", "{\"flight\":\"\uDFFF\",\"seat\":\"1\"}"));
        assertTrue(inText.getMessage().contains("lone surrogate \\udfff"), inText.getMessage());
        assertThrows(IllegalArgumentException.class, () -> d.withTenant("acme\uD800"));
        assertEquals(0, t.runs("book"));
        // A whole pair is fine.
        d.call("book", Map.of("flight", "\uD83D\uDE00", "seat", "1"));
        assertEquals(1, t.runs("book"));
    }

    enum Color {
        RED
    }

    @Test
    void non_json_values_in_a_map_are_refused_naming_the_member() {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        Object[] refused = {
            Color.RED,
            Instant.EPOCH,
            UUID.randomUUID(),
            new byte[] {1},
            'c',
            Optional.empty(),
            new Booking("a", "b"),
            new java.util.concurrent.atomic.AtomicLong(1)
        };
        for (Object value : refused) {
            Map<String, Object> nested = new LinkedHashMap<>();
            nested.put("ok", 1);
            nested.put("bad", List.of(1, value));
            InvalidKeyException e =
                    assertThrows(
                            InvalidKeyException.class,
                            () -> d.call("charge", Map.of("amount", nested)));
            assertTrue(
                    e.getMessage().contains("input.amount.bad[1]: " + value.getClass().getName()),
                    e.getMessage());
        }
        Map<Object, Object> intKeys = new HashMap<>();
        intKeys.put(1, "x");
        InvalidKeyException e =
                assertThrows(
                        InvalidKeyException.class,
                        () -> d.call("charge", Map.of("amount", intKeys)));
        assertTrue(e.getMessage().contains("member name"), e.getMessage());
        InvalidKeyException nan =
                assertThrows(
                        InvalidKeyException.class,
                        () -> d.call("charge", Map.of("amount", Double.NaN)));
        assertTrue(
                nan.getMessage().contains("input.amount: NaN is not a finite number"),
                nan.getMessage());
        assertEquals(0, t.runs("charge"));
    }

    @Test
    void nesting_deeper_than_64_and_cyclic_maps_are_refused_by_the_core() {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        Object deep = "leaf";
        for (int i = 0; i < 63; i++) {
            deep = List.of(deep);
        }
        // The input object plus 63 lists is 64 levels: accepted.
        d.call("charge", Map.of("amount", deep));
        Object deeper = List.of(deep);
        InvalidKeyException tooDeep =
                assertThrows(
                        InvalidKeyException.class,
                        () -> d.call("charge", Map.of("amount", deeper)));
        assertTrue(tooDeep.getMessage().contains("nested deeper than 64"), tooDeep.getMessage());
        Map<String, Object> cyclic = new HashMap<>();
        cyclic.put("self", cyclic);
        InvalidKeyException cycle =
                assertThrows(
                        InvalidKeyException.class,
                        () -> d.call("charge", Map.of("amount", cyclic)));
        assertTrue(cycle.getMessage().contains("nested deeper than 64"), cycle.getMessage());
        assertEquals(1, t.runs("charge"));
    }

    @Test
    void input_that_does_not_bind_is_refused_and_the_claim_released() {
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        IllegalArgumentException unknownArg =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> d.call("book", Map.of("flihgt", "BA117")));
        assertTrue(
                unknownArg.getMessage().contains("no parameter `flihgt`"), unknownArg.getMessage());
        assertThrows(IllegalArgumentException.class, () -> d.call("nope", Map.of()));
        assertThrows(
                IllegalArgumentException.class,
                () -> d.call("short_lease", Map.of("sleepMs", "soon")));
        // Released, not remembered: the same input with a bindable value... runs normally.
        assertEquals(0, t.runs("short_lease"));
        assertEquals("done", d.call("short_lease", Map.of("sleepMs", 1)));
    }

    // --- contexts ---------------------------------------------------------------------------

    static class Agent {
        ToolDispatcher dispatcher;
        final List<String> seen = new ArrayList<>();

        @Tool(name = "outer")
        @Idempotent
        public String outer(String x, IdempotencyContext context) {
            String inner = (String) dispatcher.call("inner", Map.of("y", x));
            seen.add(IdempotencyContext.current().orElseThrow().key());
            return context.key() + ">" + inner;
        }

        @Tool(name = "inner")
        @Idempotent
        public String inner(String y) {
            return IdempotencyContext.current().orElseThrow().key();
        }
    }

    @Test
    void a_tool_may_call_another_and_the_outer_context_is_restored() {
        Agent agent = new Agent();
        agent.dispatcher = dispatcher(agent);
        String result = (String) agent.dispatcher.call("outer", Map.of("x", "1"));
        String[] keys = result.split(">");
        assertNotEquals(keys[0], keys[1]);
        assertEquals(keys[0], agent.seen.get(0));
        assertTrue(IdempotencyContext.current().isEmpty());
    }

    // --- registration (SPEC §6) ---------------------------------------------------------------

    static class RequiredWithout {
        @Tool(name = "pay", idempotencyHint = IdempotencyHint.REQUIRED)
        public String pay(String x) {
            return x;
        }
    }

    static class RequiredUuid {
        @Tool(name = "pay", idempotencyHint = IdempotencyHint.REQUIRED)
        @Idempotent(strategy = KeyStrategy.UUID)
        public String pay(String x) {
            return x;
        }
    }

    static class RequiredOk {
        @Tool(name = "pay", idempotencyHint = IdempotencyHint.REQUIRED)
        @Idempotent
        public String pay(String x) {
            return x;
        }
    }

    static class ExplicitWithoutSupplier {
        @Tool(name = "x")
        @Idempotent(strategy = KeyStrategy.EXPLICIT)
        public String x(String a) {
            return a;
        }
    }

    static class UnknownKeyArgument {
        @Tool(name = "book")
        @Idempotent(keyArguments = {"flihgt"})
        public String book(String flight) {
            return flight;
        }
    }

    static class ZeroTtl {
        @Tool(name = "z")
        @Idempotent(ttlSeconds = 0)
        public String z(String a) {
            return a;
        }
    }

    static class NegativeLease {
        @Tool(name = "z")
        @Idempotent(leaseSeconds = -1)
        public String z(String a) {
            return a;
        }
    }

    static class TimeoutNotUnderLease {
        @Tool(name = "z", timeoutMs = 5000)
        @Idempotent(leaseSeconds = 5)
        public String z(String a) {
            return a;
        }
    }

    @Test
    void misuse_is_refused_at_registration() {
        IllegalStateException required =
                assertThrows(IllegalStateException.class, () -> dispatcher(new RequiredWithout()));
        assertTrue(required.getMessage().contains("REQUIRED"), required.getMessage());
        assertThrows(IllegalStateException.class, () -> dispatcher(new RequiredUuid()));
        IllegalStateException explicit =
                assertThrows(
                        IllegalStateException.class,
                        () -> dispatcher(new ExplicitWithoutSupplier()));
        assertTrue(explicit.getMessage().contains("IdempotencyKeySupplier"), explicit.getMessage());
        IllegalArgumentException unknown =
                assertThrows(
                        IllegalArgumentException.class, () -> dispatcher(new UnknownKeyArgument()));
        assertTrue(
                unknown.getMessage().contains("`flihgt`, which is not a parameter"),
                unknown.getMessage());
        IllegalArgumentException ttl =
                assertThrows(IllegalArgumentException.class, () -> dispatcher(new ZeroTtl()));
        assertTrue(ttl.getMessage().contains("ttlSeconds must be > 0 on `z`"), ttl.getMessage());
        IllegalArgumentException lease =
                assertThrows(IllegalArgumentException.class, () -> dispatcher(new NegativeLease()));
        assertTrue(
                lease.getMessage().contains("leaseSeconds must be > 0 on `z`; it was -1"),
                lease.getMessage());
        IllegalArgumentException timeout =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> dispatcher(new TimeoutNotUnderLease()));
        assertTrue(
                timeout.getMessage().contains("must be shorter than leaseSeconds"),
                timeout.getMessage());
    }

    @Test
    @ExpectedWarnings("in-memory")
    void a_required_tool_on_the_in_memory_store_logs_one_warning() {
        Logger logger = Logger.getLogger("dev.idemkit");
        LogCapture handler = new LogCapture();
        List<LogRecord> records = handler.records;
        logger.addHandler(handler);
        try {
            dispatcher(new RequiredOk());
        } finally {
            logger.removeHandler(handler);
        }
        assertEquals(1, records.size());
        assertTrue(records.get(0).getMessage().contains("in-memory"), records.get(0).getMessage());
    }

    @Idempotent(cacheFailures = true, ttlSeconds = 60)
    static class ClassPolicy {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "inherits")
        public String inherits(String x) {
            runs.incrementAndGet();
            throw new IllegalStateException("boom");
        }

        @Tool(name = "replaces")
        @Idempotent
        public String replaces(String x) {
            runs.incrementAndGet();
            throw new IllegalStateException("boom");
        }
    }

    @Test
    void a_class_policy_applies_and_a_method_policy_replaces_it_entirely() {
        ClassPolicy tools = new ClassPolicy();
        ToolDispatcher d = dispatcher(tools);
        assertThrows(IllegalStateException.class, () -> d.call("inherits", Map.of("x", "1")));
        assertThrows(CachedFailureException.class, () -> d.call("inherits", Map.of("x", "1")));
        assertEquals(1, tools.runs.get());
        // The method's @Idempotent has cacheFailures = false: not merged with the class's.
        assertThrows(IllegalStateException.class, () -> d.call("replaces", Map.of("x", "1")));
        assertThrows(IllegalStateException.class, () -> d.call("replaces", Map.of("x", "1")));
        assertEquals(3, tools.runs.get());
    }

    @Test
    void one_store_backs_several_dispatchers_and_forget_clears_a_tenant() {
        Tools a = new Tools();
        Tools b = new Tools();
        ToolDispatcher first =
                ToolDispatcher.builder().tools(a).store(store).tenant("acme").build();
        ToolDispatcher second =
                ToolDispatcher.builder().tools(b).store(store).tenant("acme").build();
        first.call("book", Map.of("flight", "F", "seat", "1"));
        second.call("book", Map.of("flight", "F", "seat", "1"));
        assertEquals(1, a.runs("book") + b.runs("book"));
        assertEquals(1, store.forget("acme"));
        second.call("book", Map.of("flight", "F", "seat", "1"));
        assertEquals(2, a.runs("book") + b.runs("book"));
        assertTrue(store.eventCounts().get("acquired") >= 2);
    }

    @Test
    void concurrent_callers_and_a_latch_release_in_order() throws Exception {
        // Many different keys at once: every one runs exactly once.
        Tools t = new Tools();
        ToolDispatcher d = dispatcher(t);
        ExecutorService pool = Executors.newFixedThreadPool(8);
        CountDownLatch done = new CountDownLatch(200);
        for (int i = 0; i < 200; i++) {
            int n = i % 50;
            pool.submit(
                    () -> {
                        try {
                            d.call("book", Map.of("flight", "F" + n, "seat", "1"));
                        } finally {
                            done.countDown();
                        }
                    });
        }
        assertTrue(done.await(20, TimeUnit.SECONDS));
        assertEquals(50, t.runs("book"));
        pool.shutdown();
    }
}
