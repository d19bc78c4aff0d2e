package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.WebServiceTestServer.Recorded;
import dev.idemkit.WebServiceTestServer.Reply;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The web-service executor against a real HTTP server on 127.0.0.1: SPEC §1, §3 and §5 on the wire.
 */
class WebServiceExecutorTest {
    private static final Pattern HEX64 = Pattern.compile("[0-9a-f]{64}");
    private static final Pattern UUID_TEXT =
            Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");

    private WebServiceTestServer server;
    private InMemoryIdempotencyStore store;

    @BeforeEach
    void start() throws Exception {
        server = new WebServiceTestServer();
        store = new InMemoryIdempotencyStore();
    }

    @AfterEach
    void stop() {
        server.close();
        store.close();
    }

    private WebServiceExecutor.Builder executor(Object... roles) {
        return WebServiceExecutor.builder().store(store).baseUri(server.baseUri()).roles(roles);
    }

    public static class Receipt {
        public int seq;
        public String note;
    }

    /** One action per method; HASH_INPUT (the class's policy). */
    @Idempotent
    public static class Methods {
        @WebService(endpoint = "/m/get", method = HttpMethod.GET, paramType = ParamType.QUERY)
        public String get(@ToolParam(name = "id") String id) {
            return null;
        }

        @WebService(endpoint = "/m/head", method = HttpMethod.HEAD, paramType = ParamType.QUERY)
        public void head(@ToolParam(name = "id") String id) {}

        @WebService(
                endpoint = "/m/options",
                method = HttpMethod.OPTIONS,
                paramType = ParamType.QUERY)
        public String options(@ToolParam(name = "id") String id) {
            return null;
        }

        @WebService(endpoint = "/m/post", method = HttpMethod.POST)
        public String post(@ToolParam(name = "id") String id) {
            return null;
        }

        @WebService(endpoint = "/m/put/{id}", method = HttpMethod.PUT)
        public String put(
                @ToolParam(name = "id") String id, @ToolParam(name = "note") String note) {
            return null;
        }

        @WebService(endpoint = "/m/patch", method = HttpMethod.PATCH)
        public String patch(@ToolParam(name = "id") String id) {
            return null;
        }

        @WebService(
                endpoint = "/m/delete/{id}",
                method = HttpMethod.DELETE,
                paramType = ParamType.PATH)
        public void delete(@ToolParam(name = "id") String id) {}
    }

    /** POST actions under several policies. */
    public static class Payments {
        @WebService(name = "charge", endpoint = "/charges")
        @Idempotent
        public Receipt charge(
                @ToolParam(name = "amount") long amount, @ToolParam(name = "note") String note) {
            return null;
        }

        @WebService(name = "charge_honored", endpoint = "/charges", honorsIdempotencyKey = true)
        @Idempotent
        public Receipt chargeHonored(
                @ToolParam(name = "amount") long amount, @ToolParam(name = "note") String note) {
            return null;
        }

        @WebService(name = "slow_charge", endpoint = "/slow")
        @Idempotent
        public Receipt slowCharge(@ToolParam(name = "amount") long amount) {
            return null;
        }

        @WebService(name = "charge_once", endpoint = "/charges")
        @Idempotent(onCacheHit = RetryBehavior.FAIL_FAST)
        public Receipt chargeOnce(@ToolParam(name = "amount") long amount) {
            return null;
        }

        @WebService(name = "charge_uuid", endpoint = "/charges", honorsIdempotencyKey = true)
        @Idempotent(strategy = KeyStrategy.UUID)
        public Receipt chargeUuid(@ToolParam(name = "amount") long amount) {
            return null;
        }

        @WebService(name = "charge_unprotected", endpoint = "/charges")
        public Receipt chargeUnprotected(@ToolParam(name = "amount") long amount) {
            return null;
        }

        @WebService(name = "charge_remembering_failures", endpoint = "/charges")
        @Idempotent(cacheFailures = true)
        public Receipt chargeRememberingFailures(@ToolParam(name = "amount") long amount) {
            return null;
        }

        @WebService(name = "charge_until_it_succeeds", endpoint = "/charges")
        @Idempotent(cacheFailures = true, onCacheHit = RetryBehavior.RETURN_CACHED_IF_SUCCESS)
        public Receipt chargeUntilItSucceeds(@ToolParam(name = "amount") long amount) {
            return null;
        }

        @WebService(name = "charge_with_deadline", endpoint = "/charges", timeoutMs = 300)
        @Idempotent
        public Receipt chargeWithDeadline(@ToolParam(name = "amount") long amount) {
            return null;
        }

        @WebService(
                name = "charge_with_deadline_short_lease",
                endpoint = "/charges",
                timeoutMs = 300)
        @Idempotent(leaseSeconds = 1)
        public Receipt chargeWithDeadlineShortLease(@ToolParam(name = "amount") long amount) {
            return null;
        }

        @WebService(
                name = "receipts",
                endpoint = "/receipts",
                method = HttpMethod.GET,
                paramType = ParamType.QUERY)
        @Idempotent
        public List<Receipt> receipts(@ToolParam(name = "since") int since) {
            return null;
        }
    }

