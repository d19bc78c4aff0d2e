package dev.idemkit;

/** A repeat under {@code FAIL_FAST}: the key is remembered or in progress. Nothing was run. */
public class FailFastException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    /**
     * idemkit raises it; public so that code which wraps or translates idemkit's errors can make
     * one.
     *
     * @param message what happened and, where there is one, the fix
     * @param tool the tool or action name, or {@code null}
     * @param key the 64-hex key, or {@code null}
     */
    public FailFastException(String message, String tool, String key) {
        super(ErrorKind.FAIL_FAST, message, tool, key);
    }
}
