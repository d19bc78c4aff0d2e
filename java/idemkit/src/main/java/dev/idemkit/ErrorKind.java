package dev.idemkit;

/**
 * The stable kind of an {@link IdempotencyException}; the codes are those of the Rust core and the
 * C ABI.
 */
public enum ErrorKind {
    /**
     * The key could not be derived from the input or the supplied key: {@link InvalidKeyException}.
     */
    INVALID_KEY(1),
    /**
     * A policy, tool or store setting was refused; Java reports it as {@link
     * IllegalArgumentException} or {@link IllegalStateException} when registering or opening.
     */
    CONFIGURATION(2),
    /** A repeat of a remembered failure: {@link CachedFailureException}. */
    CACHED_FAILURE(3),
    /** A repeat under {@link RetryBehavior#FAIL_FAST}: {@link FailFastException}. */
    FAIL_FAST(4),
    /**
     * The key was still claimed by another call at the deadline, or the wait was interrupted:
     * {@link InProgressException}.
     */
    IN_PROGRESS(5),
    /**
     * The key's claim was abandoned, so the effect may or may not have happened: {@link
     * IndeterminateOutcomeException}.
     */
    INDETERMINATE(6),
    /** The store could not be reached or answered an error: {@link StoreUnavailableException}. */
    STORE_UNAVAILABLE(7),
    /** The outcome was larger than the store keeps: {@link OutcomeTooLargeException}. */
    OUTCOME_TOO_LARGE(8),
    /**
     * A body returned after its deadline, or an exchange was cut at it: {@link
     * IdempotencyTimeoutException}.
     */
    TIMEOUT(9),
    /**
     * A bug in idemkit (including a panic caught at the JNI boundary), or an unencodable result.
     */
    INTERNAL(10),
    /**
     * A repeat of a key with another payload than the call that made its record (SPEC v1.1 rule 9;
     * HTTP's 422): {@link PayloadMismatchException}. Nothing ran.
     */
    PAYLOAD_MISMATCH(11);

    private final int code;

    ErrorKind(int code) {
        this.code = code;
    }

    /**
     * The stable numeric code.
     *
     * @return the code, the same in the Rust core ({@code idemkit::ErrorKind}) and the C ABI
     */
    public int code() {
        return code;
    }

    /**
     * The kind with this code; {@link #INTERNAL} for an unknown one.
     *
     * @param code a code from {@link #code()}, the Rust core or the C ABI
     * @return its kind
     */
    public static ErrorKind fromCode(int code) {
        for (ErrorKind kind : values()) {
            if (kind.code == code) {
                return kind;
            }
        }
        return INTERNAL;
    }
}
