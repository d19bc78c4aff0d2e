package dev.idemkit;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;

/**
 * A native handle shared by many threads, closed once: {@link #close()} is atomic and idempotent,
 * and the handle is destroyed only after every in-flight call that acquired it has released it, so
 * closing never frees memory under a running call.
 */
final class NativeHandle implements Runnable {
    private static final long CLOSED = 1L << 62;

    private final long handle;
    private final Runnable destroy;
    private final String what;
    private final AtomicLong state = new AtomicLong();
    private final AtomicBoolean destroyed = new AtomicBoolean();

    NativeHandle(long handle, LongConsumer destroy, String what) {
        this.handle = handle;
        this.destroy = handle == 0 ? () -> {} : () -> destroy.accept(handle);
        this.what = what;
    }

    /** A lifetime without a handle of its own: {@code free} runs once, after the last release. */
    NativeHandle(Runnable free, String what) {
        this.handle = 0;
        this.destroy = free;
        this.what = what;
    }

    /** The handle, counted as in use until {@link #release()}; throws if closed. */
    long acquire() {
        for (; ; ) {
            long s = state.get();
            if ((s & CLOSED) != 0) {
                throw new IllegalStateException(what + " is closed");
            }
            if (state.compareAndSet(s, s + 1)) {
                return handle;
            }
        }
    }

    void release() {
        if (state.decrementAndGet() == CLOSED) {
            destroyOnce();
        }
    }

    boolean isClosed() {
        return (state.get() & CLOSED) != 0;
    }

    void close() {
        for (; ; ) {
            long s = state.get();
            if ((s & CLOSED) != 0) {
                return;
            }
            if (state.compareAndSet(s, s | CLOSED)) {
                if (s == 0) {
                    destroyOnce();
                }
                return;
            }
        }
    }

    /** The Cleaner's action: a safety net for a handle its owner never closed. */
    @Override
    public void run() {
        close();
    }

    private void destroyOnce() {
        if (destroyed.compareAndSet(false, true)) {
            destroy.run();
        }
    }
}
