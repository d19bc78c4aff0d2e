package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The payload fingerprint from the Java face (SPEC v1.1 rule 9), on the in-memory store and on real
 * Redis and PostgreSQL: with {@code keyArguments} a differing non-key argument is answered from the
 * record by default, and refused with {@link PayloadMismatchException} when the policy asks. The
 * core decides; Java only maps the kind.
 */
class PayloadFingerprintTest {
    public static class Tools {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "book_lenient")
        @Idempotent(keyArguments = {"flight"})
        public String bookLenient(String flight, String requestId) {
            runs.incrementAndGet();
            return flight + "/" + requestId;
        }

        @Tool(name = "book_strict")
        @Idempotent(
                keyArguments = {"flight"},
                rejectPayloadMismatch = true)
        public String bookStrict(String flight, String requestId) {
            runs.incrementAndGet();
            return flight + "/" + requestId;
        }
    }

    static Stream<Arguments> stores() {
        return Services.stores("fingerprint");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void key_arguments_let_a_request_id_differ_unless_the_policy_refuses_it(
            String name, Supplier<IdempotencyStore> stores) {
        Tools tools = new Tools();
        try (IdempotencyStore store = stores.get();
                ToolDispatcher dispatcher =
                        ToolDispatcher.builder()
                                .tools(tools)
                                .store(store)
                                .tenant("fingerprint-" + UUID.randomUUID())
                                .build()) {
            String flight = "BA" + UUID.randomUUID();
            Map<String, Object> first = Map.of("flight", flight, "requestId", "r-1");
            Map<String, Object> retry = Map.of("flight", flight, "requestId", "r-2");

            assertEquals(flight + "/r-1", dispatcher.call("book_lenient", first));
            assertEquals(
                    flight + "/r-1",
                    dispatcher.call("book_lenient", retry),
                    "by default the booking is answered from the record");
            assertEquals(1, tools.runs.get());

            assertEquals(flight + "/r-1", dispatcher.call("book_strict", first));
            assertEquals(flight + "/r-1", dispatcher.call("book_strict", first));
            PayloadMismatchException e =
                    assertThrows(
                            PayloadMismatchException.class,
                            () -> dispatcher.call("book_strict", retry));
            assertEquals(ErrorKind.PAYLOAD_MISMATCH, e.kind());
            assertEquals(11, e.kind().code());
            assertEquals("book_strict", e.tool());
            assertTrue(e.key() != null && e.key().length() == 64, String.valueOf(e.key()));
            assertTrue(e.getMessage().contains("another payload"), e.getMessage());
            assertEquals(2, tools.runs.get(), "a mismatched repeat runs nothing");
        }
    }

    @Test
    void the_fingerprint_ignores_member_order_and_number_spelling() {
        assertEquals(
                IdempotencyKeys.fingerprint("{\"a\":1,\"b\":2.0}"),
                IdempotencyKeys.fingerprint("{\"b\":2,\"a\":1}"));
        assertEquals(ErrorKind.PAYLOAD_MISMATCH, ErrorKind.fromCode(11));
    }
}
