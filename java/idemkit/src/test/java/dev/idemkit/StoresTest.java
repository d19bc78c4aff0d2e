package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Opening stores, their refusals, and outcomes larger than a store keeps. */
class StoresTest {
    @Test
    void a_table_name_that_is_not_an_identifier_is_refused_when_the_store_is_built() {
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                new PostgresIdempotencyStore(
                                        "postgres://postgres@127.0.0.1:1/db",
                                        "records; drop table x"));
        assertTrue(e.getMessage().contains("records; drop table x"), e.getMessage());
    }

    @Test
    void an_unreachable_server_is_store_unavailable() {
        StoreUnavailableException e =
                assertThrows(
                        StoreUnavailableException.class,
                        () -> new RedisIdempotencyStore("redis://127.0.0.1:1/0"));
        assertEquals(ErrorKind.STORE_UNAVAILABLE, e.kind());
    }

    @Test
    void an_unknown_scheme_is_a_configuration_error() {
        assertThrows(
                IllegalArgumentException.class,
                () -> new RedisIdempotencyStore("ftp://127.0.0.1/"));
    }

    static class Big {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "report")
        @Idempotent
        public String report(int kb) {
            runs.incrementAndGet();
            return "x".repeat(kb * 1024);
        }
    }

    @Test
    void
            a_result_over_the_store_limit_reaches_the_first_caller_and_repeats_get_outcome_too_large() {
        Big big = new Big();
        try (InMemoryIdempotencyStore store = new InMemoryIdempotencyStore()) {
            ToolDispatcher d = ToolDispatcher.builder().tools(big).store(store).build();
            assertEquals(1100 * 1024, ((String) d.call("report", Map.of("kb", 1100))).length());
            OutcomeTooLargeException e =
                    assertThrows(
                            OutcomeTooLargeException.class,
                            () -> d.call("report", Map.of("kb", 1100)));
            assertEquals("report", e.tool());
            assertEquals(1, big.runs.get());
        }
    }

    @Test
    void store_descriptions_carry_no_secrets() {
        try (InMemoryIdempotencyStore store = new InMemoryIdempotencyStore()) {
            assertEquals("memory", store.describe());
        }
        String url = Services.url("IDEMKIT_REDIS_URL", "Redis description");
        try (RedisIdempotencyStore store = new RedisIdempotencyStore(url)) {
            assertTrue(store.describe().startsWith("redis://"), store.describe());
        }
    }
}
