package dev.idemkit;

/**
 * The store could not be reached or answered an error; never read as permission. Nothing was run.
 */
public class StoreUnavailableException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    /**
     * idemkit raises it; public so that code which wraps or translates idemkit's errors can make
     * one.
     *
     * @param message what happened and, where there is one, the fix
     * @param tool the tool or action name, or {@code null}
     * @param key the 64-hex key, or {@code null}
     */
    public StoreUnavailableException(String message, String tool, String key) {
        super(ErrorKind.STORE_UNAVAILABLE, message, tool, key);
    }
}
