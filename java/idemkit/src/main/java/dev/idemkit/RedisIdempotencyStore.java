package dev.idemkit;

import redis.clients.jedis.UnifiedJedis;

/**
 * Records in Redis, shared by every process (and language) that points at the same server: one
 * script per claim on the server's clock, keys {@code <prefix><tenant>:<key>} (default prefix
 * {@code idemkit:}). A server whose {@code maxmemory-policy} may evict keys is refused, because
 * eviction would break the guarantee.
 *
 * <p>Two ways to build one, sharing one key layout, record format and set of Lua scripts:
 *
 * <ul>
 *   <li>{@link #RedisIdempotencyStore(UnifiedJedis)}: over the application's own Jedis client
 *       ({@code RedisClient}, or {@code RedisClusterClient} for a cluster), with its TLS,
 *       credentials and pool settings. Jedis is the application's dependency. The application owns
 *       the client and closes it; the store never does.
 *   <li>{@link #RedisIdempotencyStore(String)}: by URL, with connections of its own opened by the
 *       native core (for applications without a client).
 * </ul>
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

    /**
     * A store over the application's Jedis client, with the default prefix {@code idemkit:}.
     *
     * @param client a {@code redis.clients.jedis.RedisClient} (or {@code RedisClusterClient}); the
     *     application keeps it and closes it
     * @throws NullPointerException if {@code client} is null
     */
    public RedisIdempotencyStore(UnifiedJedis client) {
        this(client, null);
    }

    /**
     * A store over the application's Jedis client, with this key prefix.
     *
     * @param client a {@code RedisClient} or {@code RedisClusterClient}, as for {@link
     *     #RedisIdempotencyStore(UnifiedJedis)}
     * @param keyPrefix what every key starts with, or {@code null} for {@code idemkit:}
     * @throws NullPointerException if {@code client} is null
     */
    public RedisIdempotencyStore(UnifiedJedis client, String keyPrefix) {
        super(new JedisStoreOperations(client, keyPrefix));
    }
}
