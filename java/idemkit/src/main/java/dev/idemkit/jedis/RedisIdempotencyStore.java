package dev.idemkit.jedis;

import dev.idemkit.NativeIdempotencyStore;
import redis.clients.jedis.UnifiedJedis;

/**
 * Records in Redis over the application's own Jedis client ({@code RedisClient}, or {@code
 * RedisClusterClient} for a cluster), with its TLS, credentials and pool settings: the same key
 * layout ({@code <prefix><tenant>:<key>}), record format and Lua scripts as {@link
 * dev.idemkit.RedisIdempotencyStore}, which opens the server by URL, so the two (and a Rust service
 * on the same server) deduplicate against each other. The core's executor drives it; every claim is
 * one script on the server's clock.
 *
 * <p>Jedis ({@code redis.clients:jedis}) is the application's dependency. The application owns the
 * client and closes it; the store never does.
 */
public final class RedisIdempotencyStore extends NativeIdempotencyStore {
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
        super(new JedisStoreOperations(client, keyPrefix, redisScriptSources()));
    }
}
