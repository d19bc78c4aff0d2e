package dev.idemkit;

/**
 * The key's claim was abandoned (its lease ended without an outcome): the effect may or may not
 * have happened, so an operator has to resolve the record. Nothing was run.
 */
public class IndeterminateOutcomeException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    public IndeterminateOutcomeException(String message, String tool, String key) {
        super(ErrorKind.INDETERMINATE, message, tool, key);
    }
}
