package dev.idemkit;

/**
 * Records in Redis, shared by every process (and language) that points at the same server: one
 * script per claim on the server's clock, keys {@code <prefix><tenant>:<key>} (default prefix
 * {@code idemkit:}). A server whose {@code maxmemory-policy} may evict keys is refused, because
 * eviction would break the guarantee.
 */
public final class RedisIdempotencyStore extends NativeIdempotencyStore {
    /**
     * Opens {@code redis://[:password@]host[:port][/db]} (or {@code rediss://}) with the default
     * prefix.
     */
    public RedisIdempotencyStore(String url) {
        this(url, null);
    }

    /** Opens the server with this key prefix (null: {@code idemkit:}). */
    public RedisIdempotencyStore(String url, String keyPrefix) {
        super(url, keyPrefix, null, false);
    }
}
