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
    /** How the key is derived. */
    KeyStrategy strategy() default KeyStrategy.HASH_INPUT;

    /** How long a record is kept after its outcome (or after its lease); must be positive. */
    long ttlSeconds() default 3600;

    /** What a repeat of a remembered call gets. */
    RetryBehavior onCacheHit() default RetryBehavior.RETURN_CACHED;

    /** Whether failed calls are remembered too. */
    boolean cacheFailures() default false;

    /** For {@code HASH_INPUT}: the parameter names that identify the effect; empty = all. */
    String[] keyArguments() default {};

    /** How long an in-progress claim holds before its owner is presumed dead; must be positive. */
    long leaseSeconds() default 300;
}
