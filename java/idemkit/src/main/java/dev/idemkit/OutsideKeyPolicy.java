package dev.idemkit;

import java.lang.reflect.Proxy;

/**
 * The policy of calls whose key comes from outside the application (SPEC v1.2 §9 rule 1): the
 * operation's own policy keyed {@code EXPLICIT} by the caller's key, with the payload always
 * checked. The JNI face carries a key's origin as {@code rejectPayloadMismatch}: for {@code
 * EXPLICIT} it is the one thing the core's origin decides ({@code Policy::checks_payload}).
 */
final class OutsideKeyPolicy {
    @Idempotent
    private static final class Defaults {}

    private static final Idempotent DEFAULTS = Defaults.class.getAnnotation(Idempotent.class);

    private OutsideKeyPolicy() {}

    /** {@code policy} (null: the defaults) keyed by an outside key. */
    static Idempotent of(Idempotent policy) {
        Idempotent base = policy == null ? DEFAULTS : policy;
        return (Idempotent)
                Proxy.newProxyInstance(
                        Idempotent.class.getClassLoader(),
                        new Class<?>[] {Idempotent.class},
                        (proxy, method, args) -> {
                            switch (method.getName()) {
                                case "strategy":
                                    return KeyStrategy.EXPLICIT;
                                case "rejectPayloadMismatch":
                                    return true;
                                case "keyArguments":
                                    return new String[0];
                                case "hashCode":
                                    return System.identityHashCode(proxy);
                                case "equals":
                                    return proxy == args[0];
                                case "toString":
                                    return "outside key over " + base;
                                default:
                                    return method.invoke(base, args);
                            }
                        });
    }
}
