package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** The public key derivation: the core's keys over JSON text, and its refusals naming the field. */
class IdempotencyKeysTest {
    static final String BOOK = "{\"flight\":\"BA117\"}";

    static InvalidKeyException refused(
            org.junit.jupiter.api.function.Executable call, String expected) {
        InvalidKeyException e = assertThrows(InvalidKeyException.class, call);
        assertEquals(ErrorKind.INVALID_KEY, e.kind());
        assertTrue(e.getMessage().contains(expected), e.getMessage());
        return e;
    }

    @Test
    void gives_the_spec_keys_for_input_key_arguments_and_explicit_keys() {
        assertEquals(
                "16aaec1b968f0c9ed7997809bfdba63ad58b7ba07512bef2fc513f1cf96b8f63",
                IdempotencyKeys.derive("book", null, null, BOOK));
        assertEquals(
                "3e7eb845bf16d54f9406e469c0e3c7e4d0d4b3f49865ee18a34e1925636624e6",
                IdempotencyKeys.derive(
                        "book",
                        "acme",
                        "run_1",
                        "{\"flight\":\"BA117\",\"request_id\":\"a\"}",
                        List.of("flight")));
        assertEquals(
                "eb4ab0e2414b12f09f35bf927fef015f5086d52f00f3988bcb2e3d2861571855",
                IdempotencyKeys.deriveExplicit("create_issue", null, null, "fix login bug"));
        // An empty list is the whole input.
        assertEquals(
                IdempotencyKeys.derive("book", null, null, BOOK),
                IdempotencyKeys.derive("book", null, null, BOOK, List.of()));
    }

    @Test
    void tenant_run_and_scope_are_key_material_in_nfc() {
        String plain = IdempotencyKeys.derive("book", null, null, BOOK);
        assertNotEquals(
                plain,
                IdempotencyKeys.derive("book", "", null, BOOK),
                "\"\" is a tenant, distinct from null");
        assertNotEquals(plain, IdempotencyKeys.derive("book", null, "r", BOOK));
        assertNotEquals(plain, IdempotencyKeys.derive("cancel", null, null, BOOK));
        assertEquals(
                IdempotencyKeys.derive("r\u00e9server", "caf\u00e9", "\u00e9", BOOK),
                IdempotencyKeys.derive("re\u0301server", "cafe\u0301", "e\u0301", BOOK));
        // Non-ASCII text in the input crosses escaped and is normalised by the core.
        assertEquals(
                IdempotencyKeys.derive("book", null, null, "{\"name\":\"\u00e9\"}"),
                IdempotencyKeys.derive("book", null, null, "{\"name\":\"e\u0301\"}"));
    }

    @Test
    void the_key_is_the_one_a_dispatcher_call_gets() {
        KeyVectorsTest.Probe probe = new KeyVectorsTest.Probe();
        try (InMemoryIdempotencyStore store = new InMemoryIdempotencyStore()) {
            ToolDispatcher dispatcher =
                    ToolDispatcher.builder()
                            .tool(
                                    probe,
                                    probeMethod(),
                                    Annotations.tool("book"),
                                    Annotations.idempotent(KeyStrategy.HASH_INPUT, new String[0]))
                            .store(store)
                            .tenant("acme")
                            .run("run_7")
                            .build();
            dispatcher.call("book", "{\"seats\":[1,2.50,3e0],\"flight\":\"BA117\"}");
        }
        assertEquals(
                IdempotencyKeys.derive(
                        "book", "acme", "run_7", "{\"flight\":\"BA117\",\"seats\":[1,2.5,3]}"),
                probe.key);
    }

