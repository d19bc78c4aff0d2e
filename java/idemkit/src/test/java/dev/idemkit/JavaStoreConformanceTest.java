package dev.idemkit;

import com.example.store.MapStoreOperations;
import org.junit.jupiter.api.Test;

/**
 * SPEC §4 and v1.1 rule 10 on the stores written in Java: the core's whole store conformance suite
 * ({@code idemkit::testing::check_store}, the one the native stores pass in {@code tests/}) runs
 * through the upcalls of each — 64 concurrent claimers of a free key, of an expired record and of a
 * remembered failure each have exactly one winner; only the owner completes or releases; expiry,
 * {@code forget}, {@code purge_expired}, {@code list}, the fingerprint, resolving and take-overs.
 */
class JavaStoreConformanceTest {
    private static void check(IdempotencyStore store) {
        try (IdempotencyStore open = store) {
            NativeTestSupport.storeConformance((NativeIdempotencyStore) open);
        }
    }

    @Test
    void the_jdbc_store_passes_the_core_conformance_suite() {
        PostgresIdempotencyStore pg =
                new PostgresIdempotencyStore(JavaClients.dataSource("JDBC store conformance"));
        pg.createTableIfMissing();
        check(pg);
    }

    @Test
    void the_jedis_store_passes_the_core_conformance_suite() {
        check(
                new dev.idemkit.jedis.RedisIdempotencyStore(
                        JavaClients.redisClient("Jedis store conformance"),
                        "idemkit-jedis-conformance:"));
    }

    @Test
    void the_jedis_store_over_a_cluster_client_passes_the_core_conformance_suite() {
        String url = Services.url("IDEMKIT_REDIS_CLUSTER_URL", "Jedis cluster conformance");
        java.util.Set<redis.clients.jedis.HostAndPort> nodes = JavaClients.clusterNodes(url);
        try (redis.clients.jedis.RedisClusterClient client =
                redis.clients.jedis.RedisClusterClient.create(nodes)) {
            check(
                    new dev.idemkit.jedis.RedisIdempotencyStore(
                            client, "idemkit-jedis-conformance:"));
        }
    }

    @Test
    void a_user_store_passes_the_core_conformance_suite() {
        check(IdempotencyStore.of(new MapStoreOperations()));
    }
}
