package dev.idemkit;

/**
 * Why a call did not produce a fresh result: idemkit refused it or could not decide safely. Nothing
 * was run unless the subclass says otherwise. {@link #kind()} is stable across languages.
 */
public class IdempotencyException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The stable kind. */
    private final ErrorKind kind;

    /** The tool or action name, or {@code null}. */
    private final String tool;

    /** The 64-hex key, or {@code null}. */
    private final String key;

    /**
     * An exception of this kind. idemkit raises its subclasses; this constructor is public so that
     * code which translates or wraps idemkit's errors can make one.
     *
     * @param kind the stable kind
     * @param message what happened and, where there is one, the fix
     * @param tool the tool or action name, or {@code null}
     * @param key the 64-hex key, or {@code null}
     */
    public IdempotencyException(ErrorKind kind, String message, String tool, String key) {
        super(message);
        this.kind = kind;
        this.tool = tool;
        this.key = key;
    }

    /**
     * An exception of this kind with a cause.
     *
     * @param kind the stable kind
     * @param message what happened and, where there is one, the fix
     * @param tool the tool or action name, or {@code null}
     * @param key the 64-hex key, or {@code null}
     * @param cause what led to it, or {@code null}
     */
    public IdempotencyException(
            ErrorKind kind, String message, String tool, String key, Throwable cause) {
        super(message, cause);
        this.kind = kind;
        this.tool = tool;
        this.key = key;
    }

    /**
     * The stable kind (its code is the Rust core's).
     *
     * @return the kind
     */
    public ErrorKind kind() {
        return kind;
    }

    /**
     * The tool or action name, where known.
     *
     * @return the name, or {@code null}
     */
    public String tool() {
        return tool;
    }

    /**
     * The 64-hex key the error is about, where known.
     *
     * @return the key, or {@code null}
     */
    public String key() {
        return key;
    }

    /**
     * A short text for a model that called the tool: what happened, whether the tool ran and what
     * to do, naming the tool but never the key (agent framework adapters send it as the tool's
     * error result). {@link #getMessage()} stays the full text for logs.
     *
     * <p>For example, for a repeat under {@code FAIL_FAST}: {@code book_flight was already called
     * with these arguments; it was not run again}.
     *
     * @return one sentence, without the key
     */
    public String modelMessage() {
        String t = tool == null ? "the tool" : tool;
        switch (kind) {
            case FAIL_FAST:
                return t + " was already called with these arguments; it was not run again";
            case IN_PROGRESS:
                return "an identical "
                        + t
                        + " call is still running; it was not run again (ask again later for its"
                        + " result)";
            case CACHED_FAILURE:
                String why = "";
                if (this instanceof CachedFailureException) {
                    CachedFailureException cached = (CachedFailureException) this;
                    String type = cached.originalType();
                    String simple = type == null ? "" : type.substring(type.lastIndexOf('.') + 1);
                    String message = cached.originalMessage();
                    why =
                            ": "
                                    + simple
                                    + (message == null || message.isEmpty() ? "" : ": " + message);
                }
                return "an identical earlier "
                        + t
                        + " call failed"
                        + why
                        + "; it was not run again";
            case INDETERMINATE:
                if (this instanceof IndeterminateOutcomeException
                        && ((IndeterminateOutcomeException) this).ranBody()) {
                    return t
                            + " ran and failed, so its outcome is unknown: it may or may not have"
                            + " taken effect (do not call it again before checking its effect)";
                }
                return "an identical earlier "
                        + t
                        + " call was interrupted and may or may not have taken effect; it was not"
                        + " run again (check its effect before asking for it again)";
            case PAYLOAD_MISMATCH:
                return "this "
                        + t
                        + " call repeats the key of an earlier call with other arguments; it was"
                        + " not run";
            case TIMEOUT:
                return t + " timed out; it may or may not have taken effect";
            case STORE_UNAVAILABLE:
                return t
                        + " could not run now (its idempotency store is unavailable); it was not run";
            case OUTCOME_TOO_LARGE:
                return t + " ran, but its result is too large to remember";
            case INVALID_KEY:
                return t
                        + " could not tell whether this call repeats an earlier one (no idempotency key"
                        + " from these arguments); it was not run";
            default:
                return t + " failed (an internal error)";
        }
    }
}
