package dev.idemkit;

import java.io.IOException;
import java.net.ConnectException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Sends one request of a web-service call, the body of its idempotent call: the default headers,
 * the call's {@code Idempotency-Key} and the body's {@code Content-Type}, bounded by the action's
 * deadline. A 2xx body is read as the action's return type. Anything else is a {@link
 * WebServiceException} that says what was seen — nothing written to the connection, no answer, or a
 * status — for the core to decide whether the request is sent again and how the claim is settled
 * (SPEC v1.1 rule 12); this class never decides that. An exchange cut at the deadline is an {@link
 * IdempotencyTimeoutException} whose claim stays in progress.
 */
final class HttpExchange {
    private static final System.Logger LOG = System.getLogger("dev.idemkit");

    /** The header every key-carrying request gets. */
    static final String KEY_HEADER = "Idempotency-Key";

    /**
     * How long past the deadline a response body may still be arriving before the exchange is cut.
     */
    private static final long BODY_GRACE_MS = 50;

    final HttpClient client;

    /** Whether the executor created {@link #client} (then it closes it, where the JDK can). */
    private final boolean ownsClient;

    private final Map<String, List<String>> headers;
    private final String contentType;

    /** The key as an RFC 8941 string ({@code "9f86d0..."}) rather than bare. */
    private final boolean quotedKey;

    HttpExchange(
            HttpClient client,
            boolean ownsClient,
            Map<String, List<String>> headers,
            boolean quotedKey) {
        this.client = client;
        this.ownsClient = ownsClient;
        this.headers = headers;
        String type = null;
        for (Map.Entry<String, List<String>> header : headers.entrySet()) {
            if (header.getKey().equalsIgnoreCase("Content-Type") && !header.getValue().isEmpty()) {
                type = header.getValue().get(0);
            }
        }
        this.contentType = type;
        this.quotedKey = quotedKey;
    }

    /** The {@code Content-Type} default header, or null. */
    String contentType() {
        return contentType;
    }

    /** Closes the client if it was created here and the JDK can close one (21 and later). */
    void close() {
        if (ownsClient && client instanceof AutoCloseable) {
            try {
                ((AutoCloseable) client).close();
            } catch (Exception e) {
                LOG.log(
                        System.Logger.Level.DEBUG,
                        "idemkit: closing the HTTP client failed: {0}",
                        e.toString());
            }
        }
    }

    /**
     * Sends the request once; the body of the idempotent call.
     *
     * @param attempt which request of the call this is (1, 2, ...): the core runs the body again
     *     when it decides the request may be sent again
     */
    WebServiceResponse<Object> send(
            RegisteredAction a,
            RequestTemplate.Request request,
            IdempotencyContext context,
            long started,
            int attempt) {
        String key = context.key();
        HttpRequest.Builder builder = HttpRequest.newBuilder(request.uri);
        for (Map.Entry<String, List<String>> header : headers.entrySet()) {
            for (String value : header.getValue()) {
                builder.header(header.getKey(), value);
            }
        }
        boolean sendsKey = key != null && a.method.carriesIdempotencyKey();
        if (sendsKey) {
            builder.header(KEY_HEADER, quotedKey ? "\"" + key + "\"" : key);
        }
        if (request.body != null) {
            if (contentType == null) {
                builder.header("Content-Type", a.mediaType());
            }
            builder.method(a.method.name(), HttpRequest.BodyPublishers.ofByteArray(request.body));
        } else {
            builder.method(a.method.name(), HttpRequest.BodyPublishers.noBody());
        }
        long deadline =
                a.timeoutMs > 0
                        ? started + TimeUnit.MILLISECONDS.toNanos(a.timeoutMs)
                        : Long.MAX_VALUE;
        String uri = request.uri.toString();
        long remaining =
                deadline == Long.MAX_VALUE
                        ? Long.MAX_VALUE
                        : TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (remaining <= 0) {
            WebServiceException late =
                    failure(
                            a,
                            uri,
                            0,
                            "",
                            key,
                            attempt - 1,
                            "did not start its request within timeoutMs = " + a.timeoutMs,
                            new HttpTimeoutException("deadline passed"));
            if (attempt == 1) {
                // Nothing was sent: release the claim as for a body that never ran.
                throw new IdempotentInvoker.NotRun(late);
            }
            throw late.observed(NativeBridge.EXCHANGE_NOT_SENT, sendsKey);
        }
        if (remaining != Long.MAX_VALUE) {
            builder.timeout(Duration.ofMillis(remaining));
        }
        HttpResponse<byte[]> response;
        try {
            response = exchange(builder.build(), remaining);
        } catch (IOException transport) {
            // Cut at the call's deadline: the request may have reached the service, so the
            // outcome is unknown. SPEC v1.1 rule 3: the claim stays in progress (neither recorded
            // nor released) and reads as abandoned once its lease ends. (A connect timeout of the
            // client's own, with time left, is a transport error like any other.)
            boolean timedOut =
                    transport instanceof HttpTimeoutException
                            && !(transport instanceof HttpConnectTimeoutException)
                            && deadline != Long.MAX_VALUE
                            && deadline - System.nanoTime() <= TimeUnit.MILLISECONDS.toNanos(5);
            if (timedOut) {
                throw new IdempotentInvoker.OutcomeUnknown(
                        cutAtDeadline(a, uri, key, attempt, transport));
            }
            // Nothing was written when the connection was never made: the service never saw it.
            boolean unsent =
                    transport instanceof ConnectException
                            || transport instanceof HttpConnectTimeoutException;
            throw failure(
                            a,
                            uri,
                            0,
                            "",
                            key,
                            attempt,
                            unsent
                                    ? "could not connect (" + transport + "); nothing was sent"
                                    : "got no response (" + transport + ")",
                            transport)
                    .observed(
                            unsent
                                    ? NativeBridge.EXCHANGE_NOT_SENT
                                    : NativeBridge.EXCHANGE_NO_ANSWER,
                            sendsKey);
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            throw failure(
                    a,
                    uri,
                    0,
                    "",
                    key,
                    attempt,
                    "was interrupted while waiting for its response",
                    interrupted);
        }
        int status = response.statusCode();
        Charset charset = charset(response);
        if (status >= 200 && status < 300) {
            Object value;
            try {
                value = a.read(response.body(), charset);
            } catch (IOException unreadable) {
                String body = new String(response.body(), StandardCharsets.UTF_8);
                throw failure(
                        a,
                        uri,
                        status,
                        body,
                        key,
                        attempt,
                        "answered "
                                + status
                                + " with a body that does not read as "
                                + a.returnType.toCanonical()
                                + " ("
                                + unreadable.getMessage()
                                + ")",
                        unreadable);
            }
            return WebServiceResponse.fresh(value, status, response.headers(), attempt, context);
        }
        String body = new String(response.body(), charset);
        throw failure(a, uri, status, body, key, attempt, "answered " + status, null)
                .observed(NativeBridge.EXCHANGE_ANSWERED, sendsKey);
    }

