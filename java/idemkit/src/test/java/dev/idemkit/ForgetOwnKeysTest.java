package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;

/**
 * {@code forget} deletes a tenant's records and never an application's own keys next to them, of
 * any shape, with an empty key prefix too: on the native Redis store and on the Jedis store.
 */
class ForgetOwnKeysTest {
    public static class Book {
        @Tool(name = "forget_book")
        @Idempotent
        public String book(String flight) {
            return "booked:" + flight;
        }
    }

    private static String hex64() {
        return (UUID.randomUUID().toString() + UUID.randomUUID()).replace("-", "");
    }

    private static String segment(String tenant) {
        StringBuilder out = new StringBuilder("t");
        for (byte b : tenant.getBytes(StandardCharsets.UTF_8)) {
            out.append(String.format("%02x", b));
        }
        return out.toString();
    }

    /** Writes an application's keys under {@code prefix} and the tenant's segment; names them. */
    private static List<String> plantUnrelatedKeys(RedisClient raw, String prefix, String t) {
        List<String> keys = new ArrayList<>();
        String base = prefix + t + ":";
        for (String key :
                List.of(
                        base + "unrelated-app-key",
                        base + hex64(),
                        base + hex64() + ":extra",
                        base + hex64().substring(1),
                        base + hex64().toUpperCase(),
                        prefix + t + "x:" + hex64(),
                        prefix + t)) {
            raw.set(key, "data");
            keys.add(key);
        }
        String hash = base + hex64();
        raw.hset(hash, "app", "data");
        keys.add(hash);
        String lookalike = base + hex64();
        raw.hset(lookalike, "key", "0".repeat(64));
        keys.add(lookalike);
        String list = base + hex64();
        raw.rpush(list, "data");
        keys.add(list);
        return keys;
    }

    private static void check(IdempotencyStore store, RedisClient raw, String prefix) {
        String tenant = "forget-" + UUID.randomUUID();
        List<String> unrelated = plantUnrelatedKeys(raw, prefix, segment(tenant));
        ToolDispatcher d =
                ToolDispatcher.builder().tools(new Book()).store(store).tenant(tenant).build();
        d.call("forget_book", Map.of("flight", "A"));
        d.call("forget_book", Map.of("flight", "B"));
        assertEquals(2, store.forget(tenant), "prefix '" + prefix + "'");
        for (String key : unrelated) {
            assertTrue(raw.exists(key), "forget deleted the application's key " + key);
            raw.del(key);
        }
    }

    @Test
    void forget_leaves_every_key_that_is_not_a_record() {
        String url = Services.url("IDEMKIT_REDIS_URL", "forget");
        try (RedisClient raw = RedisClient.create(URI.create(url))) {
            for (String prefix : new String[] {"", "idemkit-forget-test:"}) {
                try (NativeIdempotencyStore store = new RedisIdempotencyStore(url, prefix)) {
                    check(store, raw, prefix);
                }
                check(new dev.idemkit.jedis.RedisIdempotencyStore(raw, prefix), raw, prefix);
            }
        }
    }
}
