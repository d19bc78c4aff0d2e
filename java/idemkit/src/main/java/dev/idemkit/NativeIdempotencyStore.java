package dev.idemkit;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A store run by the native core, opened by URL. {@link #close()} is atomic and idempotent and
 * waits for no one: the native store is freed when the last in-flight call has let go of it. A
 * {@link Cleaner} closes a store that was never closed, as a safety net only.
 *
 * <p>Thread-safe, as every {@link IdempotencyStore}: any number of threads may use one store, and
 * {@link #close()} may race with them.
 */
public abstract class NativeIdempotencyStore implements IdempotencyStore {
    static final Cleaner CLEANER = Cleaner.create();
    private static final String[] EVENTS = {
        "acquired",
        "deduplicated",
        "waited",
        "wait_timed_out",
        "failed_fast",
        "indeterminate",
        "released",
        "store_error",
        "record_failed",
        "retried",
        "payload_mismatch"
    };
    private static final System.Logger LOG = System.getLogger("dev.idemkit");

    private final java.util.List<IdempotencyListener> listeners =
            new java.util.concurrent.CopyOnWriteArrayList<>();

    final NativeHandle handle;
    private final Cleaner.Cleanable cleanable;
    private final String description;

    NativeIdempotencyStore(String url, String keyPrefix, String table, boolean allowEvicting) {
        long h;
        try {
            h = NativeBridge.storeOpen(url, keyPrefix, table, allowEvicting, 0);
        } finally {
            // What the core warned while opening (a table without its migration, an evicting
            // Redis opened anyway), and why it refused.
            NativeLog.drain();
        }
        String described = NativeBridge.storeDescribe(h);
        this.description = described;
        this.handle =
                new NativeHandle(
                        h, NativeBridge::storeDestroy, "the idempotency store " + described);
        this.cleanable = CLEANER.register(this, handle);
    }

    /**
     * A store whose operations are written in Java, driven by the native executor through upcalls
     * (see {@link dev.idemkit.spi.StoreOperations}).
     */
    /**
     * A store written in Java (see {@link IdempotencyStore#of}), for subclasses in other packages
     * of this library ({@code dev.idemkit.jedis}).
     *
     * @param operations the store operations the core drives
     */
    protected NativeIdempotencyStore(dev.idemkit.spi.StoreOperations operations) {
        java.util.Objects.requireNonNull(operations, "operations");
        String described = java.util.Objects.requireNonNull(operations.describe(), "describe()");
        long h;
        try {
            h =
                    NativeBridge.storeOpenJava(
                            new StoreBridge(operations), described, operations.maxOutcomeBytes());
        } finally {
            NativeLog.drain();
        }
        this.description = described;
        this.handle =
                new NativeHandle(
                        h, NativeBridge::storeDestroy, "the idempotency store " + described);
        this.cleanable = CLEANER.register(this, handle);
    }

    /** Whether records live only in this process (a warning is logged for REQUIRED tools on it). */
    boolean inProcessOnly() {
        return false;
    }

    @Override
    public long forget(String tenant) {
        long h = handle.acquire();
        try {
            return NativeBridge.storeForget(h, tenant);
        } finally {
            handle.release();
            Reference.reachabilityFence(this);
            NativeLog.drain();
        }
    }

    @Override
    public boolean releaseKey(String tenant, String key, boolean force) {
        return settleKey(tenant, key, null, 0, force);
    }

    @Override
    public boolean resolveKey(String tenant, String key, String resultJson, long ttlSeconds) {
        java.util.Objects.requireNonNull(resultJson, "resultJson");
        return settleKey(tenant, key, resultJson, ttlSeconds, false);
    }

    private boolean settleKey(
            String tenant, String key, String resultJson, long ttlSeconds, boolean force) {
        java.util.Objects.requireNonNull(key, "key");
        long h = handle.acquire();
        try {
            return NativeBridge.storeSettleKey(h, tenant, key, resultJson, ttlSeconds, force);
        } finally {
            handle.release();
            Reference.reachabilityFence(this);
            NativeLog.drain();
        }
    }

    @Override
    public long purgeExpired() {
        long h = handle.acquire();
        try {
            return NativeBridge.storePurgeExpired(h);
        } finally {
            handle.release();
            Reference.reachabilityFence(this);
            NativeLog.drain();
        }
    }

    @Override
    public String describe() {
        return description;
    }

    @Override
    public void addListener(IdempotencyListener listener) {
        java.util.Objects.requireNonNull(listener, "listener");
        long h = handle.acquire();
        try {
            NativeBridge.storeListen(h);
            listeners.add(listener);
        } finally {
            handle.release();
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public boolean removeListener(IdempotencyListener listener) {
        return listeners.remove(listener);
    }

    /**
     * Hands the events waiting in the core to the listeners, on this thread; a listener that throws
     * is logged. Logs the native core's log lines first ({@link NativeLog}). Called after each
     * native step of a call; the events part is a no-op without listeners.
     */
    void deliverEvents() {
        NativeLog.drain();
        if (listeners.isEmpty()) {
            return;
        }
        String[] fields;
        long h = handle.acquire();
        try {
            fields = NativeBridge.storeDrainEvents(h);
        } finally {
            handle.release();
            Reference.reachabilityFence(this);
        }
        if (fields == null) {
            return;
        }
        for (int i = 0; i + 4 < fields.length; i += 5) {
            IdempotencyEvent event =
                    new IdempotencyEvent(
                            IdempotencyEvent.Kind.of(fields[i]),
                            fields[i + 1],
                            fields[i + 2],
                            fields[i + 3],
                            fields[i + 4]);
            for (IdempotencyListener listener : listeners) {
                notify(listener, event);
            }
        }
    }

    /** Calls one listener; one that throws is logged, and the others and the call go on. */
    static void notify(IdempotencyListener listener, IdempotencyEvent event) {
        try {
            listener.onEvent(event);
        } catch (RuntimeException | LinkageError | AssertionError thrown) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "idemkit: an event listener threw on " + event + "; the call goes on",
                    thrown);
        }
    }

    /**
     * One store listener for a builder's own listeners: the events of the tools {@code owns}
     * accepts, and {@link IdempotencyEvent.Kind#DROPPED} (which names no tool: the listeners would
     * otherwise miss that events were lost), each listener called on its own.
     */
    static IdempotencyListener scoped(
            java.util.function.Predicate<String> owns, java.util.List<IdempotencyListener> own) {
        java.util.List<IdempotencyListener> copy = java.util.List.copyOf(own);
        return event -> {
            boolean ours =
                    event.kind() == IdempotencyEvent.Kind.DROPPED
                            || (event.tool() != null && owns.test(event.tool()));
            if (ours) {
                for (IdempotencyListener l : copy) {
                    notify(l, event);
                }
            }
        };
    }

    @Override
    public Map<String, Long> eventCounts() {
        long h = handle.acquire();
        try {
            long[] counts = NativeBridge.storeEventCounts(h);
            Map<String, Long> out = new LinkedHashMap<>();
            for (int i = 0; i < EVENTS.length && i < counts.length; i++) {
                out.put(EVENTS[i], counts[i]);
            }
            return out;
        } finally {
            handle.release();
            Reference.reachabilityFence(this);
        }
    }

    /**
     * The native store's handle, for passing to Rust code in the same process through a native
     * method of your own (whose library depends on the {@code idemkit-jni} crate and calls its
     * {@code executor_of}; see "Sharing a store with Rust code in the same process" in the README).
     *
     * <p>The value is valid only while this store is open: keep the store reachable and do not
     * close it until that native method has returned, for example {@code try {
     * myNative(store.nativeHandle()); } finally { Reference.reachabilityFence(store); }}. What Rust
     * makes of it (an executor holding its own reference) stays valid after that. It is not
     * meaningful in another process or to another copy of the native library.
     *
     * @return the handle, an address only the same native library can use
     * @throws IllegalStateException if the store is closed
     */
    public long nativeHandle() {
        long h = handle.acquire();
        try {
            return h;
        } finally {
            handle.release();
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Whether {@link #close()} was called.
     *
     * @return {@code true} once closed
     */
    public boolean isClosed() {
        return handle.isClosed();
    }

    @Override
    public void close() {
        cleanable.clean();
        NativeLog.drain();
    }

    @Override
    public String toString() {
        return getClass().getSimpleName()
                + "["
                + description
                + (isClosed() ? ", closed" : "")
                + "]";
    }

    /**
     * The native Redis store's Lua scripts, as name/text pairs, for the Jedis store ({@code
     * dev.idemkit.jedis}): one source for both clients.
     *
     * @return {@code [name0, text0, name1, text1, ...]}
     */
    protected static String[] redisScriptSources() {
        return NativeBridge.redisScripts();
    }
}
