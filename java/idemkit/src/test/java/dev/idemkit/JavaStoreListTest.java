package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Listing a few thousand records of the stores written in Java (Jedis, on one server and on a
 * cluster; JDBC) through the core's {@code Store::list} and {@code Store::newest} (what the CLI's
 * {@code list} reads): pages hold at most the limit, and following the cursor returns every record
 * exactly once.
 */
class JavaStoreListTest {
    private static final int RECORDS = 2500;

    public static class Fill {
        @Tool(name = "list_fill")
        @Idempotent
        public String fill(int n) {
            return "n" + n;
        }
    }

    /** Makes {@link #RECORDS} records of {@code tenant} through the store, one call each. */
    private static void fillThroughCalls(IdempotencyStore store, String tenant) {
        ToolDispatcher calls =
                ToolDispatcher.builder().tools(new Fill()).store(store).tenant(tenant).build();
        for (int n = 0; n < RECORDS; n++) {
            calls.call("list_fill", Map.of("n", n));
        }
    }

    private static JsonNode list(
            NativeIdempotencyStore store, String tenant, int limit, boolean newest)
            throws Exception {
        return new ObjectMapper()
                .readTree(NativeTestSupport.listThroughCore(store, tenant, limit, newest));
    }

    /**
     * Pages of 37 and of 500 each return every record once, none over the limit; the newest 10 are
     * the first 10 of every record in newest-first order.
     */
    private static void checkPaging(NativeIdempotencyStore store, String tenant) throws Exception {
        List<JsonNode> all = null;
        for (int limit : new int[] {37, 500}) {
            JsonNode listed = list(store, tenant, limit, false);
            for (JsonNode page : listed.get("pages")) {
                assertTrue(page.asInt() <= limit, "a page of " + page + " over the limit " + limit);
            }
            List<JsonNode> records = new ArrayList<>();
            listed.get("records").forEach(records::add);
            Set<String> keys = new HashSet<>();
            for (JsonNode r : records) {
                assertTrue(
                        keys.add(r.get(0).asText()), "listed twice: " + r + " at limit " + limit);
            }
            assertEquals(RECORDS, keys.size(), "every record, at limit " + limit);
            all = records;
        }
        all.sort(
                Comparator.comparingLong((JsonNode r) -> -r.get(1).asLong())
                        .thenComparing(r -> r.get(0).asText()));
        JsonNode newest = list(store, tenant, 10, true).get("records");
        assertEquals(10, newest.size());
        for (int i = 0; i < 10; i++) {
            assertEquals(all.get(i), newest.get(i), "newest #" + i);
        }
    }

    @Test
    void the_jedis_store_pages_every_record_once() throws Exception {
        String tenant = "list-" + UUID.randomUUID();
        try (dev.idemkit.jedis.RedisIdempotencyStore store =
                new dev.idemkit.jedis.RedisIdempotencyStore(
                        JavaClients.redisClient("Jedis listing"), "idemkit-jedis-test:")) {
            fillThroughCalls(store, tenant);
            checkPaging(store, tenant);
            assertEquals(RECORDS, store.forget(tenant));
        }
    }

    @Test
    void the_jedis_cluster_store_pages_every_record_once_over_every_primary() throws Exception {
        String url = Services.url("IDEMKIT_REDIS_CLUSTER_URL", "Jedis cluster listing");
        Set<redis.clients.jedis.HostAndPort> nodes = JavaClients.clusterNodes(url);
        String tenant = "list-" + UUID.randomUUID();
        try (redis.clients.jedis.RedisClusterClient client =
                        redis.clients.jedis.RedisClusterClient.create(nodes);
                dev.idemkit.jedis.RedisIdempotencyStore store =
                        new dev.idemkit.jedis.RedisIdempotencyStore(
                                client, "idemkit-jedis-test:")) {
            fillThroughCalls(store, tenant);
            checkPaging(store, tenant);
            assertEquals(RECORDS, store.forget(tenant));
        }
    }

    @Test
    void the_jdbc_store_pages_every_record_once() throws Exception {
        String tenant = "list-" + UUID.randomUUID();
        javax.sql.DataSource dataSource = JavaClients.dataSource("JDBC listing");
        try (PostgresIdempotencyStore store =
                new PostgresIdempotencyStore(dataSource).createTableIfMissing()) {
            // Rows as the store writes them, in one statement (a call each would take a new
            // connection each through this test's DriverManager DataSource).
            try (Connection c = dataSource.getConnection();
                    PreparedStatement s =
                            c.prepareStatement(
                                    "INSERT INTO idemkit_records (tenant, key, format, scope,"
                                            + " state, token, claimed_at, lease_end, ttl_ms,"
                                            + " expires_at, outcome_kind, outcome) SELECT ?,"
                                            + " encode(sha256(convert_to(? || i::text, 'UTF8')),"
                                            + " 'hex'), 1, 'list_fill', 'completed', md5(i::text),"
                                            + " now() - i * interval '1 millisecond',"
                                            + " now(), 600000, now() + interval '10 minutes',"
                                            + " 'success', '{\"success\":1}'::json FROM"
                                            + " generate_series(1, ?) AS i")) {
                s.setString(1, tenant);
                s.setString(2, tenant);
                s.setInt(3, RECORDS);
                assertEquals(RECORDS, s.executeUpdate());
            }
            checkPaging(store, tenant);
            assertEquals(RECORDS, store.forget(tenant));
        }
    }
}
