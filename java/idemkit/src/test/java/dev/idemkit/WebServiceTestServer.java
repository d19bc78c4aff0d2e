package dev.idemkit;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A real HTTP server on 127.0.0.1 (a free port) that records every request as it arrived (method,
 * raw path, raw query, headers, body) and answers what the test scripts: by default 200 with a JSON
 * body naming the request's sequence number.
 */
final class WebServiceTestServer implements AutoCloseable {
    /** One request as the server saw it. */
    static final class Recorded {
        final int seq;
        final String method;
        final String rawPath;
        final String rawQuery;
        final Map<String, List<String>> headers;
        final String body;

        Recorded(
                int seq,
                String method,
                String rawPath,
                String rawQuery,
                Map<String, List<String>> headers,
                String body) {
            this.seq = seq;
            this.method = method;
            this.rawPath = rawPath;
            this.rawQuery = rawQuery;
            this.headers = headers;
            this.body = body;
        }

        /** The header's values (case-insensitive name), empty when absent. */
        List<String> header(String name) {
            return headers.getOrDefault(name.toLowerCase(Locale.ROOT), List.of());
        }

        /** The only value of the header, or null when absent. */
        String single(String name) {
            List<String> values = header(name);
            if (values.size() > 1) {
                throw new AssertionError(name + " sent " + values.size() + " times: " + values);
            }
            return values.isEmpty() ? null : values.get(0);
        }

        @Override
        public String toString() {
            return "#"
                    + seq
                    + " "
                    + method
                    + " "
                    + rawPath
                    + (rawQuery == null ? "" : "?" + rawQuery)
                    + " "
                    + headers
                    + " "
                    + body;
        }
    }

    /** What to answer. */
    static final class Reply {
        final int status;
        final String body;
        final long delayMs;
        final boolean drop;
        final String contentType;

        private Reply(int status, String body, long delayMs, boolean drop, String contentType) {
            this.status = status;
            this.body = body;
            this.delayMs = delayMs;
            this.drop = drop;
            this.contentType = contentType;
        }

        static Reply json(int status, String body) {
            return new Reply(status, body, 0, false, "application/json");
        }

        static Reply text(int status, String body) {
            return new Reply(status, body, 0, false, "text/plain; charset=utf-8");
        }

        /** Closes the connection without a response. */
        static Reply drop() {
            return new Reply(0, "", 0, true, null);
        }

        Reply after(long ms) {
            return new Reply(status, body, ms, drop, contentType);
        }
    }

    /** Chooses the reply to a request. */
    interface Script {
        Reply reply(Recorded request);
    }

    private final HttpServer server;
    private final ExecutorService threads =
            Executors.newCachedThreadPool(
                    r -> {
                        Thread t = new Thread(r, "web-service-test-server");
                        t.setDaemon(true);
                        return t;
                    });
    private final List<Recorded> requests = new CopyOnWriteArrayList<>();
    private volatile Script script = r -> Reply.json(200, "{\"seq\":" + r.seq + "}");

    WebServiceTestServer() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
        server.createContext("/", this::handle);
        server.setExecutor(threads);
        server.start();
    }

    /** {@code http://127.0.0.1:<port>}. */
    String baseUri() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    void script(Script script) {
        this.script = script;
    }

    List<Recorded> requests() {
        return new ArrayList<>(requests);
    }

    Recorded only() {
        List<Recorded> all = requests();
        if (all.size() != 1) {
            throw new AssertionError(
                    "expected exactly one request, got " + all.size() + ": " + all);
        }
        return all.get(0);
    }

    int count() {
        return requests.size();
    }

    private void handle(HttpExchange exchange) throws IOException {
        Map<String, List<String>> headers = new TreeMap<>();
        exchange.getRequestHeaders()
                .forEach(
                        (name, values) ->
                                headers.put(name.toLowerCase(Locale.ROOT), List.copyOf(values)));
        String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        Recorded request;
        synchronized (requests) {
            request =
                    new Recorded(
                            requests.size() + 1,
                            exchange.getRequestMethod(),
                            exchange.getRequestURI().getRawPath(),
                            exchange.getRequestURI().getRawQuery(),
                            headers,
                            body);
            requests.add(request);
        }
        Reply reply = script.reply(request);
        if (reply.delayMs > 0) {
            try {
                Thread.sleep(reply.delayMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (reply.drop) {
            // An exception out of the handler makes the server close the connection unanswered.
            throw new IOException("dropping the connection, as scripted");
        }
        byte[] bytes = reply.body.getBytes(StandardCharsets.UTF_8);
        if (reply.contentType != null) {
            exchange.getResponseHeaders().set("Content-Type", reply.contentType);
        }
        boolean noBody = bytes.length == 0 || request.method.equals("HEAD") || reply.status == 204;
        exchange.sendResponseHeaders(reply.status, noBody ? -1 : bytes.length);
        if (!noBody) {
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        }
        exchange.close();
    }

    @Override
    public void close() {
        server.stop(0);
        threads.shutdownNow();
    }
}
