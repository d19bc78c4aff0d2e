package dev.idemkit;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

/**
 * The Redis/PostgreSQL servers of the store tests, and the one rule for a test whose server or
 * program is missing: skipped (a JUnit assumption, counted "Skipped"), or failed when {@code
 * IDEMKIT_REQUIRE_SERVICES} guarantees it (scripts/test.sh sets it).
 */
final class Services {
    private Services() {}

    static String url(String variable, String what) {
        String url = System.getenv(variable);
        if (url == null || url.isEmpty()) {
            skip(
                    variable,
                    variable
                            + " is not set: SKIPPING the "
                            + what
                            + " tests (start the servers with"
                            + " scripts/services.sh start, then eval \"$(scripts/services.sh env)\")");
        }
        return url;
    }

    /**
     * Skips the running test, or fails it when {@code IDEMKIT_REQUIRE_SERVICES} ({@code 1}, or
     * names separated by spaces or commas) names {@code what}: a variable or a program.
     */
    static void skip(String what, String message) {
        if (required(what)) {
            Assertions.fail(
                    message.replace("SKIPPING", "cannot run")
                            + "; IDEMKIT_REQUIRE_SERVICES guarantees "
                            + what
                            + ", so this fails instead (unset IDEMKIT_REQUIRE_SERVICES to skip)");
        }
        System.err.println("idemkit: " + message);
        Assumptions.abort(message);
    }

    static boolean required(String what) {
        String list = System.getenv().getOrDefault("IDEMKIT_REQUIRE_SERVICES", "");
        for (String name : list.split("[ ,]+")) {
            if (name.equals("1") || name.equals(what)) {
                return true;
            }
        }
        return false;
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
