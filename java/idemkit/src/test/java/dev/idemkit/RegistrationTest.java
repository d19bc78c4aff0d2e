package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What tools and web-service actions share: how annotated methods are found (superclasses,
 * interfaces, overrides), and closing a dispatcher or executor (atomic, safe twice, racing calls,
 * closing only what it owns).
 */
class RegistrationTest {
    private WebServiceTestServer server;

    @BeforeEach
    void start() throws Exception {
        server = new WebServiceTestServer();
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private static boolean closed(ToolDispatcher d) {
        return ((NativeIdempotencyStore) d.store()).isClosed();
    }

    private static boolean closed(WebServiceExecutor e) {
        return ((NativeIdempotencyStore) e.store()).isClosed();
    }

    // --- discovery -------------------------------------------------------------------------

    /** A tool declared on an interface: the implementation's body runs. */
    public interface Booking {
        @Tool(name = "book")
        @Idempotent
        String book(@ToolParam(name = "flight") String flight);
    }

    public static class BookingImpl implements Booking {
        final AtomicInteger runs = new AtomicInteger();

        @Override
        public String book(String flight) {
            return "BK-" + flight + "-" + runs.incrementAndGet();
        }
    }

    @Test
    void a_tool_declared_on_an_interface_is_registered_and_runs_the_implementation() {
        BookingImpl impl = new BookingImpl();
        try (ToolDispatcher d = ToolDispatcher.builder().tools(impl).build()) {
            assertEquals(Set.of("book"), d.toolNames());
            assertEquals("BK-BA117-1", d.call("book", Map.of("flight", "BA117")));
            // HASH_INPUT from the interface method's policy: the repeat is replayed.
            assertEquals("BK-BA117-1", d.call("book", Map.of("flight", "BA117")));
            assertEquals(1, impl.runs.get());
        }
    }

    public static class Mailer {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "send")
        @Idempotent
        public String send(@ToolParam(name = "to") String to) {
            runs.incrementAndGet();
            return "base:" + to;
        }
    }

    /** Annotated again on the override (as a subclass that changes the tool does). */
    public static class AuditedMailer extends Mailer {
        @Override
        @Tool(name = "send", description = "sends and audits")
        @Idempotent
        public String send(@ToolParam(name = "to") String to) {
            runs.incrementAndGet();
            return "audited:" + to;
        }
    }

    /** Renamed on the override: only the new name is a tool. */
    public static class RenamedMailer extends Mailer {
        @Override
        @Tool(name = "send_v2")
        @Idempotent
        public String send(@ToolParam(name = "to") String to) {
            return "v2:" + to;
        }
    }

    /** Not annotated on the override: the original's annotations hold, the override runs. */
    public static class QuietMailer extends Mailer {
        @Override
        public String send(String to) {
            runs.incrementAndGet();
            return "quiet:" + to;
        }
    }

    @Test
    void an_override_annotated_again_replaces_its_original_tool() {
        AuditedMailer mailer = new AuditedMailer();
        try (ToolDispatcher d = ToolDispatcher.builder().tools(mailer).build()) {
            assertEquals(Set.of("send"), d.toolNames());
            assertEquals("audited:ann", d.call("send", Map.of("to", "ann")));
            assertEquals("audited:ann", d.call("send", Map.of("to", "ann")));
            assertEquals(1, mailer.runs.get());
        }
        try (ToolDispatcher d = ToolDispatcher.builder().tools(new RenamedMailer()).build()) {
            assertEquals(Set.of("send_v2"), d.toolNames());
            assertEquals("v2:bo", d.call("send_v2", Map.of("to", "bo")));
        }
    }

    @Test
    void an_override_without_the_annotation_keeps_the_original_tool_and_runs_the_override() {
        QuietMailer mailer = new QuietMailer();
        try (ToolDispatcher d = ToolDispatcher.builder().tools(mailer).build()) {
            assertEquals(Set.of("send"), d.toolNames());
            assertEquals("quiet:cy", d.call("send", Map.of("to", "cy")));
            assertEquals("quiet:cy", d.call("send", Map.of("to", "cy")));
            assertEquals(1, mailer.runs.get());
        }
    }

    @Idempotent
    public static class Orders {
        @WebService(endpoint = "/orders")
        public String create(@ToolParam(name = "item") String item) {
            return null;
        }
    }

    /** A subclass that overrides the declaration without annotating it (e.g. to document it). */
    public static class DocumentedOrders extends Orders {
        @Override
        public String create(String item) {
            return null;
        }
    }

    @Test
    void an_action_overridden_without_the_annotation_keeps_its_original_declaration() {
        try (WebServiceExecutor e =
                WebServiceExecutor.builder()
                        .baseUri(server.baseUri())
                        .roles(new DocumentedOrders())
                        .build()) {
            assertEquals(Set.of("create"), e.actionNames());
            e.invoke("create", Map.of("item", "tea"));
            assertEquals("/orders", server.only().rawPath);
        }
    }

