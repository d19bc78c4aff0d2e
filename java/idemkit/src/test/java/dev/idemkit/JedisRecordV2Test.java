package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;

/**
 * The Jedis store on record v2 (SPEC v1.2 §9 rule 2), as the native store: one string per record, a
 * repeat and the claim of a new key one plain {@code SET ... NX GET}, a completion one script; and
 * a record of the v1 layout (a hash) is still answered.
 */
class JedisRecordV2Test {
    public static class Tools {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "v2_book")
        @Idempotent
        public String book(String flight) {
            runs.incrementAndGet();
            return "booked:" + flight;
        }
    }

    private static long calls(RedisClient client, String command) {
        for (String line : client.info("commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_" + command + ":calls=")) {
                return Long.parseLong(line.substring(line.indexOf('=') + 1, line.indexOf(',')));
            }
        }
        return 0;
    }

    @Test
    void a_repeat_is_one_command_and_an_executed_call_two() throws Exception {
        String url = Services.url("IDEMKIT_REDIS_URL", "Jedis record v2");
        String tenant = "v2-" + UUID.randomUUID();
        Tools tools = new Tools();
        try (RedisClient client = RedisClient.create(java.net.URI.create(url));
                dev.idemkit.jedis.RedisIdempotencyStore store =
                        new dev.idemkit.jedis.RedisIdempotencyStore(client);
                ToolDispatcher d =
                        ToolDispatcher.builder().tools(tools).store(store).tenant(tenant).build()) {
            // A first call reads the server's clock once (the store's estimate of it).
            assertEquals("booked:W", d.call("v2_book", Map.of("flight", "W")));
            long sets = calls(client, "set");
            long scripts = calls(client, "evalsha") + calls(client, "eval");
            // An executed call: the claim (one SET), then the completion script (whose own SET
            // commandstats counts too).
            assertEquals("booked:A", d.call("v2_book", Map.of("flight", "A")));
            assertEquals(2, calls(client, "set") - sets);
            assertEquals(1, calls(client, "evalsha") + calls(client, "eval") - scripts);
            // A repeat: one SET ... NX GET, no script.
            for (int i = 1; i <= 3; i++) {
                assertEquals("booked:A", d.call("v2_book", Map.of("flight", "A")));
                assertEquals(2 + i, calls(client, "set") - sets);
                assertEquals(1, calls(client, "evalsha") + calls(client, "eval") - scripts);
            }
            assertEquals(2, tools.runs.get());
            String key =
                    "idemkit:t"
                            + HexFormat.of().formatHex(tenant.getBytes(StandardCharsets.UTF_8))
                            + ":"
                            + IdempotencyKeys.derive("v2_book", tenant, null, "{\"flight\":\"A\"}");
            assertEquals("string", client.type(key));
            assertTrue(client.get(key).startsWith("2s|"), client.get(key));
        } finally {
            try (RedisClient client = RedisClient.create(java.net.URI.create(url));
                    dev.idemkit.jedis.RedisIdempotencyStore store =
                            new dev.idemkit.jedis.RedisIdempotencyStore(client)) {
                store.forget(tenant);
            }
        }
    }

    @Test
    void a_v1_record_is_answered_and_the_body_does_not_run() throws Exception {
        String url = Services.url("IDEMKIT_REDIS_URL", "Jedis record v2");
        String tenant = "v1-" + UUID.randomUUID();
        Tools tools = new Tools();
        try (RedisClient client = RedisClient.create(java.net.URI.create(url));
                dev.idemkit.jedis.RedisIdempotencyStore store =
                        new dev.idemkit.jedis.RedisIdempotencyStore(client);
                ToolDispatcher d =
                        ToolDispatcher.builder().tools(tools).store(store).tenant(tenant).build()) {
            String hex = IdempotencyKeys.derive("v2_book", tenant, null, "{\"flight\":\"A\"}");
            String key =
                    "idemkit:t"
                            + HexFormat.of().formatHex(tenant.getBytes(StandardCharsets.UTF_8))
                            + ":"
                            + hex;
            // The server runs on this machine: its clock is this one.
            long now = System.currentTimeMillis();
            // The record as the v1 claim and complete scripts left it: one hash.
            client.hset(
                    key,
                    Map.ofEntries(
                            Map.entry("v", "1"),
                            Map.entry("key", hex),
                            Map.entry("tenant", tenant),
                            Map.entry("scope", "v2_book"),
                            Map.entry("state", "completed"),
                            Map.entry("token", "0123456789abcdef0123456789abcdef"),
                            Map.entry("claimed_at", Long.toString(now)),
                            Map.entry("lease_end", Long.toString(now + 60_000)),
                            Map.entry("ttl_ms", "60000"),
                            Map.entry("expires_at", Long.toString(now + 60_000)),
                            Map.entry("outcome", "{\"success\":\"booked:by v1\"}"),
                            Map.entry("outcome_kind", "success")));
            client.pexpireAt(key, now + 60_000);
            for (int i = 0; i < 3; i++) {
                assertEquals("booked:by v1", d.call("v2_book", Map.of("flight", "A")));
            }
            assertEquals(0, tools.runs.get());
            assertEquals("hash", client.type(key));
            assertEquals(1, store.forget(tenant));
        }
    }
}