    private static java.lang.reflect.Method probeMethod() {
        try {
            return KeyVectorsTest.Probe.class.getMethod(
                    "probe",
                    com.fasterxml.jackson.databind.JsonNode.class,
                    IdempotencyContext.class);
        } catch (NoSuchMethodException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void a_lone_surrogate_is_refused_naming_the_field() {
        InvalidKeyException e =
                refused(
                        () -> IdempotencyKeys.derive("book", null, null, "{\"flight\":\"\uD800\"}"),
                        "input.flight: lone surrogate \\ud800");
        assertEquals("book", e.tool());
        refused(
                () -> IdempotencyKeys.derive("book", "acme\uDC00", null, BOOK),
                "tenant: lone surrogate \\udc00");
        refused(
                () -> IdempotencyKeys.derive("book", null, "\uD83D", BOOK),
                "run: lone surrogate \\ud83d");
        refused(
                () -> IdempotencyKeys.derive("bo\uD800ok", null, null, BOOK),
                "scope: lone surrogate \\ud800");
        refused(
                () ->
                        IdempotencyKeys.derive(
                                "book", null, null, BOOK, List.of("flight", "x\uDFFF")),
                "keyArguments[1]: lone surrogate \\udfff");
        refused(
                () -> IdempotencyKeys.deriveExplicit("book", null, null, "k\uD800"),
                "explicit key: lone surrogate \\ud800");
        // A whole pair is a character, not an error.
        assertEquals(
                64,
                IdempotencyKeys.derive("book", "\uD83D\uDE00", null, "{\"e\":\"\uD83D\uDE00\"}")
                        .length());
    }

    @Test
    void input_the_spec_refuses_is_an_invalid_key() {
        refused(() -> IdempotencyKeys.derive("book", null, null, "{\"flight\":"), "not valid JSON");
        refused(
                () -> IdempotencyKeys.derive("book", null, null, "{\"a\":1,\"a\":2}"),
                "duplicate member");
        refused(() -> IdempotencyKeys.derive("book", null, null, "{\"a\":NaN}"), "input.a");
        refused(
                () -> IdempotencyKeys.derive("book", null, null, "[".repeat(65) + "]".repeat(65)),
                "nested deeper");
        refused(
                () ->
                        IdempotencyKeys.derive(
                                "book", null, null, "{\"request_id\":\"a\"}", List.of("flight")),
                "member \"flight\" named in key_arguments is missing");
        refused(
                () -> IdempotencyKeys.derive("book", null, null, BOOK, List.of("flight", "flight")),
                "listed more than once");
        refused(
                () -> IdempotencyKeys.derive("book", "t".repeat(1025), null, BOOK),
                "tenant: 1025 bytes");
        refused(
                () -> IdempotencyKeys.derive("s".repeat(1025), null, null, BOOK),
                "scope: 1025 bytes");
        refused(
                () -> IdempotencyKeys.deriveExplicit("send_email", null, null, " \u3000\t"),
                "explicit key: it is empty or blank");
        InvalidKeyException e =
                refused(
                        () -> IdempotencyKeys.deriveExplicit("send_email", null, null, null),
                        "explicit key: it is null");
        assertEquals("send_email", e.tool());
        // At the limit is fine.
        assertEquals(64, IdempotencyKeys.derive("book", "t".repeat(1024), null, BOOK).length());
    }

    @Test
    void null_where_a_value_is_required_names_the_argument() {
        assertTrue(
                assertThrows(
                                NullPointerException.class,
                                () -> IdempotencyKeys.derive(null, null, null, BOOK))
                        .getMessage()
                        .contains("scope is null"));
        assertTrue(
                assertThrows(
                                NullPointerException.class,
                                () -> IdempotencyKeys.derive("book", null, null, null))
                        .getMessage()
                        .contains("jsonInput is null"));
        assertTrue(
                assertThrows(
                                NullPointerException.class,
                                () ->
                                        IdempotencyKeys.derive(
                                                "book",
                                                null,
                                                null,
                                                BOOK,
                                                Arrays.asList("flight", null)))
                        .getMessage()
                        .contains("keyArguments[1] is null"));
    }

    @Test
    void many_threads_derive_the_same_keys() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<String>> keys = new ArrayList<>();
            for (int i = 0; i < 400; i++) {
                int n = i % 4;
                keys.add(
                        pool.submit(
                                () ->
                                        IdempotencyKeys.derive(
                                                "book", "t" + n, null, "{\"n\":" + n + "}")));
            }
            Map<Integer, String> first = new java.util.HashMap<>();
            for (int i = 0; i < keys.size(); i++) {
                String key = keys.get(i).get();
                assertEquals(first.computeIfAbsent(i % 4, n -> key), key);
            }
            assertEquals(4, new java.util.HashSet<>(first.values()).size());
        } finally {
            pool.shutdown();
        }
    }
}
