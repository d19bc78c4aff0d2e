package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A store written in Java over the application's client and the native store on the same server
 * share one layout and record format: they deduplicate against each other.
 */
// Under load a call can outlast its deadline: the core then warns of it.
@ExpectedWarnings({"store_error", "not settled yet"})
class JavaStoreSharingTest {
    public static class Tools {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "share_book")
        @Idempotent
        public String book(String flight) throws InterruptedException {
            runs.incrementAndGet();
            Thread.sleep(20);
            return "booked:" + flight;
        }
    }

    private static void shareOneKey(IdempotencyStore java, IdempotencyStore rust) throws Exception {
        String tenant = "share-" + UUID.randomUUID();
        Tools tools = new Tools();
        try (ToolDispatcher onJava =
                        ToolDispatcher.builder().tools(tools).store(java).tenant(tenant).build();
                ToolDispatcher onRust =
                        ToolDispatcher.builder().tools(tools).store(rust).tenant(tenant).build()) {
            assertEquals("booked:A", onJava.call("share_book", Map.of("flight", "A")));
            assertEquals("booked:A", onRust.call("share_book", Map.of("flight", "A")));
            assertEquals("booked:B", onRust.call("share_book", Map.of("flight", "B")));
            assertEquals("booked:B", onJava.call("share_book", Map.of("flight", "B")));
            assertEquals(2, tools.runs.get());

            // 64 claimers of one free key, half through each store: one body runs.
            int threads = 64;
            CyclicBarrier start = new CyclicBarrier(threads);
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                List<Future<Object>> results = new ArrayList<>();
                for (int i = 0; i < threads; i++) {
                    ToolDispatcher d = i % 2 == 0 ? onJava : onRust;
                    results.add(
                            pool.submit(
                                    () -> {
                                        start.await();
                                        return d.call("share_book", Map.of("flight", "C"));
                                    }));
                }
                for (Future<Object> f : results) {
                    assertEquals("booked:C", f.get(60, TimeUnit.SECONDS));
                }
            } finally {
                pool.shutdown();
            }
            assertEquals(3, tools.runs.get());
        } finally {
            java.forget(tenant);
        }
    }

    @Test
    void the_jedis_store_and_the_native_redis_store_share_records() throws Exception {
        String url = Services.url("IDEMKIT_REDIS_URL", "Jedis sharing");
        try (redis.clients.jedis.RedisClient client =
                        redis.clients.jedis.RedisClient.create(java.net.URI.create(url));
                dev.idemkit.jedis.RedisIdempotencyStore java =
                        new dev.idemkit.jedis.RedisIdempotencyStore(client);
                RedisIdempotencyStore rust = new RedisIdempotencyStore(url)) {
            shareOneKey(java, rust);
        }
    }

    @Test
    void the_jedis_cluster_store_and_the_native_cluster_store_share_records() throws Exception {
        String url = Services.url("IDEMKIT_REDIS_CLUSTER_URL", "Jedis cluster sharing");
        java.util.Set<redis.clients.jedis.HostAndPort> nodes = JavaClients.clusterNodes(url);
        try (redis.clients.jedis.RedisClusterClient client =
                        redis.clients.jedis.RedisClusterClient.create(nodes);
                dev.idemkit.jedis.RedisIdempotencyStore java =
                        new dev.idemkit.jedis.RedisIdempotencyStore(client);
                RedisIdempotencyStore rust = new RedisIdempotencyStore(url)) {
            shareOneKey(java, rust);
        }
    }

    @Test
    void the_jdbc_store_and_the_native_postgres_store_share_records() throws Exception {
        try (PostgresIdempotencyStore java =
                        new PostgresIdempotencyStore(JavaClients.dataSource("JDBC sharing"))
                                .createTableIfMissing();
                PostgresIdempotencyStore rust =
                        new PostgresIdempotencyStore(
                                Services.url("IDEMKIT_POSTGRES_URL", "JDBC sharing"))) {
            shareOneKey(java, rust);
        }
    }
}
