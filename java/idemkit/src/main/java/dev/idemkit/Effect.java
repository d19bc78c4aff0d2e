package dev.idemkit;

/**
 * What a tool's body does to the world, which decides what its failure means (SPEC v1.1 rule 7).
 * The core decides every consequence; this names the kind.
 */
public enum Effect {
    /**
     * Reads only: nothing is claimed or recorded, every call runs, and a failure may be retried.
     */
    READ_ONLY,
    /**
     * The default (v1): claimed and deduplicated; a failure is released so the next call runs (or
     * recorded with {@link Idempotent#cacheFailures}), and may be retried.
     */
    IDEMPOTENT,
    /**
     * Acts, and a failure may have acted anyway (a timeout after a payment request left): claimed
     * and deduplicated; a failure is <em>held</em> as an indeterminate outcome. The caller gets
     * {@link IndeterminateOutcomeException} with the body's exception as its cause, and every
     * repeat gets it too until an operator resolves the record. Never retried.
     */
    EFFECTFUL
}
