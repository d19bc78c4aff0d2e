package dev.idemkit.langchain4j;

import dev.idemkit.IdempotencyStore;
import dev.idemkit.InMemoryIdempotencyStore;
import dev.idemkit.RedisIdempotencyStore;
import java.util.UUID;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.provider.Arguments;

/**
 * The stores of the tests: in memory, and Redis when IDEMKIT_REDIS_URL is set (else skipped
 * loudly).
 */
final class Services {
    private Services() {}

    static String url(String variable, String what) {
        String url = System.getenv(variable);
        if (url == null || url.isEmpty()) {
            String message =
                    variable
                            + " is not set: SKIPPING the "
                            + what
                            + " tests (start the servers with scripts/services.sh start, then eval"
                            + " \"$(scripts/services.sh env)\")";
            if (required(variable)) {
                org.junit.jupiter.api.Assertions.fail(
                        message + "; IDEMKIT_REQUIRE_SERVICES guarantees it, so this fails");
            }
            System.err.println("idemkit: " + message);
            Assumptions.abort(message);
        }
        return url;
    }

    /** Whether IDEMKIT_REQUIRE_SERVICES ({@code 1}, or names) guarantees {@code what}. */
    static boolean required(String what) {
        String list = System.getenv().getOrDefault("IDEMKIT_REQUIRE_SERVICES", "");
        return java.util.Arrays.stream(list.split("[ ,]+"))
                .anyMatch(n -> n.equals("1") || n.equals(what));
    }

    /** {@code name}, a {@code Supplier<IdempotencyStore>}: each Redis store has a fresh prefix. */
    static Stream<Arguments> stores() {
        Supplier<IdempotencyStore> memory = InMemoryIdempotencyStore::new;
        Supplier<IdempotencyStore> redis =
                () ->
                        new RedisIdempotencyStore(
                                url("IDEMKIT_REDIS_URL", "LangChain4j Redis"),
                                "idemkit-lc4j-test:" + UUID.randomUUID() + ":");
        return Stream.of(Arguments.of("memory", memory), Arguments.of("redis", redis));
    }
}
