package dev.idemkit.spi;

/**
 * The outcome of a completed call as a store keeps it: opaque JSON text and its kind. A store keeps
 * both as given and never parses the JSON; it reads only the kind (a claim that retries failures
 * replaces a {@code failure}; an {@code indeterminate} outcome can still be released or completed
 * by its owner).
 *
 * @param kind {@code success}, {@code failure}, {@code too_large} or {@code indeterminate}
 * @param json the outcome in the record format (SPEC §4), as JSON text
 */
public record StoredOutcome(String kind, String json) {
    /**
     * Whether this is a remembered failure (what {@link ClaimRequest#retryFailure()} replaces).
     *
     * @return {@code true} for kind {@code failure}
     */
    public boolean isFailure() {
        return "failure".equals(kind);
    }

    /**
     * Whether this is a held failure of an {@code EFFECTFUL} tool, which its owner or an operator
     * may still settle.
     *
     * @return {@code true} for kind {@code indeterminate}
     */
    public boolean isIndeterminate() {
        return "indeterminate".equals(kind);
    }
}
