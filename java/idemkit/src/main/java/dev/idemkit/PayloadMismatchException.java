package dev.idemkit;

/**
 * A repeat of a key whose record was made by a call with another payload: the fingerprints of the
 * two inputs differ (SPEC v1.1 rule 9; HTTP's 422 Unprocessable Content). Nothing was run and the
 * record is unchanged; a new request needs a new key. Raised for {@code EXPLICIT} keys and for
 * {@code HASH_INPUT} with {@code keyArguments} when {@link Idempotent#rejectPayloadMismatch()} is
 * set (SPEC v1.2 §9 rule 1).
 */
public class PayloadMismatchException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    /**
     * idemkit raises it; public so that code which wraps or translates idemkit's errors can make
     * one.
     *
     * @param message what happened and the fix
     * @param tool the tool or action name, or {@code null}
     * @param key the 64-hex key, or {@code null}
     */
    public PayloadMismatchException(String message, String tool, String key) {
        super(ErrorKind.PAYLOAD_MISMATCH, message, tool, key);
    }
}
