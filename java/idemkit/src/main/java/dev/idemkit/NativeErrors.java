package dev.idemkit;

/**
 * The one mapping from the core's error kinds to Java exceptions. Called from native code (the JNI
 * boundary builds every exception through {@link #create}), and by the binding itself.
 */
final class NativeErrors {
    private NativeErrors() {}

    static RuntimeException create(
            int code,
            String message,
            String tool,
            String key,
            String errorType,
            String errorMessage,
            boolean ranBody) {
        switch (ErrorKind.fromCode(code)) {
            case INVALID_KEY:
                return new InvalidKeyException(message, tool, key);
            case CONFIGURATION:
                return new IllegalArgumentException(message);
            case CACHED_FAILURE:
                return new CachedFailureException(message, tool, key, errorType, errorMessage);
            case FAIL_FAST:
                return new FailFastException(message, tool, key);
            case IN_PROGRESS:
                return new InProgressException(message, tool, key);
            case INDETERMINATE:
                return new IndeterminateOutcomeException(message, tool, key, ranBody);
            case STORE_UNAVAILABLE:
                return new StoreUnavailableException(message, tool, key);
            case OUTCOME_TOO_LARGE:
                return new OutcomeTooLargeException(message, tool, key);
            case TIMEOUT:
                return new IdempotencyTimeoutException(message, tool, key);
            case PAYLOAD_MISMATCH:
                return new PayloadMismatchException(message, tool, key);
            case INTERNAL:
            default:
                return new IdempotencyException(ErrorKind.INTERNAL, message, tool, key);
        }
    }
}
