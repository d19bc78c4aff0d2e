package dev.idemkit;

/**
 * The call completed but its result was larger than the store keeps, so repeats cannot get it.
 * Nothing was run.
 */
public class OutcomeTooLargeException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    public OutcomeTooLargeException(String message, String tool, String key) {
        super(ErrorKind.OUTCOME_TOO_LARGE, message, tool, key);
    }
}
