package dev.idemkit;

/**
 * A {@link WebService} action failed: the service answered a non-2xx status, or no response came (a
 * transport error, or no time was left to start a retry) after the retries the executor allows. (An
 * exchange cut at the deadline is not this: its outcome is unknown, see {@link
 * IdempotencyTimeoutException}.) The action's own failure, not idemkit's refusal: the claim is
 * released (a retry sends again, with the same {@code Idempotency-Key} for {@code
 * HASH_INPUT}/{@code EXPLICIT}), or, with {@code cacheFailures}, remembered, so a repeat gets
 * {@link CachedFailureException} naming this class and message without a request.
 */
public class WebServiceException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** How much of the body a message quotes (the full body is {@link #body()}). */
    static final int QUOTED_BODY = 500;

    /** The action's name. */
    private final String action;

    /** The request's method. */
    private final HttpMethod method;

    /** The request URI of the last attempt. */
    private final String uri;

    /** The last response's status, or 0 when no response came. */
    private final int status;

    /** The last response's body, or {@code ""}. */
    private final String body;

    /** The call's key, or {@code null} for {@code NONE}. */
    private final String key;

    /** How many requests were sent. */
    private final int attempts;

    /**
     * What the exchange came to, for the core's decision (a {@code NativeBridge.EXCHANGE_*} code),
     * or -1 when this is not a failed exchange (e.g. a 2xx body that does not read).
     */
    private transient int exchange = -1;

    /** Whether the request carried the call's {@code Idempotency-Key}. */
    private transient boolean keySent;

    /**
     * A failed action. The executor raises it; the constructor is public so that tests and code
     * that wraps an executor can make one.
     *
     * @param message what failed, quoting at most 500 characters of the body
     * @param action the action's name
     * @param method the request's method
     * @param uri the request URI of the last attempt
     * @param status the last response's status, or 0 when no response came
     * @param body the last response's body, or {@code ""}
     * @param key the call's key, or {@code null} for {@code NONE}
     * @param attempts how many requests were sent
     * @param cause the transport error when no response came, else {@code null}
     */
    public WebServiceException(
            String message,
            String action,
            HttpMethod method,
            String uri,
            int status,
            String body,
            String key,
            int attempts,
            Throwable cause) {
        super(message, cause);
        this.action = action;
        this.method = method;
        this.uri = uri;
        this.status = status;
        this.body = body;
        this.key = key;
        this.attempts = attempts;
    }

    /**
     * The action's name.
     *
     * @return the {@link WebService#name()} of the failed action
     */
    public String action() {
        return action;
    }

    /**
     * The request's method.
     *
     * @return the action's method
     */
    public HttpMethod method() {
        return method;
    }

    /**
     * The request URI of the last attempt.
     *
     * @return the URI, with its path and query filled in
     */
    public String uri() {
        return uri;
    }

    /**
     * The HTTP status of the last response, or 0 when no response came (see {@link #getCause()}).
     *
     * @return the status, or 0
     */
    public int status() {
        return status;
    }

    /**
     * Whether no response came: a transport error or the deadline; {@link #getCause()} says which.
     *
     * @return {@code true} when {@link #status()} is 0
     */
    public boolean noResponse() {
        return status == 0;
    }

    /**
     * The last response's body as text ("" when no response came).
     *
     * @return the whole body
     */
    public String body() {
        return body;
    }

    /**
     * The call's key (the 64-hex key, or the UUID), or null for {@code NONE}.
     *
     * @return the key the requests carried, or {@code null}
     */
    public String key() {
        return key;
    }

    /**
     * How many requests were sent for this call (1 + transport retries).
     *
     * @return at least 1
     */
    public int attempts() {
        return attempts;
    }

    static String quote(String body) {
        if (body.length() <= QUOTED_BODY) {
            return body;
        }
        return body.substring(0, QUOTED_BODY) + "... (" + body.length() + " characters)";
    }

    /** Marks this as a failed exchange for the core: what was seen, and whether the key went. */
    WebServiceException observed(int exchange, boolean keySent) {
        this.exchange = exchange;
        this.keySent = keySent;
        return this;
    }

    /** The {@code NativeBridge.EXCHANGE_*} code of the exchange, or -1. */
    int exchange() {
        return exchange;
    }

    /** Whether the request carried the call's key. */
    boolean keySent() {
        return keySent;
    }
}
