package dev.idemkit;

/**
 * The key was still in progress in another call when this call's deadline came (or it was
 * interrupted while waiting). Nothing was run.
 */
public class InProgressException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    /**
     * idemkit raises it; public so that code which wraps or translates idemkit's errors can make
     * one.
     *
     * @param message what happened and, where there is one, the fix
     * @param tool the tool or action name, or {@code null}
     * @param key the 64-hex key, or {@code null}
     */
    public InProgressException(String message, String tool, String key) {
        super(ErrorKind.IN_PROGRESS, message, tool, key);
    }
}
