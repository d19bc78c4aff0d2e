package dev.idemkit;

/**
 * The tool ran and returned, but its result could not be written as JSON (SPEC v1.1 rule 6), so it
 * was not recorded. Unlike other {@link IdempotencyException}s, the body <em>did</em> run: the call
 * is settled as a failure of the body under the tool's policy (its claim released, so a retry runs
 * again; or, with {@code cacheFailures}, recorded as a failure of this type and message), never
 * left to become abandoned. The cause is the encoder's error.
 */
public class UnencodableResultException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    private final String resultType;

    public UnencodableResultException(
            String message, String tool, String key, String resultType, Throwable cause) {
        super(ErrorKind.INTERNAL, message, tool, key, cause);
        this.resultType = resultType;
    }

    /**
     * The class of the value that could not be written (and its declared type, when they differ).
     */
    public String resultType() {
        return resultType;
    }
}
