package dev.idemkit;

import java.net.URI;
import org.junit.jupiter.api.AfterAll;
import redis.clients.jedis.RedisClient;

/** The store contract on Redis through the application's Jedis {@code RedisClient}. */
class JedisStoreContractTest extends IdempotencyStoreContract {
    private static RedisClient client;

    @Override
    protected IdempotencyStore openStore() {
        if (client == null) {
            client =
                    RedisClient.create(
                            URI.create(Services.url("IDEMKIT_REDIS_URL", "Jedis store")));
        }
        return new dev.idemkit.jedis.RedisIdempotencyStore(client, "idemkit-jedis-test:");
    }

    @AfterAll
    static void closeClient() {
        if (client != null) {
            client.close();
            client = null;
        }
    }
}