    @Test
    void the_key_header_is_sent_exactly_on_post_put_patch_and_delete() {
        WebServiceExecutor ws = executor(new Methods()).build();
        Map<String, String> keys = new LinkedHashMap<>();
        for (String action : List.of("get", "head", "options", "post", "put", "patch", "delete")) {
            WebServiceResponse<Object> r = ws.invokeForResponse(action, Map.of("id", "A1"));
            assertFalse(r.replayed(), action);
            assertTrue(HEX64.matcher(r.key()).matches(), action + ": " + r.key());
            keys.put(action, r.key());
        }
        List<Recorded> requests = server.requests();
        assertEquals(7, requests.size(), requests.toString());
        for (Recorded request : requests) {
            String action = request.method.toLowerCase(java.util.Locale.ROOT);
            assertTrue(request.rawPath.startsWith("/m/" + action), request.toString());
            boolean carries = Set.of("post", "put", "patch", "delete").contains(action);
            if (carries) {
                assertEquals(
                        keys.get(action), request.single("Idempotency-Key"), request.toString());
            } else {
                assertNull(request.single("Idempotency-Key"), request.toString());
            }
        }
        // The scope is the action name: one input, a key per action.
        assertEquals(7, new HashSet<>(keys.values()).size(), keys.toString());
        // A remembered GET answers without a request.
        WebServiceResponse<Object> again = ws.invokeForResponse("get", Map.of("id", "A1"));
        assertTrue(again.replayed());
        assertEquals(7, server.count());
    }

    /**
     * The key a tool of the same name derives, seen through its IdempotencyContext on another
     * store.
     */
    private static String derivedKey(
            String scope, Map<String, Object> input, String tenant, String run) {
        class Probe {
            volatile String key;

            public Object probe(@ToolInput Map<String, Object> in, IdempotencyContext context) {
                key = context.key();
                return null;
            }
        }
        Probe probe = new Probe();
        try (InMemoryIdempotencyStore other = new InMemoryIdempotencyStore()) {
            java.lang.reflect.Method m =
                    Probe.class.getMethod("probe", Map.class, IdempotencyContext.class);
            ToolDispatcher d =
                    ToolDispatcher.builder()
                            .store(other)
                            .tenant(tenant)
                            .run(run)
                            .tool(
                                    probe,
                                    m,
                                    Annotations.tool(scope),
                                    Annotations.idempotent(KeyStrategy.HASH_INPUT))
                            .build();
            d.call(scope, input);
        } catch (NoSuchMethodException e) {
            throw new AssertionError(e);
        }
        return probe.key;
    }

    @Test
    void the_header_is_the_key_the_core_derives_from_scope_tenant_run_and_input() {
        WebServiceExecutor ws = executor(new Payments()).tenant("acme").run("r-7").build();
        Map<String, Object> input = Map.of("amount", 1200, "note", "table 4");
        WebServiceResponse<Receipt> r = ws.invokeForResponse("charge", input, Receipt.class);
        String expected = derivedKey("charge", input, "acme", "r-7");
        assertEquals(expected, r.key());
        assertEquals(expected, server.only().single("Idempotency-Key"));
        assertEquals(expected, r.context().orElseThrow().key());
        assertEquals("acme", r.context().orElseThrow().tenant());
        assertNotEquals(expected, derivedKey("charge", input, "acme", null), "run is key material");
    }

    @Test
    void three_retries_of_a_post_reach_the_server_once() {
        WebServiceExecutor ws = executor(new Payments()).build();
        Map<String, Object> input = Map.of("amount", 1200, "note", "n");
        WebServiceResponse<Receipt> first = ws.invokeForResponse("charge", input, Receipt.class);
        assertFalse(first.replayed());
        assertEquals(200, first.status().getAsInt());
        assertEquals(1, first.attempts());
        for (int i = 0; i < 3; i++) {
            WebServiceResponse<Receipt> retry =
                    ws.invokeForResponse("charge", input, Receipt.class);
            assertTrue(retry.replayed());
            assertTrue(retry.status().isEmpty());
            assertEquals(0, retry.attempts());
            assertEquals(first.value().seq, retry.value().seq);
            assertEquals(first.key(), retry.key(), "a replay knows its key");
            assertTrue(retry.context().isEmpty());
        }
        Recorded only = server.only();
        assertEquals("POST", only.method);
        assertEquals("/charges", only.rawPath);
        assertEquals("application/json", only.single("Content-Type"));
        // The members in the map's own order (Map.of has none), numbers exact.
        assertTrue(
                only.body.equals("{\"amount\":1200,\"note\":\"n\"}")
                        || only.body.equals("{\"note\":\"n\",\"amount\":1200}"),
                only.body);
    }

