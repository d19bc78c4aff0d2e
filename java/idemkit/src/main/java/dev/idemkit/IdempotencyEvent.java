package dev.idemkit;

import java.util.Locale;

/**
 * One answer of the core, as a listener gets it (SPEC §3: every answer is an event).
 *
 * @param kind what happened
 * @param tool the tool or action name (null for {@link Kind#DROPPED})
 * @param key the 64-hex key, or null
 * @param tenant the call's tenant, or null
 * @param detail for {@code store_error}, {@code record_failed} and a held {@code indeterminate}:
 *     what went wrong; for {@link Kind#WAITED}: how long the call waited, in whole milliseconds
 *     (decimal digits); for {@link Kind#DROPPED}: how many events were dropped; else null
 */
public record IdempotencyEvent(Kind kind, String tool, String key, String tenant, String detail) {
    /** The kinds of event, named as the core names them. */
    public enum Kind {
        /** The key was claimed: the body runs. */
        ACQUIRED,
        /** A remembered outcome answered the call: the body did not run. */
        DEDUPLICATED,
        /**
         * The call waited for another caller's claim (followed by what it then got); the detail is
         * the wait's length in milliseconds.
         */
        WAITED,
        /** The call's deadline passed while it waited. */
        WAIT_TIMED_OUT,
        /** {@code FAIL_FAST} refused a repeat. */
        FAILED_FAST,
        /** The outcome is unknown: an abandoned claim, or an {@code EFFECTFUL} failure held. */
        INDETERMINATE,
        /** A failed body's claim was released so that a retry runs again. */
        RELEASED,
        /** The store could not be reached or answered an error. */
        STORE_ERROR,
        /** A succeeded body's outcome could not be recorded. */
        RECORD_FAILED,
        /** A failed call is run again after a pause, under the same key. */
        RETRIED,
        /** A repeat of a used key came with another payload and was refused; nothing ran. */
        PAYLOAD_MISMATCH,
        /** Events were dropped because none were delivered for a while (the detail counts them). */
        DROPPED,
        /** An event of a kind this version of the binding does not know. */
        OTHER;

        static Kind of(String name) {
            try {
                return valueOf(name.toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException unknown) {
                return OTHER;
            }
        }
    }
}
