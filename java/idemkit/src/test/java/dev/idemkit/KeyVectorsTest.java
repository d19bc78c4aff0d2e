package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The key vectors (SPEC §2, tests/vectors/keys-v1.json) from Java: the public {@link
 * IdempotencyKeys} gives each vector's key from its JSON text, and so does the dispatcher (the key
 * seen through {@link IdempotencyContext} inside a tool named as the vector's scope); refusals
 * throw {@link InvalidKeyException} on both. {@code native_numbers} from real doubles and floats,
 * through the dispatcher.
 */
class KeyVectorsTest {
    /** A tool that records the key it ran under. */
    static class Probe implements IdempotencyKeySupplier {
        volatile String key;

        public Object probe(@ToolInput JsonNode input, IdempotencyContext context) {
            key = context.key();
            return null;
        }

        @Override
        public String idempotencyKeyFor(Map<String, Object> input) {
            return (String) input.get("k");
        }
    }

    static JsonNode vectors() throws IOException {
        String override = System.getenv("IDEMKIT_VECTORS");
        String fallback = System.getenv("IDEMKIT_VECTORS_DEFAULT");
        Path path =
                Path.of(
                        override != null && !override.isEmpty()
                                ? override
                                : fallback != null ? fallback : "../../tests/vectors/keys-v1.json");
        assertTrue(
                Files.exists(path),
                "the key vectors are missing at "
                        + path.toAbsolutePath()
                        + " (set IDEMKIT_VECTORS); they are the contract, so this fails rather than skips");
        return new ObjectMapper().readTree(path.toFile());
    }

    private static final Method PROBE;

    static {
        try {
            PROBE = Probe.class.getMethod("probe", JsonNode.class, IdempotencyContext.class);
        } catch (NoSuchMethodException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    static String text(JsonNode node, String field) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? null : v.asText();
    }

    /** Runs the probe tool on a fresh store; answers the key, or throws what the call threw. */
    static String keyOf(
            String scope,
            String tenant,
            String run,
            KeyStrategy strategy,
            String[] keyArguments,
            java.util.function.Function<ToolDispatcher, Object> call) {
        Probe probe = new Probe();
        try (InMemoryIdempotencyStore store = new InMemoryIdempotencyStore()) {
            ToolDispatcher dispatcher =
                    ToolDispatcher.builder()
                            .tool(
                                    probe,
                                    PROBE,
                                    Annotations.tool(scope),
                                    Annotations.idempotent(strategy, keyArguments))
                            .store(store)
                            .tenant(tenant)
                            .run(run)
                            .build();
            call.apply(dispatcher);
            assertNotNull(probe.key, "the body did not run");
            return probe.key;
        }
    }

    @TestFactory
    Stream<DynamicTest> every_vector_gives_its_key_or_is_refused() throws IOException {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode v : vectors().get("vectors")) {
            tests.add(
                    DynamicTest.dynamicTest(
                            v.get("name").asText(),
                            () -> {
                                KeyStrategy strategy =
                                        KeyStrategy.valueOf(v.get("strategy").asText());
                                List<String> args = new ArrayList<>();
                                if (v.has("key_arguments")) {
                                    v.get("key_arguments").forEach(a -> args.add(a.asText()));
                                }
                                String scope = v.get("scope").asText();
                                java.util.function.Function<ToolDispatcher, Object> call =
                                        strategy == KeyStrategy.EXPLICIT
                                                ? d ->
                                                        d.call(
                                                                scope,
                                                                Map.of(
                                                                        "k",
                                                                        v.get("explicit_key")
                                                                                .asText()))
                                                : d -> d.call(scope, v.get("input").asText());
                                String tenant = text(v, "tenant");
                                String run = text(v, "run");
                                java.util.function.Supplier<String> derive =
                                        () ->
                                                keyOf(
                                                        scope,
                                                        tenant,
                                                        run,
                                                        strategy,
                                                        args.toArray(new String[0]),
                                                        call);
                                java.util.function.Supplier<String> publicCall =
                                        strategy == KeyStrategy.EXPLICIT
                                                ? () ->
                                                        IdempotencyKeys.deriveExplicit(
                                                                scope,
                                                                tenant,
                                                                run,
                                                                v.get("explicit_key").asText())
                                                : () ->
                                                        IdempotencyKeys.derive(
                                                                scope,
                                                                tenant,
                                                                run,
                                                                v.get("input").asText(),
                                                                args);
                                if (v.path("error").asBoolean(false)) {
                                    InvalidKeyException e =
                                            assertThrows(
                                                    InvalidKeyException.class, publicCall::get);
                                    assertEquals(ErrorKind.INVALID_KEY, e.kind());
                                    assertEquals(scope, e.tool());
                                    e =
                                            assertThrows(
                                                    InvalidKeyException.class,
                                                    derive::get,
                                                    "through a dispatcher");
                                    assertEquals(ErrorKind.INVALID_KEY, e.kind());
                                } else {
                                    assertEquals(v.get("key").asText(), publicCall.get());
                                    assertEquals(
                                            v.get("key").asText(),
                                            derive.get(),
                                            "through a dispatcher");
                                }
                            }));
        }
        return tests.stream();
    }

