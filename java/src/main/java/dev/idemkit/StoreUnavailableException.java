package dev.idemkit;

/**
 * The store could not be reached or answered an error; never read as permission. Nothing was run.
 */
public class StoreUnavailableException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    public StoreUnavailableException(String message, String tool, String key) {
        super(ErrorKind.STORE_UNAVAILABLE, message, tool, key);
    }
}
