package dev.idemkit;

import java.lang.annotation.Annotation;

/** Annotation instances built in code, so tests can register tools under any name and policy. */
final class Annotations {
    private Annotations() {}

    static Tool tool(String name) {
        return tool(name, IdempotencyHint.DEFAULT, 0);
    }

    static Tool tool(String name, IdempotencyHint hint, long timeoutMs) {
        return new Tool() {
            @Override
            public Class<? extends Annotation> annotationType() {
                return Tool.class;
            }

            @Override
            public String name() {
                return name;
            }

            @Override
            public String description() {
                return "";
            }

            @Override
            public IdempotencyHint idempotencyHint() {
                return hint;
            }

            @Override
            public long timeoutMs() {
                return timeoutMs;
            }
        };
    }

    static Idempotent idempotent(KeyStrategy strategy, String... keyArguments) {
        return idempotent(strategy, 3600, RetryBehavior.RETURN_CACHED, false, 300, keyArguments);
    }

    static Idempotent idempotent(
            KeyStrategy strategy,
            long ttl,
            RetryBehavior onCacheHit,
            boolean cacheFailures,
            long lease,
            String... keyArguments) {
        return new Idempotent() {
            @Override
            public Class<? extends Annotation> annotationType() {
                return Idempotent.class;
            }

            @Override
            public KeyStrategy strategy() {
                return strategy;
            }

            @Override
            public long ttlSeconds() {
                return ttl;
            }

            @Override
            public RetryBehavior onCacheHit() {
                return onCacheHit;
            }

            @Override
            public boolean cacheFailures() {
                return cacheFailures;
            }

            @Override
            public String[] keyArguments() {
                return keyArguments.clone();
            }

            @Override
            public long leaseSeconds() {
                return lease;
            }

            @Override
            public Effect effect() {
                return Effect.IDEMPOTENT;
            }

            @Override
            public Class<? extends Throwable>[] noEffect() {
                return none();
            }

            @Override
            public Class<? extends Throwable>[] permanent() {
                return none();
            }

            @Override
            public boolean rejectPayloadMismatch() {
                return false;
            }

            @SuppressWarnings("unchecked")
            private Class<? extends Throwable>[] none() {
                return (Class<? extends Throwable>[]) new Class<?>[0];
            }
        };
    }
}
