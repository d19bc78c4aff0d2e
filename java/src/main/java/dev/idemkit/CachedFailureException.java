package dev.idemkit;

/**
 * A repeat of a call whose remembered outcome is a failure ({@code RETURN_CACHED} with {@code
 * cacheFailures}): carries the original exception's class name and message. Nothing was run.
 */
public class CachedFailureException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    private final String originalType;
    private final String originalMessage;

    public CachedFailureException(
            String message, String tool, String key, String originalType, String originalMessage) {
        super(ErrorKind.CACHED_FAILURE, message, tool, key);
        this.originalType = originalType;
        this.originalMessage = originalMessage;
    }

    /** The class name of the exception the first call threw (e.g. {@code java.io.IOException}). */
    public String originalType() {
        return originalType;
    }

    /** Its message. */
    public String originalMessage() {
        return originalMessage;
    }
}
