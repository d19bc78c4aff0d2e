package dev.idemkit;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * The JSON of call inputs and web-service requests: input text read as a tree (for actions with
 * exact numbers and duplicate members refused), a map of JSON-native values converted to one, and
 * request bodies and query values written from it (doubles as their shortest round-trip decimal).
 * Action arguments are JSON-native values, so no user mapper is involved there.
 */
final class JsonWire {
    private static final JsonMapper WIRE =
            JsonMapper.builder()
                    .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
                    .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                    .enable(StreamWriteFeature.USE_FAST_DOUBLE_WRITER)
                    .configure(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES, false)
                    .nodeFactory(JsonNodeFactory.withExactBigDecimals(true))
                    .build();

    private JsonWire() {}

    /** The input text of action {@code name} as a tree, numbers exact. */
    static JsonNode read(String name, String jsonInput) {
        return read(WIRE, name, jsonInput);
    }

    /**
     * The input text of tool or action {@code name} as a tree read by {@code mapper}; refuses
     * invalid and empty text.
     */
    static JsonNode read(ObjectMapper mapper, String name, String jsonInput) {
        JsonNode tree;
        try {
            tree = mapper.readTree(jsonInput);
        } catch (JsonProcessingException e) {
            throw new InvalidToolInputException(
                    "the input of `" + name + "` is not valid JSON: " + e.getOriginalMessage(),
                    name,
                    null,
                    e);
        }
        if (tree == null || tree.isMissingNode()) {
            throw new InvalidToolInputException(
                    "the input of `" + name + "` is empty; send a JSON object", name, null, null);
        }
        return tree;
    }

    /** A JSON object as a map of JSON-native values (what a key supplier reads). */
    static Map<String, Object> map(JsonNode object) {
        return WIRE.convertValue(object, new TypeReference<Map<String, Object>>() {});
    }

    /**
     * How deep {@code value} nests arrays/objects, counted up to {@code limit + 1} (a cyclic map
     * stops there).
     */
    static int depth(Object value, int limit) {
        if (limit < 0 || !(value instanceof Map || value instanceof List)) {
            return 0;
        }
        int deepest = 0;
        for (Object item : value instanceof Map ? ((Map<?, ?>) value).values() : (List<?>) value) {
            deepest = Math.max(deepest, depth(item, limit - 1));
            if (deepest >= limit) {
                break;
            }
        }
        return deepest + 1;
    }

    /**
     * A value of JSON-native values (already checked by {@link JsonInput#ofValue}) as a tree,
     * numbers exact: doubles and floats as their shortest round-trip decimal (Jackson's own
     * conversion would widen {@code 0.1f} to {@code 0.10000000149011612}). Arrays and objects below
     * {@code depth} levels become null: the caller refuses such an input before it is sent.
     */
    static JsonNode tree(Object value, int depth) {
        JsonNodeFactory nodes = WIRE.getNodeFactory();
        if (value == null || depth <= 0 && (value instanceof List || value instanceof Map)) {
            return nodes.nullNode();
        } else if (value instanceof String) {
            return nodes.textNode((String) value);
        } else if (value instanceof Boolean) {
            return nodes.booleanNode((Boolean) value);
        } else if (value instanceof Double || value instanceof Float) {
            double d = ((Number) value).doubleValue();
            if (!Double.isFinite(d)) {
                return nodes.numberNode(d);
            }
            String shortest =
                    value instanceof Float
                            ? ShortestDecimal.of((Float) value)
                            : ShortestDecimal.of(d);
            return nodes.numberNode(new BigDecimal(shortest));
        } else if (value instanceof BigDecimal) {
            return nodes.numberNode((BigDecimal) value);
        } else if (value instanceof BigInteger) {
            return nodes.numberNode((BigInteger) value);
        } else if (value instanceof Number) {
            return nodes.numberNode(((Number) value).longValue());
        } else if (value instanceof List) {
            ArrayNode array = nodes.arrayNode();
            for (Object item : (List<?>) value) {
                array.add(tree(item, depth - 1));
            }
            return array;
        } else {
            ObjectNode object = nodes.objectNode();
            for (Map.Entry<?, ?> member : ((Map<?, ?>) value).entrySet()) {
                object.set((String) member.getKey(), tree(member.getValue(), depth - 1));
            }
            return object;
        }
    }

    static ObjectNode objectNode() {
        return WIRE.getNodeFactory().objectNode();
    }

    /** A request body: the JSON of {@code value} (doubles shortest). */
    static byte[] bytes(JsonNode value) {
        try {
            return WIRE.writeValueAsBytes(value);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(
                    "the input does not write as JSON: " + e.getOriginalMessage(), e);
        }
    }

    /** A nested value as JSON text (for a query parameter holding an object). */
    static String text(JsonNode value) {
        return new String(bytes(value), StandardCharsets.UTF_8);
    }
}
