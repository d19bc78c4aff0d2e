package dev.idemkit;

import java.net.http.HttpHeaders;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The answer of a {@link WebService} action: the value read from the response body, and whether it
 * came from a request or was replayed from the store. Immutable and thread-safe.
 *
 * <p>A replayed answer has no status or headers: a record keeps the result (the same value a tool
 * of the same name would record, so tools and actions share records), not the response.
 */
public final class WebServiceResponse<T> {
    private static final HttpHeaders NO_HEADERS = HttpHeaders.of(Map.of(), (name, value) -> true);

    private final T value;
    private final int status;
    private final HttpHeaders headers;
    private final boolean replayed;
    private final String key;
    private final int attempts;
    private final IdempotencyContext context;

    private WebServiceResponse(
            T value,
            int status,
            HttpHeaders headers,
            boolean replayed,
            String key,
            int attempts,
            IdempotencyContext context) {
        this.value = value;
        this.status = status;
        this.headers = headers;
        this.replayed = replayed;
        this.key = key;
        this.attempts = attempts;
        this.context = context;
    }

    static <T> WebServiceResponse<T> fresh(
            T value, int status, HttpHeaders headers, int attempts, IdempotencyContext context) {
        return new WebServiceResponse<>(
                value, status, headers, false, context.key(), attempts, context);
    }

    static <T> WebServiceResponse<T> replayed(T value, String key) {
        return new WebServiceResponse<>(value, 0, NO_HEADERS, true, key, 0, null);
    }

    /**
     * The same answer with its value converted (the value object is shared when it already fits).
     */
    <U> WebServiceResponse<U> withValue(U converted) {
        return new WebServiceResponse<>(
                converted, status, headers, replayed, key, attempts, context);
    }

    /**
     * The body read as the action's declared return type (null for {@code void}).
     *
     * @return the value, or {@code null}
     */
    public T value() {
        return value;
    }

    /**
     * Whether the value was answered from the store without a request.
     *
     * @return {@code true} for a remembered result, {@code false} for a fresh response
     */
    public boolean replayed() {
        return replayed;
    }

    /**
     * The HTTP status of the response; empty for a replayed answer.
     *
     * @return the status of the last response
     */
    public OptionalInt status() {
        return replayed ? OptionalInt.empty() : OptionalInt.of(status);
    }

    /**
     * The response's headers; empty for a replayed answer.
     *
     * @return the headers of the last response
     */
    public HttpHeaders headers() {
        return headers;
    }

    /**
     * The call's key: the 64-hex key ({@code HASH_INPUT}, {@code EXPLICIT}; for a replayed answer
     * too), the fresh UUID ({@code UUID}), or null ({@code NONE}).
     *
     * @return the key, or {@code null}
     */
    public String key() {
        return key;
    }

    /**
     * How many requests this call sent (1 + transport retries); 0 for a replayed answer.
     *
     * @return the number of requests
     */
    public int attempts() {
        return attempts;
    }

    /**
     * The call's context (key, {@link IdempotencyContext#suppliedKey() supplied key}, tenant, run)
     * for an answer that came from a request; empty for a replayed one.
     *
     * @return the context of the call that sent the request
     */
    public Optional<IdempotencyContext> context() {
        return Optional.ofNullable(context);
    }

    @Override
    public String toString() {
        return "WebServiceResponse["
                + (replayed ? "replayed" : "status=" + status + ", attempts=" + attempts)
                + ", key="
                + key
                + ", value="
                + value
                + "]";
    }
}
