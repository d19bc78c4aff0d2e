package dev.idemkit;

/**
 * Why a call did not produce a fresh result: idemkit refused it or could not decide safely. Nothing
 * was run unless the subclass says otherwise. {@link #kind()} is stable across languages.
 */
public class IdempotencyException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ErrorKind kind;
    private final String tool;
    private final String key;

    public IdempotencyException(ErrorKind kind, String message, String tool, String key) {
        super(message);
        this.kind = kind;
        this.tool = tool;
        this.key = key;
    }

    public IdempotencyException(
            ErrorKind kind, String message, String tool, String key, Throwable cause) {
        super(message, cause);
        this.kind = kind;
        this.tool = tool;
        this.key = key;
    }

    /** The stable kind (its code is the Rust core's). */
    public ErrorKind kind() {
        return kind;
    }

    /** The tool or action name, where known. */
    public String tool() {
        return tool;
    }

    /** The 64-hex key the error is about, where known. */
    public String key() {
        return key;
    }
}
