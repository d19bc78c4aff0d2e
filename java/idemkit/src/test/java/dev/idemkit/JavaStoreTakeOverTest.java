package dev.idemkit;

import com.example.store.MapStoreOperations;
import org.junit.jupiter.api.Test;

/**
 * SPEC v1.1 rule 12 on the stores written in Java: the core's take-over checks ({@code
 * idemkit::testing}) run through the upcalls of each — of 16 concurrent take-overs of one abandoned
 * claim exactly one wins, and only an abandoned claim of the expected token is taken over.
 */
class JavaStoreTakeOverTest {
    private static void check(IdempotencyStore store) {
        try (IdempotencyStore open = store) {
            NativeTestSupport.takeOverConformance((NativeIdempotencyStore) open);
        }
    }

    @Test
    void the_jdbc_store_takes_an_abandoned_claim_over_once() {
        PostgresIdempotencyStore pg =
                new PostgresIdempotencyStore(JavaClients.dataSource("JDBC store take-over"));
        pg.createTableIfMissing();
        check(pg);
    }

    @Test
    void the_jedis_store_takes_an_abandoned_claim_over_once() {
        check(
                new dev.idemkit.jedis.RedisIdempotencyStore(
                        JavaClients.redisClient("Jedis store take-over"), "idemkit-jedis-test:"));
    }

    @Test
    void a_user_store_takes_an_abandoned_claim_over_once() {
        check(IdempotencyStore.of(new MapStoreOperations()));
    }
}
