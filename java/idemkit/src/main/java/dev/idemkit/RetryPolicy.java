package dev.idemkit;

import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;

/**
 * How a dispatcher retries failed tool calls (SPEC v1.1 rule 8): up to {@link #maxAttempts()} runs
 * in all, with a pause that doubles from {@link #initialBackoff()} up to {@link #maxBackoff()} and
 * is drawn between half of it and all of it, under the same key and within the tool's one deadline.
 *
 * <p>The core decides which failures are retried: only failures whose claim is released ({@link
 * Effect#READ_ONLY} and {@link Effect#IDEMPOTENT} tools, and exceptions listed in {@link
 * Idempotent#noEffect()}), and only exceptions of the types given to {@link #retryOn} when any are.
 * Held ({@link Effect#EFFECTFUL}) and recorded failures are never retried. Immutable and
 * thread-safe.
 */
public final class RetryPolicy {
    private final int maxAttempts;
    private final Duration initialBackoff;
    private final Duration maxBackoff;
    private final Class<?>[] retryOn;

    private RetryPolicy(
            int maxAttempts, Duration initialBackoff, Duration maxBackoff, Class<?>[] retryOn) {
        this.maxAttempts = maxAttempts;
        this.initialBackoff = initialBackoff;
        this.maxBackoff = maxBackoff;
        this.retryOn = retryOn;
    }

    /**
     * Up to {@code maxAttempts} runs in all (1: no retry), pausing 100 ms doubling to 2 s.
     *
     * @param maxAttempts runs in all, the first included; at least 1 (checked when a dispatcher is
     *     built)
     * @return the policy
     */
    public static RetryPolicy attempts(int maxAttempts) {
        return new RetryPolicy(
                maxAttempts, Duration.ofMillis(100), Duration.ofSeconds(2), new Class<?>[0]);
    }

    /**
     * The same policy with other pauses.
     *
     * @param initial the pause before the first retry
     * @param max the longest pause; not shorter than {@code initial}
     * @return a new policy
     */
    public RetryPolicy withBackoff(Duration initial, Duration max) {
        return new RetryPolicy(
                maxAttempts,
                Objects.requireNonNull(initial, "initial"),
                Objects.requireNonNull(max, "max"),
                retryOn);
    }

    /**
     * The same policy retrying only exceptions of these types (or their subtypes).
     *
     * @param types exception types
     * @return a new policy
     */
    @SafeVarargs
    public final RetryPolicy retryOn(Class<? extends Throwable>... types) {
        return new RetryPolicy(maxAttempts, initialBackoff, maxBackoff, types.clone());
    }

    /**
     * Runs in all, the first included.
     *
     * @return the number of runs
     */
    public int maxAttempts() {
        return maxAttempts;
    }

    /**
     * The pause before the first retry.
     *
     * @return the pause
     */
    public Duration initialBackoff() {
        return initialBackoff;
    }

    /**
     * The longest pause.
     *
     * @return the pause
     */
    public Duration maxBackoff() {
        return maxBackoff;
    }

    /** The policy as the native tool takes it: attempts, initial and longest pause in ms. */
    long[] nativeNumbers() {
        return new long[] {maxAttempts, initialBackoff.toMillis(), maxBackoff.toMillis()};
    }

    /** The retried types' names, matched by the core against a failure's type names. */
    String[] nativeRetryOn() {
        return Arrays.stream(retryOn).map(Class::getName).toArray(String[]::new);
    }

    @Override
    public String toString() {
        return "RetryPolicy[maxAttempts="
                + maxAttempts
                + ", initialBackoff="
                + initialBackoff
                + ", maxBackoff="
                + maxBackoff
                + ", retryOn="
                + Arrays.toString(nativeRetryOn())
                + "]";
    }
}
