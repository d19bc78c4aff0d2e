package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.example.store.MapStoreOperations;
import dev.idemkit.ChargeServer.Fault;
import dev.idemkit.ChargeServer.Mode;
import dev.idemkit.spi.ClaimRequest;
import dev.idemkit.spi.ClaimResult;
import dev.idemkit.spi.ListRequest;
import dev.idemkit.spi.ListResult;
import dev.idemkit.spi.ReadResult;
import dev.idemkit.spi.RecordId;
import dev.idemkit.spi.SettleResult;
import dev.idemkit.spi.StoreOperations;
import dev.idemkit.spi.StoredOutcome;
import java.net.ServerSocket;
import java.text.MessageFormat;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * SPEC v1.1 rule 12 on the wire: web actions against a server that honours {@code Idempotency-Key}
 * (as Stripe does) and one that ignores it, both {@link ChargeServer}s written for the tests.
 * Server-side charges are counted with faults injected after the charge: a dropped connection, a
 * 503, an answer later than {@code timeoutMs}.
 */
class UpstreamKeyTest {
    public static class Charge {
        public String id;
        public long amount;
    }

    /** The same charge action, declared for an upstream that honours the key or not. */
    public static class Payments {
        @WebService(name = "charge", endpoint = "/charges", honorsIdempotencyKey = true)
        @Idempotent(effect = Effect.EFFECTFUL, keyArguments = "order")
        public Charge charge(
                @ToolParam(name = "order") String order,
                @ToolParam(name = "amount") long amount,
                @ToolParam(name = "note") String note) {
            return null;
        }

        @WebService(name = "charge_plain", endpoint = "/charges")
        @Idempotent(effect = Effect.EFFECTFUL)
        public Charge chargePlain(
                @ToolParam(name = "order") String order, @ToolParam(name = "amount") long amount) {
            return null;
        }

        @WebService(name = "charge_plain_idempotent", endpoint = "/charges")
        @Idempotent
        public Charge chargePlainIdempotent(
                @ToolParam(name = "order") String order, @ToolParam(name = "amount") long amount) {
            return null;
        }

        @WebService(
                name = "charge_in_time",
                endpoint = "/charges",
                honorsIdempotencyKey = true,
                timeoutMs = 400)
        @Idempotent(effect = Effect.EFFECTFUL, leaseSeconds = 1)
        public Charge chargeInTime(
                @ToolParam(name = "order") String order, @ToolParam(name = "amount") long amount) {
            return null;
        }

        @WebService(name = "charge_plain_in_time", endpoint = "/charges", timeoutMs = 400)
        @Idempotent(effect = Effect.EFFECTFUL, leaseSeconds = 1)
        public Charge chargePlainInTime(
                @ToolParam(name = "order") String order, @ToolParam(name = "amount") long amount) {
            return null;
        }

