package dev.idemkit;

import java.util.Map;

/**
 * Supplies the key of an {@link KeyStrategy#EXPLICIT} tool's call; implemented by the class that
 * declares the tool. Called once per call, with the call's input. A null, empty or blank key (only
 * Unicode White_Space) fails the call with {@link InvalidKeyException} and runs nothing.
 */
@FunctionalInterface
public interface IdempotencyKeySupplier {
    /**
     * The key of one call: the same for every call that must have one effect.
     *
     * @param input the call's input by member name, as JSON-native values (maps, lists, strings,
     *     numbers, booleans, nulls)
     * @return the key text; the core digests it with the tool name, tenant and run
     */
    String idempotencyKeyFor(Map<String, Object> input);
}
