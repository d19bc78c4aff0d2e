package dev.idemkit;

/** A repeat under {@code FAIL_FAST}: the key is remembered or in progress. Nothing was run. */
public class FailFastException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    public FailFastException(String message, String tool, String key) {
        super(ErrorKind.FAIL_FAST, message, tool, key);
    }
}
