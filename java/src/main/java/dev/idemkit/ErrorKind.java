package dev.idemkit;

/**
 * The stable kind of an {@link IdempotencyException}; the codes are those of the Rust core and the
 * C ABI.
 */
public enum ErrorKind {
    INVALID_KEY(1),
    CONFIGURATION(2),
    CACHED_FAILURE(3),
    FAIL_FAST(4),
    IN_PROGRESS(5),
    INDETERMINATE(6),
    STORE_UNAVAILABLE(7),
    OUTCOME_TOO_LARGE(8),
    TIMEOUT(9),
    INTERNAL(10);

    private final int code;

    ErrorKind(int code) {
        this.code = code;
    }

    /** The stable numeric code. */
    public int code() {
        return code;
    }

    /** The kind with this code; {@link #INTERNAL} for an unknown one. */
    public static ErrorKind fromCode(int code) {
        for (ErrorKind kind : values()) {
            if (kind.code == code) {
                return kind;
            }
        }
        return INTERNAL;
    }
}
