package dev.idemkit;

/**
 * A tenant and run as the core holds them, made once per dispatcher view so that calls pass one
 * handle instead of converting two strings each time. Freed by a {@link java.lang.ref.Cleaner} once
 * the view is unreachable (the view keeps it reachable during its calls).
 */
final class NativeContext {
    final String tenant;
    final String run;
    final long handle;

    NativeContext(String tenant, String run) {
        this.tenant = tenant;
        this.run = run;
        this.handle = NativeBridge.contextNew(tenant, run);
        long h = handle;
        NativeIdempotencyStore.CLEANER.register(this, () -> NativeBridge.contextDestroy(h));
    }
}
