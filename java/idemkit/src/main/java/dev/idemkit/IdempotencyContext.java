package dev.idemkit;

import java.util.Optional;

/**
 * What a running tool body may know about its own call: the key (to pass on as an {@code
 * Idempotency-Key}, or to log), the tenant and run. A tool parameter of this type is filled in by
 * the dispatcher and is not part of the input; {@link #current()} finds it from anywhere in the
 * body. Nested tool calls get their own context and the outer one is restored after them.
 */
public final class IdempotencyContext {
    private static final ThreadLocal<IdempotencyContext> CURRENT = new ThreadLocal<>();

    private final String tool;
    private final String key;
    private final String suppliedKey;
    private final String tenant;
    private final String run;
    private final KeyStrategy strategy;
    private IdempotencyContext outer;

    IdempotencyContext(
            String tool,
            String key,
            String suppliedKey,
            String tenant,
            String run,
            KeyStrategy strategy) {
        this.tool = tool;
        this.key = key;
        this.suppliedKey = suppliedKey;
        this.tenant = tenant;
        this.run = run;
        this.strategy = strategy;
    }

    /**
     * The call's key: the 64-hex key ({@code HASH_INPUT}, {@code EXPLICIT}), the fresh UUID ({@code
     * UUID}), or null ({@code NONE}).
     *
     * @return the key, or {@code null} for {@code NONE}
     */
    public String key() {
        return key;
    }

    /**
     * For {@code EXPLICIT}: the supplier's raw key; otherwise null.
     *
     * @return what {@link IdempotencyKeySupplier#idempotencyKeyFor} returned, or {@code null}
     */
    public String suppliedKey() {
        return suppliedKey;
    }

    /**
     * The tenant the call runs for, or null.
     *
     * @return the tenant, or {@code null}
     */
    public String tenant() {
        return tenant;
    }

    /**
     * The run the call belongs to, or null.
     *
     * @return the run, or {@code null}
     */
    public String run() {
        return run;
    }

    /**
     * The tool's name (the key's scope).
     *
     * @return the tool or action name
     */
    public String tool() {
        return tool;
    }

    /**
     * How the call's key was made.
     *
     * @return the tool's {@link Idempotent#strategy()}
     */
    public KeyStrategy strategy() {
        return strategy;
    }

    /**
     * The context of the tool body running on this thread, if any.
     *
     * @return the innermost running call's context, or empty outside a tool body
     */
    public static Optional<IdempotencyContext> current() {
        return Optional.ofNullable(CURRENT.get());
    }

    /** Makes this the current context until {@link #exit()}. */
    void enter() {
        outer = CURRENT.get();
        CURRENT.set(this);
    }

    void exit() {
        if (outer == null) {
            CURRENT.remove();
        } else {
            CURRENT.set(outer);
        }
        outer = null;
    }

    @Override
    public String toString() {
        return "IdempotencyContext[tool="
                + tool
                + ", key="
                + key
                + ", tenant="
                + tenant
                + ", run="
                + run
                + "]";
    }
}