    // --- input checks ----------------------------------------------------------------------

    @Idempotent
    public static class Deep {
        @WebService(endpoint = "/deep")
        public String deep(@ToolParam(name = "amount") Object amount) {
            return null;
        }

        @WebService(endpoint = "/loose")
        @Idempotent(strategy = KeyStrategy.NONE)
        public String loose(@ToolParam(name = "amount") Object amount) {
            return null;
        }
    }

    @Test
    void an_action_input_nested_deeper_than_64_gets_the_cores_error_naming_action_and_member() {
        try (WebServiceExecutor e =
                WebServiceExecutor.builder().baseUri(server.baseUri()).roles(new Deep()).build()) {
            Object deep = "leaf";
            for (int i = 0; i < 63; i++) {
                deep = List.of(deep);
            }
            // The input object plus 63 lists is 64 levels: accepted and sent.
            e.invoke("deep", Map.of("amount", deep));
            assertEquals(1, server.count());
            Object deeper = List.of(deep);
            InvalidKeyException tooDeep =
                    assertThrows(
                            InvalidKeyException.class,
                            () -> e.invoke("deep", Map.of("amount", deeper)));
            assertEquals("deep", tooDeep.tool());
            assertTrue(tooDeep.getMessage().contains("`deep`"), tooDeep.getMessage());
            assertTrue(tooDeep.getMessage().contains("input.amount[0]"), tooDeep.getMessage());
            assertTrue(
                    tooDeep.getMessage().contains("nested deeper than 64"), tooDeep.getMessage());
            // The same input as JSON text gets the same error from the same place.
            StringBuilder text = new StringBuilder("{\"amount\":");
            text.append("[".repeat(64)).append("\"leaf\"").append("]".repeat(64)).append('}');
            InvalidKeyException asText =
                    assertThrows(
                            InvalidKeyException.class, () -> e.invoke("deep", text.toString()));
            assertEquals(tooDeep.getMessage(), asText.getMessage());
            assertEquals(1, server.count(), "nothing sent for a refused input");
        }
    }

