package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The store conformance scenarios from Java: extend it with {@link #openStore()} for a store and
 * every scenario runs against it. Each test works in a tenant of its own, so a shared server with
 * other data is fine.
 */
public abstract class IdempotencyStoreContract {
    /** Opens the store under test (called once per test; closed after it). */
    protected abstract IdempotencyStore openStore();

    protected IdempotencyStore store;
    protected String tenant;

    @BeforeEach
    void open() {
        store = openStore();
        tenant = "contract-" + UUID.randomUUID();
    }

    @AfterEach
    void closeStore() {
        if (store != null) {
            try {
                store.forget(tenant);
            } finally {
                store.close();
            }
        }
    }

    public static class ContractTools {
        public final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "contract_book")
        @Idempotent
        public String book(String flight) throws InterruptedException {
            runs.incrementAndGet();
            Thread.sleep(20);
            return "booked:" + flight;
        }

        @Tool(name = "contract_fail")
        @Idempotent(cacheFailures = true)
        public String fail(String id) {
            runs.incrementAndGet();
            throw new IllegalStateException("declined " + id);
        }

        @Tool(name = "contract_fast")
        @Idempotent(onCacheHit = RetryBehavior.FAIL_FAST)
        public String fast(String id) {
            runs.incrementAndGet();
            return "done:" + id;
        }

        /** Blocks until {@code release} opens; {@code entered} opens when it starts. */
        public final java.util.concurrent.CountDownLatch entered =
                new java.util.concurrent.CountDownLatch(1);

        public final java.util.concurrent.CountDownLatch release =
                new java.util.concurrent.CountDownLatch(1);

        @Tool(name = "contract_hold", timeoutMs = 400)
        @Idempotent(leaseSeconds = 30)
        public String hold(String id) throws InterruptedException {
            runs.incrementAndGet();
            entered.countDown();
            release.await(30, TimeUnit.SECONDS);
            return "held:" + id;
        }

        @Tool(name = "contract_ttl")
        @Idempotent(ttlSeconds = 1)
        public String ttl(String id) {
            runs.incrementAndGet();
            return "kept:" + id;
        }
    }

    protected ToolDispatcher dispatcher(ContractTools tools) {
        return ToolDispatcher.builder().tools(tools).store(store).tenant(tenant).build();
    }

    @Test
    void one_call_runs_once_and_repeats_get_its_result() {
        ContractTools tools = new ContractTools();
        ToolDispatcher d = dispatcher(tools);
        assertEquals("booked:BA117", d.call("contract_book", Map.of("flight", "BA117")));
        assertEquals("booked:BA117", d.call("contract_book", Map.of("flight", "BA117")));
        assertEquals("booked:BA117", d.call("contract_book", "{\"flight\":\"BA117\"}"));
        assertEquals(1, tools.runs.get());
    }

    @Test
    void thirty_two_threads_making_the_same_call_run_it_once() throws Exception {
        ContractTools tools = new ContractTools();
        ToolDispatcher d = dispatcher(tools);
        int threads = 32;
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Object>> results = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                results.add(
                        pool.submit(
                                () -> {
                                    start.await();
                                    return d.call("contract_book", Map.of("flight", "LH400"));
                                }));
            }
            for (Future<Object> f : results) {
                assertEquals("booked:LH400", f.get(30, TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdown();
        }
        assertEquals(1, tools.runs.get());
    }

    @Test
    void a_cached_failure_is_replayed_with_its_type_and_message() {
        ContractTools tools = new ContractTools();
        ToolDispatcher d = dispatcher(tools);
        assertThrows(IllegalStateException.class, () -> d.call("contract_fail", Map.of("id", "7")));
        CachedFailureException cached =
                assertThrows(
                        CachedFailureException.class,
                        () -> d.call("contract_fail", Map.of("id", "7")));
        assertEquals(IllegalStateException.class.getName(), cached.originalType());
        assertEquals("declined 7", cached.originalMessage());
        assertEquals(1, tools.runs.get());
    }

    @Test
    void fail_fast_refuses_a_repeat() {
        ContractTools tools = new ContractTools();
        ToolDispatcher d = dispatcher(tools);
        assertEquals("done:1", d.call("contract_fast", Map.of("id", "1")));
        assertThrows(FailFastException.class, () -> d.call("contract_fast", Map.of("id", "1")));
        assertEquals(1, tools.runs.get());
    }

    @Test
    void a_record_expires_after_a_short_ttl() throws Exception {
        ContractTools tools = new ContractTools();
        ToolDispatcher d = dispatcher(tools);
        d.call("contract_ttl", Map.of("id", "1"));
        d.call("contract_ttl", Map.of("id", "1"));
        assertEquals(1, tools.runs.get());
        Thread.sleep(1200);
        d.call("contract_ttl", Map.of("id", "1"));
        assertEquals(2, tools.runs.get());
        assertTrue(store.purgeExpired() >= 0);
    }

    @Test
    void forget_deletes_only_that_tenants_records() {
        ContractTools tools = new ContractTools();
        ToolDispatcher d = dispatcher(tools);
        String other = tenant + "-other";
        d.call("contract_book", Map.of("flight", "A"));
        d.call("contract_book", Map.of("flight", "B"));
        d.withTenant(other).call("contract_book", Map.of("flight", "A"));
        assertEquals(3, tools.runs.get());
        assertEquals(2, store.forget(tenant));
        d.call("contract_book", Map.of("flight", "A"));
        d.withTenant(other).call("contract_book", Map.of("flight", "A"));
        assertEquals(4, tools.runs.get());
        store.forget(other);
    }

    @Test
    void a_waiter_at_its_deadline_gets_in_progress_and_the_body_runs_once() throws Exception {
        ContractTools tools = new ContractTools();
        ToolDispatcher d = dispatcher(tools);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<Object> holder = pool.submit(() -> d.call("contract_hold", Map.of("id", "1")));
            assertTrue(tools.entered.await(10, TimeUnit.SECONDS), "the holder started");
            long start = System.nanoTime();
            InProgressException waiter =
                    assertThrows(
                            InProgressException.class,
                            () -> d.call("contract_hold", Map.of("id", "1")),
                            "a waiter still waiting at its deadline gets the in-progress error, never a store error");
            long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertEquals(ErrorKind.IN_PROGRESS, waiter.kind());
            assertEquals("contract_hold", waiter.tool());
            assertTrue(
                    waitedMs >= 300 && waitedMs < 5_000,
                    "waited " + waitedMs + " ms for a 400 ms deadline");
            tools.release.countDown();
            // The holder overran its own deadline: it gets the timeout error, and its outcome is
            // recorded.
            java.util.concurrent.ExecutionException late =
                    assertThrows(
                            java.util.concurrent.ExecutionException.class,
                            () -> holder.get(30, TimeUnit.SECONDS));
            assertTrue(
                    late.getCause() instanceof IdempotencyTimeoutException,
                    String.valueOf(late.getCause()));
            assertEquals("held:1", d.call("contract_hold", Map.of("id", "1")));
            assertEquals(1, tools.runs.get());
        } finally {
            tools.release.countDown();
            pool.shutdown();
        }
    }

    /**
     * {@code prefix} followed by {@code unit} until it is {@code bytes} bytes of UTF-8 (after NFC).
     */
    private static String padded(String prefix, String unit, int unitBytes, int bytes) {
        int room = bytes - prefix.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
        assertEquals(0, room % unitBytes);
        return prefix + unit.repeat(room / unitBytes);
    }

    @Test
    void
            tenant_and_run_up_to_1024_utf8_bytes_after_nfc_work_and_longer_are_refused_naming_the_field() {
        ContractTools tools = new ContractTools();
        ToolDispatcher d = dispatcher(tools);
        // U+00E9 is 2 bytes of UTF-8; written decomposed (e + U+0301) it is 3 bytes before NFC.
        String atLimit = padded(tenant + "-", "\u00e9", 2, 1024);
        String decomposed = padded(tenant + "-", "e\u0301", 2, 1024);
        assertTrue(decomposed.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > 1024);
        try {
            assertEquals(
                    "booked:N1",
                    d.withTenant(atLimit).call("contract_book", Map.of("flight", "N1")));
            assertEquals(
                    "booked:N1",
                    d.withTenant(atLimit).call("contract_book", Map.of("flight", "N1")));
            assertEquals(
                    "booked:N3",
                    d.withTenant(decomposed).call("contract_book", Map.of("flight", "N3")),
                    "1,536 bytes as written, 1,024 after NFC: accepted");
            assertEquals(
                    "booked:N1", d.withRun(atLimit).call("contract_book", Map.of("flight", "N1")));
            assertEquals(3, tools.runs.get());
        } finally {
            store.forget(atLimit);
            store.forget(decomposed);
        }

        Map<String, Long> before = store.eventCounts();
        InvalidKeyException tooLongTenant =
                assertThrows(
                        InvalidKeyException.class,
                        () ->
                                d.withTenant(atLimit + "x")
                                        .call("contract_book", Map.of("flight", "N2")));
        assertEquals(ErrorKind.INVALID_KEY, tooLongTenant.kind());
        assertTrue(
                tooLongTenant.getMessage().contains("tenant: 1025 bytes"),
                tooLongTenant.getMessage());
        InvalidKeyException tooLongRun =
                assertThrows(
                        InvalidKeyException.class,
                        () ->
                                d.withRun(atLimit + "x")
                                        .call("contract_book", Map.of("flight", "N2")));
        assertTrue(tooLongRun.getMessage().contains("run: 1025 bytes"), tooLongRun.getMessage());
        assertEquals(3, tools.runs.get(), "a refused call runs nothing");
        assertEquals(before, store.eventCounts(), "a refused call never reaches the store");
    }

    /** A tool registered under any name: the name is the scope of its keys. */
    public static class ScopeProbe {
        public final AtomicInteger runs = new AtomicInteger();

        public String probe(String id) {
            runs.incrementAndGet();
            return "probed:" + id;
        }
    }

    private ToolDispatcher scoped(ScopeProbe probe, String scope) throws NoSuchMethodException {
        return ToolDispatcher.builder()
                .store(store)
                .tenant(tenant)
                .tool(
                        probe,
                        ScopeProbe.class.getMethod("probe", String.class),
                        Annotations.tool(scope),
                        Annotations.idempotent(KeyStrategy.HASH_INPUT))
                .build();
    }

    @Test
    void a_scope_up_to_1024_utf8_bytes_after_nfc_works_and_a_longer_one_is_refused_at_registration()
            throws Exception {
        ScopeProbe probe = new ScopeProbe();
        String atLimit = padded("scope-", "\u00e9", 2, 1024);
        ToolDispatcher d = scoped(probe, atLimit);
        assertEquals("probed:1", d.call(atLimit, Map.of("id", "1")));
        assertEquals("probed:1", d.call(atLimit, Map.of("id", "1")));
        assertEquals(1, probe.runs.get());

        Map<String, Long> before = store.eventCounts();
        String tooLong = atLimit + "x";
        // The tool name is fixed when the tool is registered, so that is where it is refused.
        IllegalArgumentException refused =
                assertThrows(IllegalArgumentException.class, () -> scoped(probe, tooLong));
        assertTrue(
                refused.getMessage().contains("1025 bytes")
                        && refused.getMessage().contains("scope"),
                refused.getMessage());
        assertEquals(1, probe.runs.get(), "a refused call runs nothing");
        assertEquals(before, store.eventCounts(), "a refused call never reaches the store");
    }
}