    /** An exchange cut at the deadline: its outcome is unknown and its claim stays in progress. */
    private static IdempotencyTimeoutException cutAtDeadline(
            RegisteredAction a, String uri, String key, int attempts, IOException cause) {
        boolean claims = a.strategy == KeyStrategy.HASH_INPUT || a.strategy == KeyStrategy.EXPLICIT;
        String unknown =
                !claims
                        ? (key == null ? "" : " under key " + key)
                                + "; the outcome is unknown (the request may have reached the service)"
                        : " under key "
                                + key
                                + "; the outcome is unknown (the request may have reached the service), so"
                                + " the claim stays in progress until its lease (leaseSeconds) ends"
                                + (a.honorsKey
                                        ? ": a retry waits for it; after the lease a call of the same request takes the"
                                                + " claim over and sends it again under the same key (the upstream honours"
                                                + " the key and answers from its own record)"
                                        : ": a retry waits for it, then gets IndeterminateOutcomeException until an"
                                                + " operator settles this one key: store.releaseKey(tenant, key) or"
                                                + " store.resolveKey(tenant, key, json) in-process, or `idemkit resolve`"
                                                + " for a shared store");
        return new IdempotencyTimeoutException(
                a.method
                        + " "
                        + uri
                        + " (`"
                        + a.name
                        + "`) got no response within"
                        + " timeoutMs = "
                        + a.timeoutMs
                        + (attempts > 1 ? " (attempt " + attempts + ")" : "")
                        + unknown,
                a.name,
                key,
                cause);
    }

    private static WebServiceException failure(
            RegisteredAction a,
            String uri,
            int status,
            String body,
            String key,
            int attempts,
            String what,
            Throwable cause) {
        StringBuilder message =
                new StringBuilder()
                        .append(a.method)
                        .append(' ')
                        .append(uri)
                        .append(" (`")
                        .append(a.name)
                        .append("`) ")
                        .append(what);
        if (attempts > 1) {
            message.append(" after ").append(attempts).append(" attempts");
        }
        if (key != null) {
            message.append(" under key ").append(key);
        }
        if (!body.isEmpty()) {
            message.append(": ").append(WebServiceException.quote(body));
        }
        return new WebServiceException(
                message.toString(), a.name, a.method, uri, status, body, key, attempts, cause);
    }

    /**
     * One exchange, bounded by the deadline (the headers by {@code HttpRequest.timeout}, the body
     * by the wait).
     */
    private HttpResponse<byte[]> exchange(HttpRequest request, long remainingMs)
            throws IOException, InterruptedException {
        CompletableFuture<HttpResponse<byte[]>> pending =
                client.sendAsync(request, HttpResponse.BodyHandlers.ofByteArray());
        try {
            return remainingMs == Long.MAX_VALUE
                    ? pending.get()
                    : pending.get(remainingMs + BODY_GRACE_MS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException slow) {
            pending.cancel(true);
            throw new HttpTimeoutException("the response did not arrive within the deadline");
        } catch (InterruptedException interrupted) {
            pending.cancel(true);
            throw interrupted;
        } catch (ExecutionException failed) {
            Throwable cause = failed.getCause();
            if (cause instanceof IOException) {
                throw (IOException) cause;
            }
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            if (cause instanceof Error) {
                throw (Error) cause;
            }
            throw new IOException(cause);
        }
    }

    /** The charset the response names, or UTF-8 when it names none or one the JDK does not know. */
    private static Charset charset(HttpResponse<?> response) {
        String type = response.headers().firstValue("Content-Type").orElse("");
        for (String part : type.split(";")) {
            String p = part.trim();
            if (p.toLowerCase(Locale.ROOT).startsWith("charset=")) {
                String name = p.substring("charset=".length()).replace("\"", "").trim();
                try {
                    return Charset.forName(name);
                } catch (IllegalArgumentException unknown) {
                    return StandardCharsets.UTF_8;
                }
            }
        }
        return StandardCharsets.UTF_8;
    }
}