    @Test
    void a_cyclic_map_input_is_refused_without_overflowing_the_stack() {
        try (WebServiceExecutor e =
                WebServiceExecutor.builder().baseUri(server.baseUri()).roles(new Deep()).build()) {
            Map<String, Object> cyclic = new java.util.HashMap<>();
            cyclic.put("self", cyclic);
            IllegalArgumentException refused =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> e.invoke("loose", Map.of("amount", cyclic)));
            assertTrue(refused.getMessage().contains("`loose`"), refused.getMessage());
            // HASH_INPUT: the core derives the key from it and refuses it, as for a tool.
            InvalidKeyException core =
                    assertThrows(
                            InvalidKeyException.class,
                            () -> e.invoke("deep", Map.of("amount", cyclic)));
            assertTrue(core.getMessage().contains("nested deeper than 64"), core.getMessage());
            assertEquals(0, server.count());
        }
    }

    // --- close -----------------------------------------------------------------------------

    public static class Slow {
        final AtomicInteger runs = new AtomicInteger();
        volatile CountDownLatch entered = new CountDownLatch(0);
        volatile CountDownLatch release = new CountDownLatch(0);

        @Tool(name = "work")
        @Idempotent
        public String work(@ToolParam(name = "n") int n) throws InterruptedException {
            entered.countDown();
            release.await(10, TimeUnit.SECONDS);
            runs.incrementAndGet();
            return "done-" + n;
        }
    }

    @Test
    void closing_a_dispatcher_twice_is_safe_and_refuses_later_calls_on_every_view() {
        Slow slow = new Slow();
        ToolDispatcher d = ToolDispatcher.builder().tools(slow).build();
        ToolDispatcher view = d.withTenant("acme");
        assertEquals("done-1", d.call("work", Map.of("n", 1)));
        d.close();
        d.close();
        assertTrue(d.isClosed());
        assertTrue(view.isClosed());
        IllegalStateException refused =
                assertThrows(IllegalStateException.class, () -> view.call("work", Map.of("n", 2)));
        assertTrue(
                refused.getMessage().contains("the tool dispatcher is closed"),
                refused.getMessage());
        assertThrows(IllegalStateException.class, () -> d.call("work", "{\"n\":1}"));
        assertEquals(1, slow.runs.get());
    }

    @Test
    void
            a_dispatcher_closes_the_store_it_created_after_the_call_in_flight_but_never_a_store_it_was_given()
                    throws Exception {
        Slow slow = new Slow();
        slow.entered = new CountDownLatch(1);
        slow.release = new CountDownLatch(1);
        ToolDispatcher owning = ToolDispatcher.builder().tools(slow).build();
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<Object> inFlight = pool.submit(() -> owning.call("work", Map.of("n", 7)));
            assertTrue(slow.entered.await(10, TimeUnit.SECONDS));
            owning.close();
            // The call in flight still holds the store and its native tool.
            assertFalse(closed(owning), "closed under a call in flight");
            slow.release.countDown();
            assertEquals("done-7", inFlight.get(10, TimeUnit.SECONDS));
            assertTrue(
                    closed(owning), "the store the builder created is freed with the dispatcher");
        } finally {
            pool.shutdownNow();
        }

        try (InMemoryIdempotencyStore mine = new InMemoryIdempotencyStore()) {
            ToolDispatcher given = ToolDispatcher.builder().tools(new Slow()).store(mine).build();
            given.call("work", Map.of("n", 1));
            given.close();
            assertFalse(mine.isClosed(), "a store passed in is the caller's to close");
            try (ToolDispatcher again =
                    ToolDispatcher.builder().tools(new Slow()).store(mine).build()) {
                // Records written through the closed dispatcher are still there.
                assertEquals("done-1", again.call("work", Map.of("n", 1)));
            }
        }
    }

    /** One call of a racing thread, with a number no other call uses. */
    private interface RacingCall {
        void call(int n) throws Exception;
    }

    /**
     * Runs {@code threads} threads that call in a loop until refused, closes from two threads at
     * once while they do, and answers how many calls returned; any failure other than the refusal
     * naming {@code closed} fails the test.
     */
    private static int raceClose(int threads, RacingCall call, Runnable close, String closed)
            throws Exception {
        AtomicInteger done = new AtomicInteger();
        AtomicInteger refused = new AtomicInteger();
        List<Throwable> unexpected = new java.util.concurrent.CopyOnWriteArrayList<>();
        CountDownLatch started = new CountDownLatch(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int base = t * 100_000;
            futures.add(
                    pool.submit(
                            () -> {
                                started.countDown();
                                for (int i = 0; ; i++) {
                                    try {
                                        call.call(base + i);
                                        done.incrementAndGet();
                                    } catch (IllegalStateException refusal) {
                                        if (!refusal.getMessage().contains(closed)) {
                                            unexpected.add(refusal);
                                        }
                                        refused.incrementAndGet();
                                        return;
                                    } catch (Throwable other) {
                                        unexpected.add(other);
                                        return;
                                    }
                                }
                            }));
        }
        assertTrue(started.await(10, TimeUnit.SECONDS));
        Thread.sleep(100);
        Thread closer = new Thread(close);
        closer.start();
        close.run();
        closer.join(10_000);
        for (Future<?> f : futures) {
            f.get(30, TimeUnit.SECONDS);
        }
        pool.shutdown();
        assertEquals(List.of(), unexpected);
        assertEquals(threads, refused.get());
        assertTrue(done.get() > 0);
        return done.get();
    }

    @Test
    void close_racing_calls_lets_each_call_finish_or_refuses_it() throws Exception {
        Slow slow = new Slow();
        ToolDispatcher d = ToolDispatcher.builder().tools(slow).build();
        int done =
                raceClose(
                        8,
                        n -> assertEquals("done-" + n, d.call("work", Map.of("n", n))),
                        d::close,
                        "the tool dispatcher is closed");
        // Every body that ran returned its result to its caller.
        assertEquals(done, slow.runs.get());
        assertTrue(closed(d));
    }

    @Test
    void closing_an_executor_twice_is_safe_refuses_later_calls_and_closes_only_what_it_created() {
        WebServiceExecutor owning =
                WebServiceExecutor.builder().baseUri(server.baseUri()).roles(new Orders()).build();
        WebServiceExecutor view = owning.withRun("r1");
        owning.invoke("create", Map.of("item", "tea"));
        owning.close();
        owning.close();
        assertTrue(view.isClosed());
        assertTrue(closed(owning), "the store the builder created is freed with the executor");
        IllegalStateException refused =
                assertThrows(
                        IllegalStateException.class,
                        () -> view.invoke("create", Map.of("item", "tea")));
        assertTrue(
                refused.getMessage().contains("the web-service executor is closed"),
                refused.getMessage());
        assertThrows(IllegalStateException.class, () -> owning.register(new Orders()));
        assertEquals(1, server.count());

        try (InMemoryIdempotencyStore mine = new InMemoryIdempotencyStore()) {
            WebServiceExecutor given =
                    WebServiceExecutor.builder()
                            .store(mine)
                            .baseUri(server.baseUri())
                            .roles(new Orders())
                            .build();
            given.invoke("create", Map.of("item", "jam"));
            given.close();
            assertFalse(mine.isClosed(), "a store passed in is the caller's to close");
        }
    }

    @Test
    void executor_close_racing_calls_lets_each_call_finish_or_refuses_it() throws Exception {
        WebServiceExecutor e =
                WebServiceExecutor.builder().baseUri(server.baseUri()).roles(new Orders()).build();
        int done =
                raceClose(
                        6,
                        n ->
                                assertFalse(
                                        e.invokeForResponse("create", Map.of("item", "i" + n))
                                                .replayed()),
                        e::close,
                        "the web-service executor is closed");
        // Every request sent belongs to a call that returned.
        assertEquals(done, server.count());
        assertTrue(closed(e));
    }
}
