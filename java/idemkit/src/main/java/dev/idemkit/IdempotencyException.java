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
}