    @Test
    void sixteen_concurrent_identical_posts_reach_the_server_once() throws Exception {
        server.script(r -> Reply.json(200, "{\"seq\":" + r.seq + ",\"note\":\"slow\"}").after(300));
        WebServiceExecutor ws = executor(new Payments()).build();
        int n = 16;
        ExecutorService pool = Executors.newFixedThreadPool(n);
        CyclicBarrier start = new CyclicBarrier(n);
        try {
            List<Future<WebServiceResponse<Receipt>>> calls = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                calls.add(
                        pool.submit(
                                () -> {
                                    start.await();
                                    return ws.invokeForResponse(
                                            "slow_charge", Map.of("amount", 5), Receipt.class);
                                }));
            }
            int fresh = 0;
            for (Future<WebServiceResponse<Receipt>> call : calls) {
                WebServiceResponse<Receipt> r = call.get(20, TimeUnit.SECONDS);
                assertEquals(1, r.value().seq);
                assertEquals("slow", r.value().note);
                assertEquals(server.only().single("Idempotency-Key"), r.key());
                fresh += r.replayed() ? 0 : 1;
            }
            assertEquals(1, fresh);
        } finally {
            pool.shutdownNow();
        }
        assertEquals(1, server.count());
    }

    @Test
    void a_remembered_get_sends_nothing_the_second_time_and_reads_generic_types() {
        server.script(
                r ->
                        Reply.json(
                                200,
                                "[{\"seq\":"
                                        + r.seq
                                        + ",\"note\":\"a\"},{\"seq\":9,\"note\":\"b\"}]"));
        WebServiceExecutor ws = executor(new Payments()).build();
        @SuppressWarnings("unchecked")
        List<Receipt> first = (List<Receipt>) ws.invoke("receipts", Map.of("since", 3));
        assertEquals(2, first.size());
        assertEquals("b", first.get(1).note);
        WebServiceResponse<Object> second = ws.invokeForResponse("receipts", "{\"since\": 3.0}");
        assertTrue(second.replayed(), "3 and 3.0 are one number, so one key");
        @SuppressWarnings("unchecked")
        List<Receipt> replayed = (List<Receipt>) second.value();
        assertEquals(Receipt.class, replayed.get(0).getClass());
        assertEquals(1, replayed.get(0).seq);
        Recorded only = server.only();
        assertEquals("GET", only.method);
        assertEquals("since=3", only.rawQuery);
        assertNull(only.single("Idempotency-Key"));
        assertEquals("", only.body);
    }

    @Test
    void uuid_sends_a_new_key_per_call_and_the_same_key_across_transport_retries() {
        AtomicInteger seen = new AtomicInteger();
        // Each call's first attempt fails: a 503, then (second call) a dropped connection.
        server.script(
                r -> {
                    int i = seen.incrementAndGet();
                    if (i == 1) {
                        return Reply.text(503, "busy");
                    }
                    if (i == 3) {
                        return Reply.drop();
                    }
                    return Reply.json(200, "{\"seq\":" + r.seq + "}");
                });
        WebServiceExecutor ws = executor(new Payments()).retry(3, Duration.ofMillis(10)).build();
        WebServiceResponse<Receipt> one =
                ws.invokeForResponse("charge_uuid", Map.of("amount", 1), Receipt.class);
        WebServiceResponse<Receipt> two =
                ws.invokeForResponse("charge_uuid", Map.of("amount", 1), Receipt.class);
        assertFalse(one.replayed());
        assertFalse(two.replayed(), "UUID deduplicates nothing locally");
        assertEquals(2, one.attempts());
        assertEquals(2, two.attempts());
        List<Recorded> requests = server.requests();
        assertEquals(4, requests.size(), requests.toString());
        String k1 = requests.get(0).single("Idempotency-Key");
        String k3 = requests.get(2).single("Idempotency-Key");
        assertTrue(UUID_TEXT.matcher(k1).matches(), k1);
        assertTrue(UUID_TEXT.matcher(k3).matches(), k3);
        assertEquals(
                k1,
                requests.get(1).single("Idempotency-Key"),
                "a transport retry keeps the call's key");
        assertEquals(
                k3,
                requests.get(3).single("Idempotency-Key"),
                "a retry after a dropped connection too");
        assertNotEquals(k1, k3, "a new call is a new UUID");
        assertEquals(k1, one.key());
        assertEquals(k3, two.key());
        assertEquals(KeyStrategy.UUID, one.context().orElseThrow().strategy());
    }

    @Test
    void fail_fast_sends_nothing_on_a_repeat() {
        WebServiceExecutor ws = executor(new Payments()).build();
        Receipt first = ws.invoke("charge_once", Map.of("amount", 7), Receipt.class);
        assertEquals(1, first.seq);
        FailFastException repeat =
                assertThrows(
                        FailFastException.class,
                        () -> ws.invoke("charge_once", Map.of("amount", 7)));
        assertEquals("charge_once", repeat.tool());
        assertEquals(server.only().single("Idempotency-Key"), repeat.key());
        assertEquals(1, server.count());
    }

    @Test
    void a_500_of_an_upstream_that_does_not_honour_the_key_is_not_sent_again() {
        server.script(r -> Reply.text(500, "oops"));
        WebServiceExecutor ws = executor(new Payments()).retry(3, Duration.ofMillis(1)).build();
        WebServiceException e =
                assertThrows(
                        WebServiceException.class,
                        () -> ws.invoke("charge", Map.of("amount", 3, "note", "x")));
        assertEquals(500, e.status());
        assertEquals(1, e.attempts());
        assertEquals(1, server.count(), "a request that reached the server is never resent");
    }

    @Test
    void a_500_is_retried_under_the_same_key_when_the_upstream_honours_it() {
        AtomicInteger seen = new AtomicInteger();
        server.script(
                r ->
                        seen.incrementAndGet() == 1
                                ? Reply.text(500, "oops")
                                : Reply.json(200, "{\"seq\":" + r.seq + "}"));
        WebServiceExecutor ws = executor(new Payments()).retry(2, Duration.ofMillis(5)).build();
        WebServiceResponse<Receipt> r =
                ws.invokeForResponse(
                        "charge_honored", Map.of("amount", 3, "note", "x"), Receipt.class);
        assertEquals(2, r.value().seq);
        assertEquals(2, r.attempts());
        List<Recorded> requests = server.requests();
        assertEquals(2, requests.size());
        assertEquals(r.key(), requests.get(0).single("Idempotency-Key"));
        assertEquals(r.key(), requests.get(1).single("Idempotency-Key"));
        assertEquals(requests.get(0).body, requests.get(1).body);
    }

    @Test
    void retries_stop_at_max_attempts_and_the_last_5xx_is_the_failure() {
        server.script(r -> Reply.text(502, "bad gateway " + r.seq));
        WebServiceExecutor ws = executor(new Payments()).retry(3, Duration.ofMillis(1)).build();
        WebServiceException e =
                assertThrows(
                        WebServiceException.class,
                        () -> ws.invoke("charge_honored", Map.of("amount", 3, "note", "x")));
        assertEquals(502, e.status());
        assertEquals("bad gateway 3", e.body());
        assertEquals(3, e.attempts());
        assertEquals(3, server.count());
        assertTrue(
                e.getMessage().contains("answered 502 after 3 attempts under key " + e.key()),
                e.getMessage());
        // Released (no cacheFailures): the next call sends again, under the same key.
        server.script(r -> Reply.json(200, "{\"seq\":" + r.seq + "}"));
        assertEquals(
                4,
                ws.invoke("charge_honored", Map.of("amount", 3, "note", "x"), Receipt.class).seq);
        assertEquals(e.key(), server.requests().get(3).single("Idempotency-Key"));
    }

    @Test
    void a_4xx_is_not_retried_and_without_cache_failures_a_repeat_sends_again() {
        server.script(r -> Reply.text(409, "conflict"));
        WebServiceExecutor ws = executor(new Payments()).retry(5, Duration.ofMillis(1)).build();
        WebServiceException e =
                assertThrows(
                        WebServiceException.class,
                        () -> ws.invoke("charge", Map.of("amount", 3, "note", "x")));
        assertEquals(409, e.status());
        assertEquals(1, e.attempts());
        assertEquals(1, server.count());
        assertThrows(
                WebServiceException.class,
                () -> ws.invoke("charge", Map.of("amount", 3, "note", "x")));
        assertEquals(2, server.count());
    }

    @Test
    void with_cache_failures_a_400_is_replayed_without_a_request() {
        server.script(r -> Reply.json(400, "{\"error\":\"card_declined\"}"));
        WebServiceExecutor ws = executor(new Payments()).build();
        WebServiceException first =
                assertThrows(
                        WebServiceException.class,
                        () -> ws.invoke("charge_remembering_failures", Map.of("amount", 9)));
        assertEquals(400, first.status());
        assertEquals("{\"error\":\"card_declined\"}", first.body());
        CachedFailureException repeat =
                assertThrows(
                        CachedFailureException.class,
                        () -> ws.invoke("charge_remembering_failures", Map.of("amount", 9)));
        assertEquals(WebServiceException.class.getName(), repeat.originalType());
        assertEquals(first.getMessage(), repeat.originalMessage());
        assertTrue(repeat.originalMessage().contains("answered 400"), repeat.originalMessage());
        assertTrue(repeat.originalMessage().contains("card_declined"), repeat.originalMessage());
        assertEquals(first.key(), repeat.key());
        assertEquals(1, server.count());
    }

    @Test
    void return_cached_if_success_sends_a_remembered_failure_again_under_the_same_key() {
        AtomicInteger seen = new AtomicInteger();
        server.script(
                r ->
                        seen.incrementAndGet() == 1
                                ? Reply.json(400, "{\"error\":\"try later\"}")
                                : Reply.json(200, "{\"seq\":" + r.seq + "}"));
        WebServiceExecutor ws = executor(new Payments()).build();
        WebServiceException first =
                assertThrows(
                        WebServiceException.class,
                        () -> ws.invoke("charge_until_it_succeeds", Map.of("amount", 4)));
        WebServiceResponse<Receipt> second =
                ws.invokeForResponse(
                        "charge_until_it_succeeds", Map.of("amount", 4), Receipt.class);
        assertFalse(second.replayed());
        assertEquals(2, second.value().seq);
        assertTrue(
                ws.invokeForResponse("charge_until_it_succeeds", Map.of("amount", 4)).replayed());
        List<Recorded> requests = server.requests();
        assertEquals(2, requests.size());
        assertEquals(first.key(), requests.get(0).single("Idempotency-Key"));
        assertEquals(first.key(), requests.get(1).single("Idempotency-Key"));
    }

    @Test
    void none_sends_no_header_runs_every_call_and_never_retries_a_post() {
        server.script(r -> Reply.text(503, "busy"));
        WebServiceExecutor ws = executor(new Payments()).retry(3, Duration.ofMillis(1)).build();
        WebServiceException e =
                assertThrows(
                        WebServiceException.class,
                        () -> ws.invoke("charge_unprotected", Map.of("amount", 1)));
        assertEquals(1, e.attempts(), "a POST without a key is not repeated");
        assertNull(e.key());
        server.script(r -> Reply.json(200, "{\"seq\":" + r.seq + "}"));
        WebServiceResponse<Object> a =
                ws.invokeForResponse("charge_unprotected", Map.of("amount", 1));
        WebServiceResponse<Object> b =
                ws.invokeForResponse("charge_unprotected", Map.of("amount", 1));
        assertFalse(a.replayed());
        assertFalse(b.replayed());
        assertNull(a.key());
        assertEquals(3, server.count());
        for (Recorded r : server.requests()) {
            assertNull(r.single("Idempotency-Key"), r.toString());
        }
    }

    @Test
    void an_exchange_cut_at_the_deadline_leaves_its_claim_in_progress() {
        server.script(
                r -> Reply.json(200, "{\"seq\":" + r.seq + "}").after(r.seq == 1 ? 2_000 : 0));
        WebServiceExecutor ws = executor(new Payments()).retry(3, Duration.ofMillis(1)).build();
        long t0 = System.nanoTime();
        IdempotencyTimeoutException e =
                assertThrows(
                        IdempotencyTimeoutException.class,
                        () -> ws.invoke("charge_with_deadline", Map.of("amount", 1)));
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(tookMs < 1_500, "cut at the deadline, took " + tookMs + " ms");
        assertEquals(ErrorKind.TIMEOUT, e.kind());
        assertEquals("charge_with_deadline", e.tool());
        assertTrue(HEX64.matcher(e.key()).matches(), e.key());
        assertEquals(e.key(), server.only().single("Idempotency-Key"));
        assertTrue(e.getMessage().contains("within timeoutMs = 300"), e.getMessage());
        assertTrue(e.getMessage().contains("outcome is unknown"), e.getMessage());
        assertTrue(e.getMessage().contains("idemkit resolve"), e.getMessage());
        assertTrue(e.getMessage().contains(e.key()), e.getMessage());
        // SPEC §3: the claim stays in progress. A retry waits for it (here until its own deadline)
        // and sends nothing.
        InProgressException waited =
                assertThrows(
                        InProgressException.class,
                        () -> ws.invoke("charge_with_deadline", Map.of("amount", 1)));
        assertEquals(e.key(), waited.key());
        assertEquals(1, server.requests().size(), "no second request under an unknown outcome");
    }

    @Test
    void a_claim_cut_at_the_deadline_becomes_indeterminate_when_its_lease_ends() throws Exception {
        server.script(
                r -> Reply.json(200, "{\"seq\":" + r.seq + "}").after(r.seq == 1 ? 2_000 : 0));
        WebServiceExecutor ws = executor(new Payments()).build();
        IdempotencyTimeoutException cut =
                assertThrows(
                        IdempotencyTimeoutException.class,
                        () -> ws.invoke("charge_with_deadline_short_lease", Map.of("amount", 2)));
        Thread.sleep(1_100);
        IndeterminateOutcomeException later =
                assertThrows(
                        IndeterminateOutcomeException.class,
                        () -> ws.invoke("charge_with_deadline_short_lease", Map.of("amount", 2)));
        assertEquals(cut.key(), later.key());
        assertEquals("charge_with_deadline_short_lease", later.tool());
        assertEquals(1, server.requests().size(), "the unknown outcome is never sent again");
    }

    @Test
    void a_replay_hands_back_the_key_the_server_saw() {
        WebServiceExecutor ws = executor(new Payments()).build();
        Map<String, Object> input = Map.of("amount", 77, "note", "k");
        WebServiceResponse<Receipt> first = ws.invokeForResponse("charge", input, Receipt.class);
        WebServiceResponse<Receipt> again =
                ws.invokeForResponse("charge", "{\"note\":\"k\",\"amount\":77}", Receipt.class);
        assertFalse(first.replayed());
        assertTrue(again.replayed());
        assertEquals(first.key(), again.key());
        assertEquals(server.only().single("Idempotency-Key"), again.key());
        assertTrue(again.toString().contains(again.key()), again.toString());
    }

    @Test
    void the_json_text_and_the_map_of_one_input_are_one_key() {
        WebServiceExecutor ws = executor(new Payments()).build();
        WebServiceResponse<Object> fromText =
                ws.invokeForResponse("charge", "{\"note\":\"z\",\"amount\":12e2}");
        WebServiceResponse<Object> fromMap =
                ws.invokeForResponse("charge", Map.of("amount", 1200L, "note", "z"));
        assertFalse(fromText.replayed());
        assertTrue(fromMap.replayed());
        assertEquals(Receipt.class, fromText.value().getClass());
        assertEquals(1, server.count());
    }

    @Test
    void default_headers_are_sent_and_the_key_header_cannot_be_one() {
        WebServiceExecutor ws =
                executor(new Payments())
                        .header("Authorization", "Bearer t0k")
                        .header("X-Trace", "1")
                        .header("X-Trace", "2")
                        .build();
        ws.invoke("charge", Map.of("amount", 1, "note", ""));
        Recorded only = server.only();
        assertEquals("Bearer t0k", only.single("Authorization"));
        assertEquals(List.of("1", "2"), only.header("X-Trace"));
        assertThrows(
                IllegalArgumentException.class,
                () -> WebServiceExecutor.builder().header("idempotency-key", "k"));
        assertThrows(
                IllegalArgumentException.class,
                () -> WebServiceExecutor.builder().header("Host", "evil"));
    }

    @Test
    void the_structured_field_option_quotes_the_key() {
        WebServiceExecutor ws =
                executor(new Payments())
                        .keyHeaderForm(WebServiceExecutor.KeyHeaderForm.STRUCTURED_STRING)
                        .build();
        WebServiceResponse<Object> r =
                ws.invokeForResponse("charge", Map.of("amount", 1, "note", ""));
        assertEquals("\"" + r.key() + "\"", server.only().single("Idempotency-Key"));
        assertTrue(HEX64.matcher(r.key()).matches());
    }

    /** EXPLICIT: the role supplies the key; the header still carries the 64-hex digest. */
    public static class Orders implements IdempotencyKeySupplier {
        final AtomicInteger supplied = new AtomicInteger();

        @Override
        public String idempotencyKeyFor(Map<String, Object> input) {
            supplied.incrementAndGet();
            return "order-" + input.get("order");
        }

        @WebService(name = "place_order", endpoint = "/orders")
        @Idempotent(strategy = KeyStrategy.EXPLICIT)
        public Map<String, Object> placeOrder(
                @ToolParam(name = "order") String order, @ToolParam(name = "qty") int qty) {
            return null;
        }
    }

    @Test
    void explicit_calls_the_supplier_once_per_call_and_sends_the_digest() {
        Orders orders = new Orders();
        WebServiceExecutor ws = executor(orders).build();
        WebServiceResponse<Object> r =
                ws.invokeForResponse("place_order", Map.of("order", "A-17", "qty", 2));
        assertEquals(1, orders.supplied.get());
        IdempotencyContext context = r.context().orElseThrow();
        assertEquals("order-A-17", context.suppliedKey());
        assertTrue(HEX64.matcher(r.key()).matches(), r.key());
        assertEquals(r.key(), context.key());
        assertEquals(r.key(), server.only().single("Idempotency-Key"));
        // The same input as JSON text, same supplied key: the same call, remembered.
        WebServiceResponse<Object> again =
                ws.invokeForResponse("place_order", "{\"qty\":2,\"order\":\"A-17\"}");
        assertTrue(again.replayed());
        assertEquals(r.key(), again.key());
        assertEquals(2, orders.supplied.get());
        assertEquals(1, server.count());
        assertEquals(Map.of("seq", 1), again.value());
        // Another qty under the same supplied key: the supplier says the order is the identity,
        // so it is answered from the record and nothing is sent (SPEC v1.2 §9 rule 1).
        WebServiceResponse<Object> edited =
                ws.invokeForResponse("place_order", Map.of("order", "A-17", "qty", 3));
        assertTrue(edited.replayed());
        assertEquals(1, server.count());
    }

    /** EXPLICIT with the payload check asked for. */
    public static class StrictOrders implements IdempotencyKeySupplier {
        @Override
        public String idempotencyKeyFor(Map<String, Object> input) {
            return "order-" + input.get("order");
        }

        @WebService(name = "place_order_strict", endpoint = "/orders")
        @Idempotent(strategy = KeyStrategy.EXPLICIT, rejectPayloadMismatch = true)
        public Map<String, Object> placeOrder(
                @ToolParam(name = "order") String order, @ToolParam(name = "qty") int qty) {
            return null;
        }
    }

    @Test
    void explicit_with_reject_payload_mismatch_refuses_another_input_and_sends_nothing() {
        WebServiceExecutor ws = executor(new StrictOrders()).build();
        WebServiceResponse<Object> r =
                ws.invokeForResponse("place_order_strict", Map.of("order", "B-1", "qty", 2));
        PayloadMismatchException mismatch =
                assertThrows(
                        PayloadMismatchException.class,
                        () -> ws.invoke("place_order_strict", Map.of("order", "B-1", "qty", 3)));
        assertEquals(r.key(), mismatch.key());
        assertEquals(1, server.count());
    }

    public static class Blank implements IdempotencyKeySupplier {
        @Override
        public String idempotencyKeyFor(Map<String, Object> input) {
            return (String) input.get("k");
        }

        @WebService(endpoint = "/blank")
        @Idempotent(strategy = KeyStrategy.EXPLICIT)
        public String blank(String k) {
            return null;
        }
    }

    @Test
    void a_null_or_blank_explicit_key_sends_nothing() {
        WebServiceExecutor ws = executor(new Blank()).build();
        assertThrows(InvalidKeyException.class, () -> ws.invoke("blank", Map.of()));
        assertThrows(InvalidKeyException.class, () -> ws.invoke("blank", Map.of("k", " \u3000")));
        assertEquals(0, server.count());
    }

    /** Awkward values in the path and the query. */
    public static class Places {
        @WebService(
                endpoint = "/cities/{city}/weather",
                method = HttpMethod.GET,
                paramType = ParamType.PATH)
        @Idempotent
        public String weather(@ToolParam(name = "city") String city) {
            return null;
        }

        @WebService(endpoint = "/search?v=1", method = HttpMethod.GET, paramType = ParamType.QUERY)
        public String search(
                @ToolParam(name = "q") String q,
                @ToolParam(name = "a b&c") String odd,
                @ToolParam(name = "tags") List<String> tags,
                @ToolParam(name = "limit") Double limit,
                @ToolParam(name = "flag") Boolean flag,
                @ToolParam(name = "missing") String missing) {
            return null;
        }

        @WebService(endpoint = "/accounts/{account}/notes", method = HttpMethod.POST)
        @Idempotent
        public String note(
                @ToolParam(name = "account") String account,
                @ToolParam(name = "text") String text) {
            return null;
        }
    }

    private static final String AWKWARD = "a b/c?d&e%f=g+h#i Zürich 東京 🚀";
    private static final String AWKWARD_ENCODED =
            "a%20b%2Fc%3Fd%26e%25f%3Dg%2Bh%23i%20Z%C3%BCrich%20%E6%9D%B1%E4%BA%AC%20%F0%9F%9A%80";

    @Test
    void path_values_are_one_percent_encoded_segment() {
        WebServiceExecutor ws = executor(new Places()).build();
        ws.invoke("weather", Map.of("city", AWKWARD));
        assertEquals("/cities/" + AWKWARD_ENCODED + "/weather", server.only().rawPath);
        assertNull(server.only().rawQuery);
    }

    @Test
    void query_names_and_values_are_percent_encoded_with_20_for_space() {
        WebServiceExecutor ws = executor(new Places()).build();
        Map<String, Object> input = new LinkedHashMap<>();
        input.put("q", AWKWARD);
        input.put("a b&c", "x");
        input.put("tags", List.of("red", "blue green"));
        input.put("limit", 0.1);
        input.put("flag", true);
        input.put("missing", null);
        ws.invoke("search", input);
        Recorded only = server.only();
        assertEquals("/search", only.rawPath);
        assertEquals(
                "v=1&q="
                        + AWKWARD_ENCODED
                        + "&a%20b%26c=x&tags=red&tags=blue%20green&limit=0.1&flag=true",
                only.rawQuery);
    }

    @Test
    void placeholders_fill_the_path_and_the_other_parameters_the_body() {
        WebServiceExecutor ws = executor(new Places()).build();
        ws.invoke("note", Map.of("account", "acc/1", "text", "Zürich 東京"));
        Recorded only = server.only();
        assertEquals("/accounts/acc%2F1/notes", only.rawPath);
        assertEquals("{\"text\":\"Zürich 東京\"}", only.body);
    }

    public static class Numbers {
        @WebService(endpoint = "/numbers")
        public void numbers(
                @ToolParam(name = "d") Object d,
                @ToolParam(name = "f") Object f,
                @ToolParam(name = "exact") Object exact,
                @ToolParam(name = "big") Object big) {}
    }

    @Test
    void body_numbers_are_sent_as_passed() {
        WebServiceExecutor ws = executor(new Numbers()).build();
        Map<String, Object> input = new LinkedHashMap<>();
        input.put("d", 1e23);
        input.put("f", 0.1f);
        input.put("exact", new java.math.BigDecimal("2.50"));
        input.put("big", new java.math.BigInteger("9007199254740993"));
        ws.invoke("numbers", input);
        ws.invoke("numbers", "{\"d\":0.1,\"f\":1e400,\"exact\":2.50,\"big\":9007199254740993}");
        List<Recorded> requests = server.requests();
        assertEquals(
                "{\"d\":1E+23,\"f\":0.1,\"exact\":2.50,\"big\":9007199254740993}",
                requests.get(0).body);
        assertEquals(
                "{\"d\":0.1,\"f\":1E+400,\"exact\":2.50,\"big\":9007199254740993}",
                requests.get(1).body);
    }

    @Test
    void input_that_does_not_fit_is_refused_before_anything_is_claimed_or_sent() {
        WebServiceExecutor ws = executor(new Payments(), new Places()).build();
        assertThrows(
                IllegalArgumentException.class,
                () -> ws.invoke("charge", Map.of("amount", 1, "tip", 2)));
        assertThrows(
                IllegalArgumentException.class,
                () -> ws.invoke("charge", Map.of("note", "no amount")));
        assertThrows(
                IllegalArgumentException.class,
                () -> ws.invoke("charge", Map.of("amount", "many")));
        assertThrows(IllegalArgumentException.class, () -> ws.invoke("weather", Map.of()));
        assertThrows(IllegalArgumentException.class, () -> ws.invoke("charge", "[1]"));
        assertThrows(IllegalArgumentException.class, () -> ws.invoke("nope", Map.of()));
        InvalidKeyException notJson =
                assertThrows(
                        InvalidKeyException.class,
                        () ->
                                ws.invoke(
                                        "charge",
                                        Map.of("amount", 1, "note", java.time.Instant.EPOCH)));
        assertTrue(notJson.getMessage().contains("input.note"), notJson.getMessage());
        assertEquals(0, server.count());
        assertEquals(0L, store.eventCounts().get("acquired"));
    }

    public static class NoSupplier {
        @WebService(endpoint = "/x")
        @Idempotent(strategy = KeyStrategy.EXPLICIT)
        public String x(@ToolParam(name = "a") String a) {
            return null;
        }
    }

    public static class BadPlaceholder {
        @WebService(endpoint = "/items/{itemId}")
        @Idempotent
        public String x(@ToolParam(name = "id") String id) {
            return null;
        }
    }

    public static class UnbalancedPlaceholder {
        @WebService(endpoint = "/items/{id")
        public String x(@ToolParam(name = "id") String id) {
            return null;
        }
    }

    public static class PathWithoutPlaceholder {
        @WebService(endpoint = "/items/{id}", paramType = ParamType.PATH)
        public String x(
                @ToolParam(name = "id") String id, @ToolParam(name = "extra") String extra) {
            return null;
        }
    }

    public static class GetWithBody {
        @WebService(endpoint = "/items", method = HttpMethod.GET)
        public String x(@ToolParam(name = "id") String id) {
            return null;
        }
    }

    public static class Relative {
        @WebService(endpoint = "/items")
        public String x(@ToolParam(name = "id") String id) {
            return null;
        }
    }

    public static class DeadlinePastLease {
        @WebService(endpoint = "/items", timeoutMs = 10_000)
        @Idempotent(leaseSeconds = 5)
        public String x(@ToolParam(name = "id") String id) {
            return null;
        }
    }

    public static class UnknownKeyArgument {
        @WebService(endpoint = "/items")
        @Idempotent(keyArguments = {"nope"})
        public String x(@ToolParam(name = "id") String id) {
            return null;
        }
    }

    @Test
    void misuse_is_refused_when_actions_are_registered() {
        IllegalStateException explicit =
                assertThrows(IllegalStateException.class, () -> executor(new NoSupplier()).build());
        assertTrue(explicit.getMessage().contains("IdempotencyKeySupplier"), explicit.getMessage());
        IllegalArgumentException placeholder =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> executor(new BadPlaceholder()).build());
        assertTrue(
                placeholder.getMessage().contains("{itemId} names no parameter"),
                placeholder.getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () -> executor(new UnbalancedPlaceholder()).build());
        IllegalArgumentException path =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> executor(new PathWithoutPlaceholder()).build());
        assertTrue(path.getMessage().contains("no placeholder {extra}"), path.getMessage());
        IllegalArgumentException get =
                assertThrows(
                        IllegalArgumentException.class, () -> executor(new GetWithBody()).build());
        assertTrue(get.getMessage().contains("paramType = QUERY"), get.getMessage());
        IllegalArgumentException relative =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                WebServiceExecutor.builder()
                                        .store(store)
                                        .roles(new Relative())
                                        .build());
        assertTrue(relative.getMessage().contains("baseUri"), relative.getMessage());
        assertThrows(
                IllegalArgumentException.class, () -> executor(new DeadlinePastLease()).build());
        assertThrows(
                IllegalArgumentException.class, () -> executor(new UnknownKeyArgument()).build());
        IllegalArgumentException twice =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> executor(new Payments(), new Payments()).build());
        assertTrue(
                twice.getMessage().contains("two web-service actions are named"),
                twice.getMessage());
        // All or nothing: a refused register() adds none of its actions.
        WebServiceExecutor ws = executor(new Places()).build();
        assertThrows(
                IllegalStateException.class, () -> ws.register(new Payments(), new NoSupplier()));
        assertEquals(Set.of("weather", "search", "note"), ws.actionNames());
    }

    @Test
    void constructors_register_roles_with_absolute_endpoints() {
        WebServiceExecutor own = new WebServiceExecutor();
        assertTrue(own.store() instanceof InMemoryIdempotencyStore);
        assertThrows(IllegalArgumentException.class, () -> own.register(new Relative()));
        WebServiceExecutor shared = new WebServiceExecutor(store);
        assertEquals(store, shared.store());
    }

    /** A tool and an action of one name: one scope, so one key and one record for one input. */
    public static class ChargeTool {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "charge")
        @Idempotent
        public Receipt charge(
                @ToolParam(name = "amount") long amount, @ToolParam(name = "note") String note) {
            runs.incrementAndGet();
            Receipt r = new Receipt();
            r.seq = 1000 + runs.get();
            r.note = "from the tool";
            return r;
        }
    }

    @Test
    void a_tool_and_an_action_of_one_name_on_one_store_share_records() {
        ChargeTool tool = new ChargeTool();
        ToolDispatcher tools = ToolDispatcher.builder().store(store).tools(tool).build();
        WebServiceExecutor ws = executor(new Payments()).build();

        // The action sends; the tool replays what the action recorded.
        Receipt sent = ws.invoke("charge", Map.of("amount", 5, "note", "a"), Receipt.class);
        Receipt byTool = tools.call("charge", Map.of("amount", 5, "note", "a"), Receipt.class);
        assertEquals(sent.seq, byTool.seq);
        assertEquals(0, tool.runs.get());

        // The tool runs; the action replays what the tool recorded, without a request.
        Receipt ran = tools.call("charge", Map.of("amount", 6, "note", "b"), Receipt.class);
        WebServiceResponse<Receipt> replayed =
                ws.invokeForResponse("charge", Map.of("amount", 6, "note", "b"), Receipt.class);
        assertTrue(replayed.replayed());
        assertEquals(ran.seq, replayed.value().seq);
        assertEquals("from the tool", replayed.value().note);
        assertEquals(1, server.count());
        assertEquals(1, tool.runs.get());
    }

    @Test
    void tenants_and_runs_are_separate_key_spaces() {
        WebServiceExecutor ws = executor(new Payments()).tenant("acme").build();
        Map<String, Object> input = Map.of("amount", 1, "note", "");
        WebServiceResponse<Object> acme = ws.invokeForResponse("charge", input);
        WebServiceResponse<Object> globex =
                ws.withTenant("globex").invokeForResponse("charge", input);
        WebServiceResponse<Object> nextRun = ws.withRun("r2").invokeForResponse("charge", input);
        assertFalse(globex.replayed());
        assertFalse(nextRun.replayed());
        WebServiceResponse<Object> again = ws.invokeForResponse("charge", input);
        assertTrue(again.replayed());
        assertEquals(acme.key(), again.key());
        assertEquals(
                globex.key(), ws.withTenant("globex").invokeForResponse("charge", input).key());
        assertEquals(3, new HashSet<>(List.of(acme.key(), globex.key(), nextRun.key())).size());
        assertEquals(3, server.count());
    }

    public static class Bodies {
        @WebService(endpoint = "/raw", method = HttpMethod.GET, paramType = ParamType.QUERY)
        @Idempotent
        public String raw() {
            return null;
        }

        @WebService(endpoint = "/nothing/{id}", method = HttpMethod.DELETE)
        @Idempotent
        public Void nothing(@ToolParam(name = "id") String id) {
            return null;
        }

        @WebService(endpoint = "/raw", method = HttpMethod.GET, paramType = ParamType.QUERY)
        @Idempotent
        public Receipt unreadable() {
            return null;
        }
    }

    @Test
    void bodies_read_as_the_declared_type_raw_text_or_nothing() {
        server.script(
                r ->
                        r.method.equals("DELETE")
                                ? Reply.json(204, "")
                                : Reply.text(200, "plain Zürich, not JSON"));
        WebServiceExecutor ws = executor(new Bodies()).build();
        assertEquals("plain Zürich, not JSON", ws.invoke("raw", Map.of()));
        assertEquals("plain Zürich, not JSON", ws.invoke("raw", "{}"));
        WebServiceResponse<Object> deleted = ws.invokeForResponse("nothing", Map.of("id", "7"));
        assertNull(deleted.value());
        assertEquals(204, deleted.status().getAsInt());
        assertTrue(ws.invokeForResponse("nothing", Map.of("id", "7")).replayed());
        assertEquals(
                "",
                server.requests().get(1).body,
                "a DELETE whose parameters all fill the path has no body");
        WebServiceException unreadable =
                assertThrows(WebServiceException.class, () -> ws.invoke("unreadable", Map.of()));
        assertEquals(200, unreadable.status());
        assertTrue(unreadable.getMessage().contains("does not read as"), unreadable.getMessage());
        assertNotNull(unreadable.getCause());
    }
}
