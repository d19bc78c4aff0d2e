package dev.idemkit;

/**
 * The key's claim was abandoned (its lease ended without an outcome), or an {@link
 * Effect#EFFECTFUL} failure is held: the effect may or may not have happened, so somebody has to
 * settle the key — {@link IdempotencyStore#releaseKey(String, String)} (the next call runs) or
 * {@link IdempotencyStore#resolveKey} (repeats get the result) in-process, or {@code idemkit
 * resolve} — or its record expires. Nothing was run.
 */
public class IndeterminateOutcomeException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    /**
     * idemkit raises it; public so that code which wraps or translates idemkit's errors can make
     * one.
     *
     * @param message what happened and, where there is one, the fix
     * @param tool the tool or action name, or {@code null}
     * @param key the 64-hex key, or {@code null}
     */
    public IndeterminateOutcomeException(String message, String tool, String key) {
        super(ErrorKind.INDETERMINATE, message, tool, key);
    }
}
