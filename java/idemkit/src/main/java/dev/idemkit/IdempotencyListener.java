package dev.idemkit;

/**
 * Gets the events of a store's calls ({@link IdempotencyStore#addListener}): to log or trace a
 * {@code deduplicated} or {@code indeterminate} call as it happens.
 *
 * <p>Events are delivered on a Java thread that called through the store, right after the native
 * step that made them (the claim, the report of the body); events of settling that goes on in the
 * background are delivered with the next call. A listener that throws is logged and never breaks
 * the call. Keep it quick.
 */
@FunctionalInterface
public interface IdempotencyListener {
    /**
     * One event.
     *
     * @param event what happened
     */
    void onEvent(IdempotencyEvent event);
}
