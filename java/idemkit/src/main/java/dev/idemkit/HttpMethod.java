package dev.idemkit;

/**
 * The HTTP method of a {@link WebService} action. {@code POST}, {@code PUT}, {@code PATCH} and
 * {@code DELETE} carry the call's {@code Idempotency-Key} header (SPEC §5); {@code GET}, {@code
 * HEAD} and {@code OPTIONS} never do, though a remembered result still answers them without a
 * request.
 */
public enum HttpMethod {
    /** {@code GET}: no key header, no body; idempotent by definition. */
    GET(false, true),
    /** {@code HEAD}: no key header, no body; idempotent by definition. */
    HEAD(false, true),
    /** {@code OPTIONS}: no key header; idempotent by definition. */
    OPTIONS(false, true),
    /** {@code POST}: carries the key header; not idempotent by definition. */
    POST(true, false),
    /** {@code PUT}: carries the key header; idempotent by definition. */
    PUT(true, true),
    /** {@code PATCH}: carries the key header; not idempotent by definition. */
    PATCH(true, false),
    /** {@code DELETE}: carries the key header; idempotent by definition. */
    DELETE(true, true);

    private final boolean carriesKey;
    private final boolean idempotent;

    HttpMethod(boolean carriesKey, boolean idempotent) {
        this.carriesKey = carriesKey;
        this.idempotent = idempotent;
    }

    /**
     * Whether a request with this method carries the {@code Idempotency-Key} header.
     *
     * @return {@code true} for {@code POST}, {@code PUT}, {@code PATCH} and {@code DELETE}
     */
    public boolean carriesIdempotencyKey() {
        return carriesKey;
    }

    /**
     * Whether the method is idempotent by HTTP's own definition (RFC 9110 §9.2.2: GET, HEAD,
     * OPTIONS, PUT, DELETE), so a transport retry is safe even without a key.
     *
     * @return {@code true} for {@code GET}, {@code HEAD}, {@code OPTIONS}, {@code PUT} and {@code
     *     DELETE}
     */
    public boolean idempotentByDefinition() {
        return idempotent;
    }
}
