package dev.idemkit;

/**
 * The tool's {@code timeoutMs} passed while its body ran. The body ran to its end on the calling
 * thread (Java cannot stop it safely), and its outcome was recorded, so a retry gets the remembered
 * result instead of running again.
 */
public class IdempotencyTimeoutException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    public IdempotencyTimeoutException(String message, String tool, String key) {
        super(ErrorKind.TIMEOUT, message, tool, key);
    }
}
