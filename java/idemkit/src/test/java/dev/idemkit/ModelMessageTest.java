package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The short text adapters send a model: names the tool, never the key, one per kind. */
class ModelMessageTest {
    private static final String KEY = "ab".repeat(32);

    @Test
    void every_kind_names_the_tool_and_never_the_key() {
        for (ErrorKind kind : ErrorKind.values()) {
            IdempotencyException e =
                    new IdempotencyException(
                            kind, "key " + KEY + " policy is FAIL_FAST", "book_flight", KEY);
            String text = e.modelMessage();
            assertTrue(text.contains("book_flight"), kind + ": " + text);
            assertFalse(text.contains(KEY), kind + ": " + text);
            assertFalse(text.contains("FAIL_FAST"), kind + ": " + text);
        }
    }

    @Test
    void a_repeat_refused_says_it_did_not_run_and_a_cached_failure_says_why() {
        assertEquals(
                "book_flight was already called with these arguments; it was not run again",
                new FailFastException("m " + KEY, "book_flight", KEY).modelMessage());
        assertEquals(
                "an identical earlier book_flight call failed: IOException: the airline is down;"
                        + " it was not run again",
                new CachedFailureException(
                                "m",
                                "book_flight",
                                KEY,
                                "java.io.IOException",
                                "the airline is down")
                        .modelMessage());
        assertEquals(
                "the tool failed (an internal error)",
                new IdempotencyException(ErrorKind.INTERNAL, "m", null, null).modelMessage());
    }
}
