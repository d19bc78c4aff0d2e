package com.example.stores;

import dev.idemkit.IdempotencyStore;
import dev.idemkit.PostgresIdempotencyStore;
import dev.idemkit.jedis.RedisIdempotencyStore;
import javax.sql.DataSource;
import redis.clients.jedis.RedisClient;

/** The README's store snippets, unchanged: stores over clients the application owns. */
public final class AppStores {
    private AppStores() {}

    /** Builds the three stores of the README over {@code client} and {@code dataSource}. */
    public static IdempotencyStore[] build(RedisClient client, DataSource dataSource) {
        // README: begin
        IdempotencyStore store =
                new RedisIdempotencyStore(client); // redis.clients.jedis.RedisClient
        IdempotencyStore prefixed = new RedisIdempotencyStore(client, "myapp:idem:");
        PostgresIdempotencyStore pg = new PostgresIdempotencyStore(dataSource);
        pg.createTableIfMissing();
        // README: end
        return new IdempotencyStore[] {store, prefixed, pg};
    }
}
