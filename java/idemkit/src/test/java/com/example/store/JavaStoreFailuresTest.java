package com.example.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.ErrorKind;
import dev.idemkit.IdempotencyStore;
import dev.idemkit.Idempotent;
import dev.idemkit.StoreUnavailableException;
import dev.idemkit.Tool;
import dev.idemkit.ToolDispatcher;
import dev.idemkit.spi.ClaimRequest;
import dev.idemkit.spi.ClaimResult;
import dev.idemkit.spi.RecordId;
import dev.idemkit.spi.SettleResult;
import dev.idemkit.spi.StoredOutcome;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** What a store written in Java does when its operations throw. */
// A store that fails on purpose: the core warns of each failure, some settled in the background.
@dev.idemkit.ExpectedWarnings({"store_error", "not settled yet"})
class JavaStoreFailuresTest {
    public static class Tools {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "pay")
        @Idempotent
        public String pay(String id) {
            runs.incrementAndGet();
            return "paid:" + id;
        }
    }

    /**
     * A completion that keeps failing past the caller's answer is retried in the background, on
     * idemkit's own threads (attached to the JVM as daemons), until it lands.
     */
    @Test
    void a_completion_failing_past_the_answer_is_settled_in_the_background_on_a_daemon_thread()
            throws Exception {
        Flaky ops = new Flaky();
        ops.completionsToFail.set(Integer.MAX_VALUE);
        Tools tools = new Tools();
        try (IdempotencyStore store = IdempotencyStore.of(ops);
                ToolDispatcher d = ToolDispatcher.builder().tools(tools).store(store).build()) {
            assertEquals("paid:3", d.call("pay", Map.of("id", "3")));
            Thread caller = Thread.currentThread();
            int before = ops.completions.get();
            for (int i = 0; i < 500 && ops.completions.get() == before; i++) {
                Thread.sleep(20);
            }
            ops.completionsToFail.set(0);
            for (int i = 0;
                    i < 500 && ops.get(new RecordId(null, onlyKey(ops))).record() == null;
                    i++) {
                Thread.sleep(20);
            }
            Thread settler = ops.lastCompletionThread;
            assertTrue(settler != caller && settler.isDaemon(), String.valueOf(settler));
            assertEquals("paid:3", d.call("pay", Map.of("id", "3")));
            assertEquals(1, tools.runs.get());
        }
    }

    private static String onlyKey(MapStoreOperations ops) {
        return ops.list(new dev.idemkit.spi.ListRequest(true, null, null, 10, null))
                .records()
                .get(0)
                .key();
    }

    /** A map store whose claims or completions fail while told to. */
    static final class Flaky extends MapStoreOperations {
        volatile boolean claimsFail;
        final AtomicInteger completionsToFail = new AtomicInteger();
        final AtomicInteger completions = new AtomicInteger();
        volatile Thread lastCompletionThread;

        @Override
        public ClaimResult claim(ClaimRequest request) {
            if (claimsFail) {
                throw new IllegalStateException("the database is down");
            }
            return super.claim(request);
        }

        @Override
        public SettleResult complete(RecordId id, String token, StoredOutcome outcome, long ttlMs) {
            completions.incrementAndGet();
            lastCompletionThread = Thread.currentThread();
            if (completionsToFail.getAndDecrement() > 0) {
                throw new IllegalStateException("the connection broke");
            }
            return super.complete(id, token, outcome, ttlMs);
        }
    }

    @Test
    void an_exception_of_the_store_is_a_store_error_carrying_its_message() {
        Flaky ops = new Flaky();
        ops.claimsFail = true;
        Tools tools = new Tools();
        try (IdempotencyStore store = IdempotencyStore.of(ops);
                ToolDispatcher d = ToolDispatcher.builder().tools(tools).store(store).build()) {
            StoreUnavailableException e =
                    assertThrows(
                            StoreUnavailableException.class,
                            () -> d.call("pay", Map.of("id", "1")));
            assertEquals(ErrorKind.STORE_UNAVAILABLE, e.kind());
            assertTrue(
                    e.getMessage()
                            .contains("java.lang.IllegalStateException: the database is down"),
                    e.getMessage());
            assertEquals(0, tools.runs.get(), "a call that could not claim runs nothing");
            // Nothing was left pending on this thread: the next call works.
            ops.claimsFail = false;
            assertEquals("paid:1", d.call("pay", Map.of("id", "1")));
            assertEquals("paid:1", d.call("pay", Map.of("id", "1")));
            assertEquals(1, tools.runs.get());
        }
    }

    @Test
    void a_completion_that_fails_is_retried_and_the_outcome_recorded() throws Exception {
        Flaky ops = new Flaky();
        ops.completionsToFail.set(3);
        Tools tools = new Tools();
        try (IdempotencyStore store = IdempotencyStore.of(ops);
                ToolDispatcher d = ToolDispatcher.builder().tools(tools).store(store).build()) {
            assertEquals("paid:2", d.call("pay", Map.of("id", "2")));
            // Settling goes on (in the background once the caller has its answer) until recorded.
            for (int i = 0; i < 500 && ops.completions.get() < 4; i++) {
                Thread.sleep(20);
            }
            assertTrue(ops.completions.get() >= 4, "completions: " + ops.completions.get());
            assertEquals("paid:2", d.call("pay", Map.of("id", "2")));
            assertEquals(1, tools.runs.get());
        }
    }
}
