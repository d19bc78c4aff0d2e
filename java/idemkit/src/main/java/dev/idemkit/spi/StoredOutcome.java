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

    private static final com.fasterxml.jackson.core.JsonFactory JSON =
            new com.fasterxml.jackson.core.JsonFactory();

    /**
     * An outcome read without its kind (PostgreSQL keeps none; a Redis record written before {@code
     * outcome_kind}): the kind is the one member name of its JSON object ({@code {"success":
     * ...}}).
     *
     * @param json the outcome in the record format, as JSON text
     * @return the outcome with its kind
     * @throws IllegalStateException {@code json} is not an outcome
     */
    public static StoredOutcome ofJson(String json) {
        try (com.fasterxml.jackson.core.JsonParser p = JSON.createParser(json)) {
            if (p.nextToken() == com.fasterxml.jackson.core.JsonToken.START_OBJECT
                    && p.nextToken() == com.fasterxml.jackson.core.JsonToken.FIELD_NAME) {
                return new StoredOutcome(p.currentName(), json);
            }
        } catch (java.io.IOException e) {
            // Falls through: not an outcome.
        }
        throw new IllegalStateException("a record holds an unreadable outcome");
    }
}
