package dev.idemkit;

/** What a repeat of a remembered call gets (SPEC §1, {@code onCacheHit}). */
public enum RetryBehavior {
    /**
     * A remembered success is returned; a remembered failure throws {@link CachedFailureException}.
     */
    RETURN_CACHED,
    /** A remembered success is returned; a remembered failure runs the body again. */
    RETURN_CACHED_IF_SUCCESS,
    /**
     * Any repeat throws {@link FailFastException} at once, and an in-progress key is not waited
     * for.
     */
    FAIL_FAST
}