    /** SPEC v1.1 rule 9: every {@code fingerprints} vector gives its fingerprint. */
    @TestFactory
    Stream<DynamicTest> every_fingerprint_vector_gives_its_fingerprint() throws IOException {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode v : vectors().get("fingerprints")) {
            tests.add(
                    DynamicTest.dynamicTest(
                            v.get("name").asText(),
                            () ->
                                    assertEquals(
                                            v.get("fingerprint").asText(),
                                            IdempotencyKeys.fingerprint(v.get("input").asText()))));
        }
        if (tests.isEmpty()) {
            throw new AssertionError("the vectors file has no fingerprints");
        }
        return tests.stream();
    }

    @TestFactory
    Stream<DynamicTest> native_numbers_from_real_doubles_and_floats() throws IOException {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode v : vectors().get("native_numbers")) {
            tests.add(
                    DynamicTest.dynamicTest(
                            v.get("name").asText(),
                            () -> {
                                long bits =
                                        Long.parseUnsignedLong(
                                                v.get("bits").asText().substring(2), 16);
                                Object value =
                                        v.get("type").asText().equals("f64")
                                                ? (Object) Double.longBitsToDouble(bits)
                                                : (Object) Float.intBitsToFloat((int) bits);
                                java.util.Map<String, Object> input = new java.util.HashMap<>();
                                input.put(v.get("member").asText(), value);
                                java.util.function.Supplier<String> derive =
                                        () ->
                                                keyOf(
                                                        v.get("scope").asText(),
                                                        null,
                                                        null,
                                                        KeyStrategy.HASH_INPUT,
                                                        new String[0],
                                                        d ->
                                                                d.call(
                                                                        v.get("scope").asText(),
                                                                        input));
                                if (v.path("error").asBoolean(false)) {
                                    InvalidKeyException e =
                                            assertThrows(InvalidKeyException.class, derive::get);
                                    assertTrue(e.getMessage().contains("input.x"), e.getMessage());
                                } else {
                                    assertEquals(
                                            v.get("key").asText(),
                                            derive.get(),
                                            "decimal " + v.get("decimal").asText());
                                }
                            }));
        }
        return tests.stream();
    }

    @Test
    void native_number_decimals_are_the_shortest_round_trip_ones() throws IOException {
        for (JsonNode v : vectors().get("native_numbers")) {
            if (v.path("error").asBoolean(false)) {
                continue;
            }
            long bits = Long.parseUnsignedLong(v.get("bits").asText().substring(2), 16);
            String written =
                    v.get("type").asText().equals("f64")
                            ? ShortestDecimal.of(Double.longBitsToDouble(bits))
                            : ShortestDecimal.of(Float.intBitsToFloat((int) bits));
            assertEquals(
                    0,
                    new java.math.BigDecimal(v.get("decimal").asText())
                            .compareTo(new java.math.BigDecimal(written)),
                    v.get("name").asText() + ": wrote " + written);
        }
    }
}
