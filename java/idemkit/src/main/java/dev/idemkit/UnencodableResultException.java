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

    /** The class of the value that could not be written. */
    private final String resultType;

    /**
     * idemkit raises it; public so that code which wraps or translates idemkit's errors can make
     * one.
     *
     * @param message what happened and, where there is one, the fix
     * @param tool the tool or action name, or {@code null}
     * @param key the 64-hex key, or {@code null}
     * @param resultType the class of the value (and its declared type, when they differ)
     * @param cause the encoder's error
     */
    public UnencodableResultException(
            String message, String tool, String key, String resultType, Throwable cause) {
        super(ErrorKind.INTERNAL, message, tool, key, cause);
        this.resultType = resultType;
    }

    /**
     * The class of the value that could not be written (and its declared type, when they differ).
     *
     * @return the type, as text
     */
    public String resultType() {
        return resultType;
    }
}
