package dev.idemkit;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;

/**
 * A small payment API on 127.0.0.1 for the tests of SPEC v1.1 rule 12, written here: {@code POST
 * /charges} creates a charge (a server-side effect, counted) from a JSON or form body.
 *
 * <p>In {@link Mode#HONOURS} it deduplicates by {@code Idempotency-Key} as Stripe does: it keeps
 * the answer of each key (with the request body it answered), answers a repeat of the key from that
 * record, answers 409 while a request with the key is still being processed, and 422 (or 417, as
 * express-idempotency does) to the key reused with another body. In {@link Mode#IGNORES} it reads
 * no key: every request is a new charge.
 *
 * <p>Faults are injected per request number (1, 2, ...), always <em>after</em> the charge was made:
 * the connection dropped without an answer, a 503 instead of the 201 (the key's record still holds
 * the 201, as when a gateway loses the backend's answer), or the answer delayed.
 */
final class ChargeServer implements AutoCloseable {
    enum Mode {
        HONOURS,
        IGNORES
    }

    /** What to do after the charge of one request. */
    enum Fault {
        NONE,
        DROP,
        UNAVAILABLE
    }

    /** One request as it arrived. */
    static final class Seen {
        final String protocol;
        final Map<String, List<String>> headers;
        final String body;

        Seen(String protocol, Map<String, List<String>> headers, String body) {
            this.protocol = protocol;
            this.headers = headers;
            this.body = body;
        }
    }

    private static final class Entry {
        final String body;
        volatile int status;
        volatile String answer;

        Entry(String body) {
            this.body = body;
        }
    }

    private final Mode mode;
    private final HttpServer server;
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private final Map<String, Entry> byKey = new ConcurrentHashMap<>();
    private final AtomicInteger charges = new AtomicInteger();
    private final AtomicInteger requests = new AtomicInteger();
    private final List<Seen> seen = new CopyOnWriteArrayList<>();
    private volatile IntFunction<Fault> faults = n -> Fault.NONE;
    private volatile long delayMs;
    private volatile int mismatchStatus = 422;

    ChargeServer(Mode mode) throws IOException {
        this.mode = mode;
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
        server.createContext("/charges", this::handle);
        server.setExecutor(threads);
        server.start();
    }

    String baseUri() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /** The fault after the charge of request number n (1, 2, ...). */
    void faults(IntFunction<Fault> faults) {
        this.faults = faults;
    }

    /** How long each charge takes before it is answered (the key is in flight meanwhile). */
    void delay(long ms) {
        this.delayMs = ms;
    }

    /** The status of a key reused with another body: 422 (IETF draft, Stripe) or 417. */
    void mismatchStatus(int status) {
        this.mismatchStatus = status;
    }

    /** Charges made: the server-side effects. */
    int charges() {
        return charges.get();
    }

    /** Requests received. */
    int requests() {
        return requests.get();
    }

    List<Seen> seen() {
        return List.copyOf(seen);
    }

    private void handle(HttpExchange exchange) throws IOException {
        int n = requests.incrementAndGet();
        String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        seen.add(new Seen(exchange.getProtocol(), Map.copyOf(exchange.getRequestHeaders()), body));
        String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
        if (mode == Mode.HONOURS && key != null) {
            Entry fresh = new Entry(body);
            Entry known = byKey.putIfAbsent(key, fresh);
            if (known != null) {
                if (!known.body.equals(body)) {
                    answer(exchange, mismatchStatus, "{\"error\":\"idempotency_key_reused\"}");
                } else if (known.answer == null) {
                    answer(exchange, 409, "{\"error\":\"request_in_progress\"}");
                } else {
                    answer(exchange, known.status, known.answer);
                }
                return;
            }
            charge(exchange, n, body, fresh);
            return;
        }
        charge(exchange, n, body, null);
    }

    private void charge(HttpExchange exchange, int n, String body, Entry entry) throws IOException {
        long amount = amount(exchange, body);
        if (amount <= 0) {
            answer(exchange, 400, "{\"error\":\"amount_missing\"}");
            if (entry != null) {
                byKey.remove(exchange.getRequestHeaders().getFirst("Idempotency-Key"));
            }
            return;
        }
        int id = charges.incrementAndGet();
        String created = "{\"id\":\"ch_" + id + "\",\"amount\":" + amount + "}";
        if (delayMs > 0) {
            try {
                Thread.sleep(delayMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (entry != null) {
            entry.status = 201;
            entry.answer = created;
        }
        Fault fault = faults.apply(n);
        if (fault == Fault.DROP) {
            // An exception out of the handler closes the connection unanswered.
            throw new IOException("dropping the connection after the charge, as scripted");
        }
        if (fault == Fault.UNAVAILABLE) {
            answer(exchange, 503, "{\"error\":\"unavailable\"}");
            return;
        }
        answer(exchange, 201, created);
    }

    /** The amount from a JSON body ({@code "amount":1200}) or a form body ({@code amount=1200}). */
    private static long amount(HttpExchange exchange, String body) {
        String type = exchange.getRequestHeaders().getFirst("Content-Type");
        if (type != null && type.startsWith("application/x-www-form-urlencoded")) {
            for (String pair : body.split("&")) {
                String[] kv = pair.split("=", 2);
                if (kv.length == 2
                        && URLDecoder.decode(kv[0], StandardCharsets.UTF_8).equals("amount")) {
                    return Long.parseLong(URLDecoder.decode(kv[1], StandardCharsets.UTF_8));
                }
            }
            return 0;
        }
        if (type != null && type.startsWith("application/json")) {
            java.util.regex.Matcher m =
                    java.util.regex.Pattern.compile("\"amount\":(\\d+)").matcher(body);
            return m.find() ? Long.parseLong(m.group(1)) : 0;
        }
        return 0;
    }

    private static void answer(HttpExchange exchange, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
        exchange.close();
    }

    @Override
    public void close() {
        server.stop(0);
        threads.shutdownNow();
    }
}
