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

    private final String action;
    private final HttpMethod method;
    private final String uri;
    private final int status;
    private final String body;
    private final String key;
    private final int attempts;

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

    /** The action's name. */
    public String action() {
        return action;
    }

    public HttpMethod method() {
        return method;
    }

    /** The request URI of the last attempt. */
    public String uri() {
        return uri;
    }

    /**
     * The HTTP status of the last response, or 0 when no response came (see {@link #getCause()}).
     */
    public int status() {
        return status;
    }

    /**
     * Whether no response came: a transport error or the deadline; {@link #getCause()} says which.
     */
    public boolean noResponse() {
        return status == 0;
    }

    /** The last response's body as text ("" when no response came). */
    public String body() {
        return body;
    }

    /** The call's key (the 64-hex key, or the UUID), or null for {@code NONE}. */
    public String key() {
        return key;
    }

    /** How many requests were sent for this call (1 + transport retries). */
    public int attempts() {
        return attempts;
    }

    static String quote(String body) {
        if (body.length() <= QUOTED_BODY) {
            return body;
        }
        return body.substring(0, QUOTED_BODY) + "... (" + body.length() + " characters)";
    }
}
