package dev.idemkit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * The idempotency policy of a tool (SPEC §1). On a method, or on its class for every tool method of
 * the class; a method's annotation replaces the class's entirely (members are not merged). A tool
 * with neither has strategy {@link KeyStrategy#NONE}.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.METHOD, ElementType.TYPE})
public @interface Idempotent {
    /**
     * How the key is derived.
     *
     * @return the strategy; default {@link KeyStrategy#HASH_INPUT}
     */
    KeyStrategy strategy() default KeyStrategy.HASH_INPUT;

    /**
     * How long a record is kept after its outcome (or after its lease); must be positive.
     *
     * @return the time to live in seconds; default the core's, one hour
     */
    long ttlSeconds() default PolicyDefaults.TTL_SECONDS;

    /**
     * What a repeat of a remembered call gets.
     *
     * @return the behaviour; default {@link RetryBehavior#RETURN_CACHED}
     */
    RetryBehavior onCacheHit() default RetryBehavior.RETURN_CACHED;

    /**
     * Whether failed calls are remembered too.
     *
     * @return {@code true} to record failures; default {@code false} (a failure is released, so a
     *     retry runs again)
     */
    boolean cacheFailures() default false;

    /**
     * For {@code HASH_INPUT}: the parameter names that identify the effect; empty = all.
     *
     * @return the names; default empty
     */
    String[] keyArguments() default {};

    /**
     * How long an in-progress claim holds before its owner is presumed dead; must be positive.
     *
     * @return the lease in seconds; default the core's, 300
     */
    long leaseSeconds() default PolicyDefaults.LEASE_SECONDS;

    /**
     * What the body does to the world, which decides what its failure means (SPEC v1.1 rule 7):
     * {@link Effect#READ_ONLY} claims nothing, {@link Effect#IDEMPOTENT} (the default) releases a
     * failure, {@link Effect#EFFECTFUL} holds it as an indeterminate outcome.
     *
     * @return the effect kind
     */
    Effect effect() default Effect.IDEMPOTENT;

    /**
     * Exception types (and their subtypes) whose failures are known to have had no effect: the
     * claim is released and a retry runs, whatever the {@link #effect()}. First in the
     * classification.
     *
     * @return exception types
     */
    Class<? extends Throwable>[] noEffect() default {};

    /**
     * Exception types (and their subtypes) whose failures are permanent: recorded as failures and
     * replayed under {@code RETURN_CACHED}, never retried. Second in the classification, after
     * {@link #noEffect()}.
     *
     * @return exception types
     */
    Class<? extends Throwable>[] permanent() default {};

    /**
     * For {@code EXPLICIT} and {@code HASH_INPUT} with {@link #keyArguments()}: refuse a repeat
     * whose whole input differs from the recorded call's with {@link PayloadMismatchException}
     * (SPEC v1.2 §9 rule 1). Off by default: such a key names the fields that are the identity, so
     * the others may differ (a request id fresh per attempt, an edited body under the same title).
     * Plain {@code HASH_INPUT} keys on the whole input and cannot mismatch; the fingerprint is
     * stored either way.
     *
     * @return whether a differing payload is refused
     */
    boolean rejectPayloadMismatch() default false;
}
