package dev.idemkit;

/**
 * A repeat of a call whose remembered outcome is a failure ({@code RETURN_CACHED} with {@code
 * cacheFailures}): carries the original exception's class name and message. Nothing was run.
 */
public class CachedFailureException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    /** The class name of the exception the first call threw. */
    private final String originalType;

    /** That exception's message, or {@code null}. */
    private final String originalMessage;

    /**
     * idemkit raises it; public so that code which wraps or translates idemkit's errors can make
     * one.
     *
     * @param message what happened and, where there is one, the fix
     * @param tool the tool or action name, or {@code null}
     * @param key the 64-hex key, or {@code null}
     * @param originalType the class name of the exception the first call threw
     * @param originalMessage that exception's message
     */
    public CachedFailureException(
            String message, String tool, String key, String originalType, String originalMessage) {
        super(ErrorKind.CACHED_FAILURE, message, tool, key);
        this.originalType = originalType;
        this.originalMessage = originalMessage;
    }

    /**
     * The class name of the exception the first call threw (e.g. {@code java.io.IOException}).
     *
     * @return the fully qualified class name
     */
    public String originalType() {
        return originalType;
    }

    /**
     * Its message.
     *
     * @return the message the first call's exception had, or {@code null}
     */
    public String originalMessage() {
        return originalMessage;
    }
}
