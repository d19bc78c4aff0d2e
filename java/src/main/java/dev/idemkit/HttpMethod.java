package dev.idemkit;

/**
 * The HTTP method of a {@link WebService} action. {@code POST}, {@code PUT}, {@code PATCH} and
 * {@code DELETE} carry the call's {@code Idempotency-Key} header (SPEC §5); {@code GET}, {@code
 * HEAD} and {@code OPTIONS} never do, though a remembered result still answers them without a
 * request.
 */
public enum HttpMethod {
    GET(false, true),
    HEAD(false, true),
    OPTIONS(false, true),
    POST(true, false),
    PUT(true, true),
    PATCH(true, false),
    DELETE(true, true);

    private final boolean carriesKey;
    private final boolean idempotent;

    HttpMethod(boolean carriesKey, boolean idempotent) {
        this.carriesKey = carriesKey;
        this.idempotent = idempotent;
    }

    /** Whether a request with this method carries the {@code Idempotency-Key} header. */
    public boolean carriesIdempotencyKey() {
        return carriesKey;
    }

    /**
     * Whether the method is idempotent by HTTP's own definition (RFC 9110 §9.2.2: GET, HEAD,
     * OPTIONS, PUT, DELETE), so a transport retry is safe even without a key.
     */
    public boolean idempotentByDefinition() {
        return idempotent;
    }
}
