package dev.idemkit;

/**
 * The call completed but its result was larger than the store keeps, so repeats cannot get it.
 * Nothing was run.
 */
public class OutcomeTooLargeException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    /**
     * idemkit raises it; public so that code which wraps or translates idemkit's errors can make
     * one.
     *
     * @param message what happened and, where there is one, the fix
     * @param tool the tool or action name, or {@code null}
     * @param key the 64-hex key, or {@code null}
     */
    public OutcomeTooLargeException(String message, String tool, String key) {
        super(ErrorKind.OUTCOME_TOO_LARGE, message, tool, key);
    }
}
