package dev.idemkit;

/**
 * The key could not be derived from the input (not JSON-native, lone surrogate, blank explicit key,
 * missing key argument, ...). Nothing was run.
 */
public class InvalidKeyException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    /**
     * idemkit raises it; public so that code which wraps or translates idemkit's errors can make
     * one.
     *
     * @param message what happened and, where there is one, the fix
     * @param tool the tool or action name, or {@code null}
     * @param key the 64-hex key, or {@code null}
     */
    public InvalidKeyException(String message, String tool, String key) {
        super(ErrorKind.INVALID_KEY, message, tool, key);
    }
}
