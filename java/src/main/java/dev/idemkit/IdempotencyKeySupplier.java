package dev.idemkit;

import java.util.Map;

/**
 * Supplies the key of an {@link KeyStrategy#EXPLICIT} tool's call; implemented by the class that
 * declares the tool. Called once per call, with the call's input. A null, empty or blank key (only
 * Unicode White_Space) fails the call with {@link InvalidKeyException} and runs nothing.
 */
@FunctionalInterface
public interface IdempotencyKeySupplier {
    String idempotencyKeyFor(Map<String, Object> input);
}
