package dev.idemkit;

import org.junit.jupiter.api.Assumptions;

/** The Redis/PostgreSQL servers of the store tests: skipped loudly when their URL is not set. */
final class Services {
    private Services() {}

    static String url(String variable, String what) {
        String url = System.getenv(variable);
        if (url == null || url.isEmpty()) {
            String message =
                    variable
                            + " is not set: SKIPPING the "
                            + what
                            + " tests (start the servers with"
                            + " scripts/services.sh start, then eval \"$(scripts/services.sh env)\")";
            System.err.println("idemkit: " + message);
            Assumptions.abort(message);
        }
        return url;
    }

    /**
     * The in-memory store, Redis and PostgreSQL (a table made if missing), and the stores written
     * in Java on the same servers (Jedis, JDBC), as arguments of a parameterised test ({@code
     * name}, a {@code Supplier<IdempotencyStore>}); a server whose URL is not set aborts its case
     * loudly. {@code what} names the tests in that message.
     */
    static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> stores(
            String what) {
        java.util.function.Supplier<IdempotencyStore> memory = InMemoryIdempotencyStore::new;
        java.util.function.Supplier<IdempotencyStore> redis =
                () -> new RedisIdempotencyStore(url("IDEMKIT_REDIS_URL", what + " Redis"));
        java.util.function.Supplier<IdempotencyStore> postgres =
                () ->
                        new PostgresIdempotencyStore(
                                        url("IDEMKIT_POSTGRES_URL", what + " PostgreSQL"))
                                .createTableIfMissing();
        // The stores written in Java, over the application's own clients, on the same servers.
        java.util.function.Supplier<IdempotencyStore> jedis =
                () ->
                        new dev.idemkit.jedis.RedisIdempotencyStore(
                                JavaClients.redisClient(what + " Jedis"), "idemkit-jedis-test:");
        java.util.function.Supplier<IdempotencyStore> jdbc =
                () -> {
                    PostgresIdempotencyStore pg =
                            new PostgresIdempotencyStore(JavaClients.dataSource(what + " JDBC"));
                    pg.createTableIfMissing();
                    return pg;
                };
        return java.util.stream.Stream.of(
                org.junit.jupiter.params.provider.Arguments.of("memory", memory),
                org.junit.jupiter.params.provider.Arguments.of("redis", redis),
                org.junit.jupiter.params.provider.Arguments.of("postgres", postgres),
                org.junit.jupiter.params.provider.Arguments.of("jedis", jedis),
                org.junit.jupiter.params.provider.Arguments.of("jdbc", jdbc));
    }
}
