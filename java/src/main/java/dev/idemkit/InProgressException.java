package dev.idemkit;

/**
 * The key was still in progress in another call when this call's deadline came (or it was
 * interrupted while waiting). Nothing was run.
 */
public class InProgressException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    public InProgressException(String message, String tool, String key) {
        super(ErrorKind.IN_PROGRESS, message, tool, key);
    }
}
