package dev.idemkit;

/**
 * Records in Redis, shared by every process (and language) that points at the same server: one
 * script per claim on the server's clock, keys {@code <prefix><tenant>:<key>} (default prefix
 * {@code idemkit:}). A server whose {@code maxmemory-policy} may evict keys is refused, because
 * eviction would break the guarantee.
 *
 * <p>This class opens the server by URL, with connections of its own opened by the native core (for
 * applications without a Redis client). {@link dev.idemkit.jedis.RedisIdempotencyStore} is the same
 * store over the application's own Jedis client (same key layout, record format and Lua scripts);
 * it lives in its own package so that this class compiles without Jedis.
 */
public final class RedisIdempotencyStore extends NativeIdempotencyStore {
    /**
     * Opens {@code redis://[:password@]host[:port][/db]} (or {@code rediss://}) with the default
     * prefix.
     *
     * @param url the server URL; {@code redis+cluster://host:port,host:port/} for a cluster. Its
     *     password never appears in errors or {@link #describe()}
     * @throws StoreUnavailableException the server cannot be reached
     * @throws IllegalArgumentException the URL is refused, or the server may evict keys
     */
    public RedisIdempotencyStore(String url) {
        this(url, null);
    }

    /**
     * Opens the server with this key prefix (null: {@code idemkit:}).
     *
     * @param url the server URL, as for {@link #RedisIdempotencyStore(String)}
     * @param keyPrefix what every key starts with, or {@code null} for {@code idemkit:}
     * @throws StoreUnavailableException the server cannot be reached
     * @throws IllegalArgumentException the URL is refused, or the server may evict keys
     */
    public RedisIdempotencyStore(String url, String keyPrefix) {
        super(url, keyPrefix, null, false);
    }
}
