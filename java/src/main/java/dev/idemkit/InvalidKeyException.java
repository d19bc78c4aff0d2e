package dev.idemkit;

/**
 * The key could not be derived from the input (not JSON-native, lone surrogate, blank explicit key,
 * missing key argument, ...). Nothing was run.
 */
public class InvalidKeyException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    public InvalidKeyException(String message, String tool, String key) {
        super(ErrorKind.INVALID_KEY, message, tool, key);
    }
}
