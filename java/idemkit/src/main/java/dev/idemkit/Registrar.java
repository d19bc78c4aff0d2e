package dev.idemkit;

import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.annotation.Annotation;
import java.lang.ref.Cleaner;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Parameter;
import java.lang.reflect.Type;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What {@link ToolDispatcher} and {@link WebServiceExecutor} share: the store they call through,
 * the discovery of annotated methods, the policy of a method and its native tool, and the lifetime
 * of what they own (their native tools, and a store they created), freed once by {@link #close()}
 * after the last call in flight, or by a {@link Cleaner} as a safety net.
 */
final class Registrar {
    /**
     * The policy of a tool or action without an {@link Idempotent}: strategy NONE and the
     * annotation's defaults, but the core's TTL and lease (see {@link #nativeTool}).
     */
    @Idempotent(strategy = KeyStrategy.NONE)
    private static final class Unannotated {}

    private static final Idempotent DEFAULT_POLICY =
            Unannotated.class.getAnnotation(Idempotent.class);

    /** The native tools and the store a registrar owns; freed once. */
    private static final class Owned implements Runnable {
        private final NativeIdempotencyStore store;
        private final Runnable also;
        private final List<long[]> tools = new ArrayList<>();
        private final List<Runnable> onClose = new ArrayList<>();
        private boolean freed;

        Owned(NativeIdempotencyStore store, Runnable also) {
            this.store = store;
            this.also = also;
        }

        /**
         * Takes the tools over; after {@link #run()} it destroys them at once and answers false.
         */
        synchronized boolean adopt(long[] handles) {
            if (freed) {
                destroy(handles);
                return false;
            }
            tools.add(handles);
            return true;
        }

        @Override
        public synchronized void run() {
            if (freed) {
                return;
            }
            freed = true;
            for (long[] handles : tools) {
                destroy(handles);
            }
            tools.clear();
            for (Runnable r : onClose) {
                r.run();
            }
            onClose.clear();
            if (store != null) {
                store.close();
            }
            if (also != null) {
                also.run();
            }
        }
    }

    final NativeIdempotencyStore store;
    private final String what;
    private final Owned owned;
    private final NativeHandle lifetime;
    private final Cleaner.Cleanable cleanable;

    /**
     * @param given the user's store (theirs to close), or null for a new {@link
     *     InMemoryIdempotencyStore} owned here
     * @param what "the tool dispatcher", "the web-service executor": for messages
     * @param alsoOwned what else to free with the native tools (must not reach the registrar's
     *     owner), or null
     */
    Registrar(IdempotencyStore given, String what, Runnable alsoOwned) {
        NativeIdempotencyStore s;
        if (given == null) {
            s = new InMemoryIdempotencyStore();
        } else if (given instanceof NativeIdempotencyStore) {
            s = (NativeIdempotencyStore) given;
        } else {
            throw new IllegalArgumentException(
                    "store "
                            + given.getClass().getName()
                            + " is not run by the idemkit"
                            + " core; use InMemoryIdempotencyStore, RedisIdempotencyStore or PostgresIdempotencyStore, or"
                            + " implement dev.idemkit.spi.StoreOperations and wrap it with"
                            + " IdempotencyStore.of(operations)");
        }
        if (s.isClosed()) {
            throw new IllegalStateException("the store " + s.describe() + " is closed");
        }
        this.store = s;
        this.what = what;
        this.owned = new Owned(given == null ? s : null, alsoOwned);
        this.lifetime = new NativeHandle(owned, what);
        this.cleanable = NativeIdempotencyStore.CLEANER.register(this, lifetime);
    }

    /**
     * Counts a call in flight until {@link #exit()}; throws {@link IllegalStateException} once
     * closed.
     */
    void enter() {
        lifetime.acquire();
    }

    void exit() {
        lifetime.release();
    }

    /** Refuses work on a closed registrar or store. */
    void requireOpen() {
        if (lifetime.isClosed()) {
            throw new IllegalStateException(what + " is closed");
        }
        if (store.isClosed()) {
            throw new IllegalStateException("the store " + store.describe() + " is closed");
        }
    }

    /** Takes native tools over (destroyed on close); refuses, destroying them, once closed. */
    void adopt(long[] handles) {
        if (!owned.adopt(handles)) {
            throw new IllegalStateException(what + " is closed");
        }
    }

    boolean isClosed() {
        return lifetime.isClosed();
    }

    /** Atomic and idempotent; what is owned is freed after the last call in flight. */
    void close() {
        cleanable.clean();
    }

    /** Runs {@code r} when this registrar is closed (or becomes unreachable). */
    void onClose(Runnable r) {
        synchronized (owned) {
            owned.onClose.add(r);
        }
    }

    static void destroy(long[] handles) {
        for (long h : handles) {
            NativeBridge.toolDestroy(h);
        }
    }

    /**
     * The policy of a method: its own {@link Idempotent}, else its declaring class's, else the
     * target class's; null if none.
     */
    static Idempotent policy(Object target, Method method, Idempotent methodPolicy) {
        Idempotent policy = methodPolicy;
        if (policy == null) {
            policy = method.getDeclaringClass().getAnnotation(Idempotent.class);
        }
        if (policy == null) {
            policy = target.getClass().getAnnotation(Idempotent.class);
        }
        return policy;
    }

    /** The strategy a policy (or none) gives. */
    static KeyStrategy strategy(Idempotent policy) {
        return (policy == null ? DEFAULT_POLICY : policy).strategy();
    }

    /** The key supplier of an EXPLICIT policy: the target itself. */
    static IdempotencyKeySupplier supplier(String where, KeyStrategy strategy, Object target) {
        if (strategy != KeyStrategy.EXPLICIT) {
            return null;
        }
        if (!(target instanceof IdempotencyKeySupplier)) {
            throw new IllegalStateException(
                    where
                            + " uses strategy EXPLICIT but "
                            + target.getClass().getName()
                            + " does not implement IdempotencyKeySupplier; implement idempotencyKeyFor(input) on the"
                            + " class, or use HASH_INPUT");
        }
        return (IdempotencyKeySupplier) target;
    }

    /**
     * The key an EXPLICIT supplier gives for this input; null is refused (the core refuses a blank
     * one).
     */
    static String suppliedKey(
            String name, IdempotencyKeySupplier supplier, Map<String, Object> input) {
        String key = supplier.idempotencyKeyFor(Collections.unmodifiableMap(input));
        if (key == null) {
            throw new InvalidKeyException(
                    "invalid idempotency key for `"
                            + name
                            + "`: explicit key: the supplier"
                            + " returned null; supply a key with at least one visible character",
                    name,
                    null);
        }
        return key;
    }

    /**
     * Builds the native tool of a policy (null: strategy NONE with the core's default TTL and
     * lease); the core validates it.
     *
     * @param parameters what keyArguments may name, or null to skip that check
     * @param retry how failures are retried, or null for no retries
     */
    static IdempotentInvoker.NativeTool nativeTool(
            String name,
            Idempotent policy,
            long timeoutMs,
            String[] parameters,
            RetryPolicy retry) {
        return nativeTool(name, policy, timeoutMs, parameters, retry, false);
    }

    /**
     * {@link #nativeTool(String, Idempotent, long, String[], RetryPolicy)} for an action whose
     * upstream may honour the {@code Idempotency-Key} (SPEC v1.1 rule 12).
     */
    static IdempotentInvoker.NativeTool nativeTool(
            String name,
            Idempotent policy,
            long timeoutMs,
            String[] parameters,
            RetryPolicy retry,
            boolean upstreamHonorsKey) {
        Idempotent p = policy == null ? DEFAULT_POLICY : policy;
        long ttl = policy == null ? NativeBridge.DEFAULT_TTL_SECONDS : policy.ttlSeconds();
        long lease = policy == null ? NativeBridge.DEFAULT_LEASE_SECONDS : policy.leaseSeconds();
        long handle =
                NativeBridge.toolNew(
                        name,
                        p.strategy().name(),
                        ttl,
                        p.onCacheHit().name(),
                        p.cacheFailures(),
                        p.keyArguments(),
                        lease,
                        timeoutMs,
                        parameters,
                        p.effect().name(),
                        typeNames(p.noEffect()),
                        typeNames(p.permanent()),
                        retry == null ? null : retry.nativeNumbers(),
                        retry == null ? null : retry.nativeRetryOn(),
                        p.rejectPayloadMismatch(),
                        upstreamHonorsKey);
        return new IdempotentInvoker.NativeTool(name, p.strategy(), handle);
    }

    /**
     * An argument that does not convert to its parameter's type: names the parameter, the tool and
     * the type, with the converter's reason.
     */
    static InvalidToolInputException notConvertible(
            String parameter,
            String tool,
            com.fasterxml.jackson.databind.JavaType type,
            Exception reason) {
        return new InvalidToolInputException(
                "argument `"
                        + parameter
                        + "` of `"
                        + tool
                        + "` does not convert to "
                        + type.toCanonical()
                        + ": "
                        + reason.getMessage(),
                tool,
                parameter,
                reason);
    }

    private static String[] typeNames(Class<?>[] types) {
        String[] names = new String[types.length];
        for (int i = 0; i < types.length; i++) {
            names[i] = types[i].getName();
        }
        return names;
    }

    /**
     * Every type name an exception answers to, most specific first: its class, superclasses and
     * interfaces (fully qualified), for the core's classification by the policy's lists.
     */
    static String[] typeNamesOf(Throwable thrown) {
        java.util.LinkedHashSet<String> names = new java.util.LinkedHashSet<>();
        Deque<Class<?>> pending = new ArrayDeque<>();
        pending.add(thrown.getClass());
        while (!pending.isEmpty()) {
            Class<?> c = pending.removeFirst();
            if (c == Object.class || !names.add(c.getName())) {
                continue;
            }
            if (c.getSuperclass() != null) {
                pending.add(c.getSuperclass());
            }
            pending.addAll(java.util.Arrays.asList(c.getInterfaces()));
        }
        return names.toArray(new String[0]);
    }

    /**
     * The methods of a class, its superclasses and interfaces that carry {@code annotation}: for
     * each signature, the most derived declaration that carries it. An override that carries it
     * replaces its original (annotations and all); one that does not keeps its original's.
     */
    static List<Method> annotatedMethods(Class<?> type, Class<? extends Annotation> annotation) {
        Map<String, Method> found = new LinkedHashMap<>();
        Deque<Class<?>> pending = new ArrayDeque<>();
        Set<Class<?>> visited = new HashSet<>();
        pending.add(type);
        while (!pending.isEmpty()) {
            Class<?> c = pending.removeFirst();
            if (c == Object.class || !visited.add(c)) {
                continue;
            }
            for (Method m : c.getDeclaredMethods()) {
                if (m.isBridge()
                        || m.isSynthetic()
                        || Modifier.isStatic(m.getModifiers())
                        || !m.isAnnotationPresent(annotation)) {
                    continue;
                }
                found.putIfAbsent(m.getName() + Arrays.toString(m.getParameterTypes()), m);
            }
            if (c.getSuperclass() != null) {
                pending.add(c.getSuperclass());
            }
            Collections.addAll(pending, c.getInterfaces());
        }
        return new ArrayList<>(found.values());
    }

    /**
     * The input member a parameter reads: its {@link ToolParam} name, else (compiled with {@code
     * -parameters}) its own.
     */
    static String parameterName(String where, Parameter p, int index) {
        ToolParam named = p.getAnnotation(ToolParam.class);
        if (named != null && !named.name().isEmpty()) {
            return named.name();
        }
        if (!p.isNamePresent()) {
            throw new IllegalStateException(
                    where
                            + ": the name of parameter "
                            + index
                            + " is not known; compile"
                            + " with -parameters or annotate it with @ToolParam(name = ...)");
        }
        return p.getName();
    }

    /**
     * The declared types of a method's parameters, generics included, as {@code mapper} reads them.
     */
    static JavaType[] parameterTypes(ObjectMapper mapper, Method method) {
        Parameter[] declared = method.getParameters();
        Type[] generic = method.getGenericParameterTypes();
        JavaType[] types = new JavaType[declared.length];
        for (int i = 0; i < declared.length; i++) {
            // The generic signature can count fewer parameters (synthetic or mandated ones): then
            // each its own.
            types[i] =
                    mapper.getTypeFactory()
                            .constructType(
                                    generic.length == declared.length
                                            ? generic[i]
                                            : declared[i].getParameterizedType());
        }
        return types;
    }

    /** Tenant and run are key material: a lone surrogate is refused when they are set. */
    static String checkText(String field, String value) {
        if (value == null) {
            return null;
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (Character.isHighSurrogate(c)
                    && i + 1 < value.length()
                    && Character.isLowSurrogate(value.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException(
                        field
                                + " contains a lone surrogate \\u"
                                + Integer.toHexString(c)
                                + " at index "
                                + i
                                + "; use whole characters");
            }
        }
        return value;
    }
}