        @WebService(
                name = "charge_form",
                endpoint = "/charges",
                honorsIdempotencyKey = true,
                bodyEncoding = BodyEncoding.FORM)
        @Idempotent
        public Charge chargeForm(
                @ToolParam(name = "order") String order,
                @ToolParam(name = "amount") long amount,
                @ToolParam(name = "metadata") Map<String, Object> metadata) {
            return null;
        }
    }

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open) {
            c.close();
        }
    }

    private ChargeServer server(Mode mode) throws Exception {
        ChargeServer server = new ChargeServer(mode);
        open.add(server);
        return server;
    }

    /** An executor on its own in-memory store (an instance of its own). */
    private WebServiceExecutor executor(String baseUri, int attempts) {
        return executor(baseUri, attempts, new InMemoryIdempotencyStore());
    }

    /** An executor on {@code store}, closed after the test. */
    private WebServiceExecutor executor(String baseUri, int attempts, IdempotencyStore store) {
        WebServiceExecutor ws =
                WebServiceExecutor.builder()
                        .store(store)
                        .baseUri(baseUri)
                        .retry(attempts, Duration.ofMillis(20))
                        .roles(new Payments())
                        .build();
        open.add(store);
        open.add(ws);
        return ws;
    }

    private static Map<String, Object> order(String order) {
        return Map.of("order", order, "amount", 1200, "note", "first");
    }

    @Test
    void a_connection_dropped_after_the_charge_is_sent_again_and_charges_once() throws Exception {
        ChargeServer server = server(Mode.HONOURS);
        server.faults(n -> n == 1 ? Fault.DROP : Fault.NONE);
        WebServiceExecutor ws = executor(server.baseUri(), 3);
        WebServiceResponse<Charge> r = ws.invokeForResponse("charge", order("o-1"), Charge.class);
        assertEquals(
                "ch_1", r.value().id, "the resend got the first charge from the server's record");
        assertEquals(2, r.attempts());
        assertEquals(2, server.requests());
        assertEquals(1, server.charges());
        assertTrue(ws.invokeForResponse("charge", order("o-1")).replayed());
        assertEquals(2, server.requests(), "a repeat is answered from the store");
    }

    @Test
    void a_503_after_the_charge_is_sent_again_only_to_a_key_honouring_upstream() throws Exception {
        ChargeServer honours = server(Mode.HONOURS);
        honours.faults(n -> n == 1 ? Fault.UNAVAILABLE : Fault.NONE);
        WebServiceExecutor ws = executor(honours.baseUri(), 3);
        assertEquals("ch_1", ws.invoke("charge", order("o-2"), Charge.class).id);
        assertEquals(1, honours.charges());

        // The same 503 from a server that ignores the key: sending again would charge twice.
        ChargeServer ignores = server(Mode.IGNORES);
        ignores.faults(n -> Fault.UNAVAILABLE);
        WebServiceExecutor plain = executor(ignores.baseUri(), 3);
        IndeterminateOutcomeException held =
                assertThrows(
                        IndeterminateOutcomeException.class,
                        () -> plain.invoke("charge_plain", Map.of("order", "o-2", "amount", 5)));
        WebServiceException cause = assertInstanceOf(WebServiceException.class, held.getCause());
        assertEquals(503, cause.status());
        assertEquals(1, ignores.requests(), "never sent again");
        assertEquals(1, ignores.charges());
        // EFFECTFUL holds the unknown outcome: a repeat sends nothing.
        assertThrows(
                IndeterminateOutcomeException.class,
                () -> plain.invoke("charge_plain", Map.of("order", "o-2", "amount", 5)));
        assertEquals(1, ignores.charges());
        // IDEMPOTENT releases it: not sent again within the call, the next call sends.
        WebServiceException released =
                assertThrows(
                        WebServiceException.class,
                        () ->
                                plain.invoke(
                                        "charge_plain_idempotent",
                                        Map.of("order", "o-3", "amount", 5)));
        assertEquals(1, released.attempts());
        assertEquals(2, ignores.charges());
    }

    @Test
    void a_connection_dropped_by_a_server_that_ignores_the_key_is_held_not_resent()
            throws Exception {
        ChargeServer ignores = server(Mode.IGNORES);
        ignores.faults(n -> Fault.DROP);
        WebServiceExecutor plain = executor(ignores.baseUri(), 3);
        assertThrows(
                IndeterminateOutcomeException.class,
                () -> plain.invoke("charge_plain", Map.of("order", "o-4", "amount", 5)));
        assertEquals(1, ignores.requests());
        assertEquals(1, ignores.charges());
    }

    @Test
    void a_request_that_never_reached_the_server_is_sent_again_and_then_released()
            throws Exception {
        int closedPort;
        try (ServerSocket probe = new ServerSocket(0)) {
            closedPort = probe.getLocalPort();
        }
        WebServiceExecutor plain = executor("http://127.0.0.1:" + closedPort, 3);
        WebServiceException refused =
                assertThrows(
                        WebServiceException.class,
                        () -> plain.invoke("charge_plain", Map.of("order", "o-5", "amount", 5)));
        assertEquals(3, refused.attempts(), "nothing was written: safe to send again");
        assertTrue(refused.getMessage().contains("nothing was sent"), refused.getMessage());
        // Released, not held (EFFECTFUL though): nothing can have happened.
        WebServiceException again =
                assertThrows(
                        WebServiceException.class,
                        () -> plain.invoke("charge_plain", Map.of("order", "o-5", "amount", 5)));
        assertEquals(3, again.attempts());
    }

    @Test
    void a_409_in_progress_is_asked_again_until_the_first_request_answers() throws Exception {
        ChargeServer server = server(Mode.HONOURS);
        server.delay(600);
        // Two instances without a shared store: only the server sees both.
        WebServiceExecutor a = executor(server.baseUri(), 1);
        WebServiceExecutor b = executor(server.baseUri(), 1);
        CompletableFuture<Charge> first =
                CompletableFuture.supplyAsync(() -> a.invoke("charge", order("o-6"), Charge.class));
        while (server.requests() == 0) {
            Thread.sleep(5);
        }
        WebServiceResponse<Charge> second =
                b.invokeForResponse("charge", order("o-6"), Charge.class);
        assertEquals("ch_1", second.value().id);
        assertTrue(second.attempts() >= 2, "asked again after a 409: " + second.attempts());
        assertEquals("ch_1", first.get().id);
        assertEquals(1, server.charges());
    }

    @Test
    void a_key_reused_upstream_with_another_body_is_a_payload_mismatch() throws Exception {
        ChargeServer server = server(Mode.HONOURS);
        for (int status : new int[] {422, 417}) {
            server.mismatchStatus(status);
            String order = "o-7-" + status;
            WebServiceExecutor a = executor(server.baseUri(), 1);
            WebServiceExecutor b = executor(server.baseUri(), 1);
            a.invoke("charge", Map.of("order", order, "amount", 1200, "note", "first"));
            // keyArguments = order: another note is the same key, but the server compares bodies.
            PayloadMismatchException mismatch =
                    assertThrows(
                            PayloadMismatchException.class,
                            () ->
                                    b.invoke(
                                            "charge",
                                            Map.of("order", order, "amount", 1200, "note", "2nd")));
            assertEquals(ErrorKind.PAYLOAD_MISMATCH, mismatch.kind());
            assertTrue(mismatch.getMessage().contains("answered " + status), mismatch.getMessage());
            // The Java face names the Java setting, not the Rust field.
            assertTrue(
                    mismatch.getMessage().contains("an argument outside keyArguments changed it")
                            && !mismatch.getMessage().contains("key_arguments"),
                    mismatch.getMessage());
            assertEquals(
                    status,
                    assertInstanceOf(WebServiceException.class, mismatch.getCause()).status());
        }
        assertEquals(2, server.charges());
    }

    @Test
    void after_a_timeout_a_key_honouring_action_takes_the_abandoned_claim_over() throws Exception {
        takesTheAbandonedClaimOver(new InMemoryIdempotencyStore());
    }

    @Test
    void a_store_written_in_java_takes_the_abandoned_claim_over_too() throws Exception {
        takesTheAbandonedClaimOver(IdempotencyStore.of(new MapStoreOperations()));
    }

    private void takesTheAbandonedClaimOver(IdempotencyStore store) throws Exception {
        ChargeServer server = server(Mode.HONOURS);
        server.delay(700);
        WebServiceExecutor ws = executor(server.baseUri(), 1, store);
        Map<String, Object> input = Map.of("order", "o-8", "amount", 1200);
        IdempotencyTimeoutException cut =
                assertThrows(
                        IdempotencyTimeoutException.class,
                        () -> ws.invoke("charge_in_time", input));
        assertTrue(cut.getMessage().contains("takes the claim over"), cut.getMessage());
        // Within the lease a repeat waits (here until its own deadline) and sends nothing.
        assertThrows(InProgressException.class, () -> ws.invoke("charge_in_time", input));
        assertEquals(1, server.requests());
        while (server.charges() == 0 || !leaseOver()) {
            Thread.sleep(50);
        }
        server.delay(0);
        // The lease ended: one call takes the claim over and sends again under the same key; the
        // server answers from its record, and that answer is recorded.
        WebServiceResponse<Charge> later =
                ws.invokeForResponse("charge_in_time", input, Charge.class);
        assertFalse(later.replayed());
        assertEquals("ch_1", later.value().id);
        assertEquals(cut.key(), later.key());
        assertEquals(1, server.charges());
        assertTrue(ws.invokeForResponse("charge_in_time", input).replayed());
        assertEquals(2, server.requests());
    }

    @Test
    void a_store_written_before_take_over_leaves_the_abandoned_claim_to_an_operator()
            throws Exception {
        ChargeServer server = server(Mode.HONOURS);
        server.delay(700);
        WebServiceExecutor ws =
                executor(server.baseUri(), 1, IdempotencyStore.of(new WithoutTakeOver()));
        Map<String, Object> input = Map.of("order", "o-10", "amount", 1200);
        IdempotencyTimeoutException cut =
                assertThrows(
                        IdempotencyTimeoutException.class,
                        () -> ws.invoke("charge_in_time", input));
        while (server.charges() == 0 || !leaseOver()) {
            Thread.sleep(50);
        }
        server.delay(0);
        // The store answers the SPI's default (unsupported): the claim stays abandoned, as in v1.
        IndeterminateOutcomeException abandoned =
                assertThrows(
                        IndeterminateOutcomeException.class,
                        () -> ws.invoke("charge_in_time", input));
        assertTrue(
                abandoned.getMessage().contains("IdempotencyStore.releaseKey"),
                abandoned.getMessage());
        assertEquals(1, server.requests(), "nothing is sent again");
        assertEquals(1, server.charges());
        assertTrue(ws.store().releaseKey(null, cut.key()));
    }

    /** A store written against the SPI before {@code takeOver}: every other operation delegates. */
    static final class WithoutTakeOver implements StoreOperations {
        private final MapStoreOperations map = new MapStoreOperations();

        @Override
        public ClaimResult claim(ClaimRequest request) {
            return map.claim(request);
        }

        @Override
        public SettleResult complete(RecordId id, String token, StoredOutcome outcome, long ttlMs) {
            return map.complete(id, token, outcome, ttlMs);
        }

        @Override
        public boolean release(RecordId id, String token) {
            return map.release(id, token);
        }

        @Override
        public ReadResult get(RecordId id) {
            return map.get(id);
        }

        @Override
        public ListResult list(ListRequest request) {
            return map.list(request);
        }

        @Override
        public SettleResult resolve(
                RecordId id, String expectedToken, StoredOutcome outcome, long ttlMs) {
            return map.resolve(id, expectedToken, outcome, ttlMs);
        }

        @Override
        public boolean delete(RecordId id) {
            return map.delete(id);
        }

        @Override
        public long forget(String tenant) {
            return map.forget(tenant);
        }

        @Override
        public long purgeExpired() {
            return map.purgeExpired();
        }

        @Override
        public String describe() {
            return "map store without take-over";
        }
    }

    private final long started = System.nanoTime();

    /** Whether the 1 s lease of a claim made at the start of the test has surely ended. */
    private boolean leaseOver() {
        return System.nanoTime() - started > Duration.ofMillis(1_300).toNanos();
    }

    @Test
    void without_the_declaration_a_timed_out_call_is_settled_in_process_by_one_key()
            throws Exception {
        ChargeServer server = server(Mode.IGNORES);
        server.delay(700);
        WebServiceExecutor ws = executor(server.baseUri(), 1);
        Map<String, Object> input = Map.of("order", "o-9", "amount", 1200);
        IdempotencyTimeoutException cut =
                assertThrows(
                        IdempotencyTimeoutException.class,
                        () -> ws.invoke("charge_plain_in_time", input));
        assertTrue(cut.getMessage().contains("store.releaseKey"), cut.getMessage());
        IllegalStateException live =
                assertThrows(
                        IllegalStateException.class, () -> ws.store().releaseKey(null, cut.key()));
        assertTrue(live.getMessage().contains("in progress"), live.getMessage());
        while (!leaseOver()) {
            Thread.sleep(50);
        }
        IndeterminateOutcomeException abandoned =
                assertThrows(
                        IndeterminateOutcomeException.class,
                        () -> ws.invoke("charge_plain_in_time", input));
        assertTrue(
                abandoned.getMessage().contains("IdempotencyStore.releaseKey"),
                abandoned.getMessage());
        assertEquals(1, server.charges());
        // The operator found the charge upstream and records it: repeats get it, nothing is sent.
        assertTrue(ws.store().resolveKey(null, cut.key(), "{\"id\":\"ch_1\",\"amount\":1200}", 60));
        WebServiceResponse<Charge> replay =
                ws.invokeForResponse("charge_plain_in_time", input, Charge.class);
        assertTrue(replay.replayed());
        assertEquals("ch_1", replay.value().id);
        assertThrows(IllegalStateException.class, () -> ws.store().releaseKey(null, cut.key()));
        assertFalse(ws.store().releaseKey("another tenant", cut.key()));
        assertEquals(1, server.requests());
    }

    @Test
    void form_bodies_are_encoded_as_forms_over_http_1_1() throws Exception {
        ChargeServer server = server(Mode.HONOURS);
        WebServiceExecutor ws = executor(server.baseUri(), 1);
        Charge charge =
                ws.invoke(
                        "charge_form",
                        Map.of("order", "o 10&x", "amount", 1200, "metadata", Map.of("k", "v")),
                        Charge.class);
        assertEquals(1200, charge.amount, "the server read the amount from the form");
        ChargeServer.Seen seen = server.seen().get(0);
        assertEquals("application/x-www-form-urlencoded", seen.headers.get("Content-type").get(0));
        assertTrue(seen.body.contains("amount=1200"), seen.body);
        assertTrue(seen.body.contains("order=o%2010%26x"), seen.body);
        assertTrue(seen.body.contains("metadata%5Bk%5D=v"), seen.body);
        assertEquals("HTTP/1.1", seen.protocol);
        assertNull(seen.headers.get("Upgrade"), "no h2c upgrade offer");
    }

    @Test
    void a_content_type_that_contradicts_the_body_encoding_is_refused_at_registration() {
        IllegalArgumentException refused =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                WebServiceExecutor.builder()
                                        .baseUri("http://127.0.0.1:1")
                                        .header("Content-Type", "application/json")
                                        .roles(new Payments())
                                        .build());
        assertTrue(refused.getMessage().contains("charge_form"), refused.getMessage());
        assertTrue(refused.getMessage().contains("Content-Type"), refused.getMessage());
        assertTrue(refused.getMessage().contains("FORM"), refused.getMessage());
    }

    @Test
    @ExpectedWarnings("sends its Idempotency-Key to")
    void two_header_forms_for_one_host_on_one_store_log_a_warning() {
        Logger logger = Logger.getLogger("dev.idemkit");
        List<String> warnings = new ArrayList<>();
        Handler handler =
                new Handler() {
                    @Override
                    public void publish(LogRecord record) {
                        warnings.add(
                                MessageFormat.format(record.getMessage(), record.getParameters()));
                    }

                    @Override
                    public void flush() {}

                    @Override
                    public void close() {}
                };
        logger.addHandler(handler);
        try (InMemoryIdempotencyStore store = new InMemoryIdempotencyStore();
                WebServiceExecutor bare =
                        WebServiceExecutor.builder()
                                .store(store)
                                .baseUri("http://127.0.0.1:9")
                                .roles(new Payments())
                                .build();
                WebServiceExecutor quoted =
                        WebServiceExecutor.builder()
                                .store(store)
                                .baseUri("http://127.0.0.1:9")
                                .keyHeaderForm(WebServiceExecutor.KeyHeaderForm.STRUCTURED_STRING)
                                .roles(new Payments())
                                .build()) {
            assertEquals(bare.store(), quoted.store());
        } finally {
            logger.removeHandler(handler);
        }
        List<String> forms = warnings.stream().filter(w -> w.contains("keyHeaderForm")).toList();
        assertEquals(1, forms.size(), warnings.toString());
        assertTrue(forms.get(0).contains("127.0.0.1:9"), forms.get(0));
    }
}
