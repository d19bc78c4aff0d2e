package dev.idemkit;

/**
 * The key's claim was abandoned (its lease ended without an outcome), or an {@link
 * Effect#EFFECTFUL} failure is held: the effect may or may not have happened, so somebody has to
 * settle the key — {@link IdempotencyStore#releaseKey(String, String)} (the next call runs) or
 * {@link IdempotencyStore#resolveKey} (repeats get the result) in-process, or {@code idemkit
 * resolve} — or its record expires. {@link #ranBody()} says whose body it was: this call's (it ran
 * just now and failed, the failure is its cause) or an earlier call's (nothing ran now).
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
        this(message, tool, key, false);
    }

    /** Whether this call ran the body: the core's answer, relayed. */
    private final boolean ranBody;

    /**
     * idemkit raises it; public so that code which wraps or translates idemkit's errors can make
     * one.
     *
     * @param message what happened and, where there is one, the fix
     * @param tool the tool or action name, or {@code null}
     * @param key the 64-hex key, or {@code null}
     * @param ranBody {@code true} if this call ran the body whose failure is held
     */
    public IndeterminateOutcomeException(String message, String tool, String key, boolean ranBody) {
        super(ErrorKind.INDETERMINATE, message, tool, key);
        this.ranBody = ranBody;
    }

    /**
     * Whether this call ran the body: {@code true} for the call whose {@code EFFECTFUL} body just
     * failed (its failure is held; its effect is unknown), {@code false} for a repeat that met the
     * record an earlier call left (held or abandoned) and ran nothing.
     *
     * @return whether this call ran the body
     */
    public boolean ranBody() {
        return ranBody;
    }
}
