package dev.idemkit;

import java.util.Map;

/**
 * What a call of a registered tool hands the core for its key (SPEC §2): the key material (the
 * input for {@code HASH_INPUT}, the supplied key for {@code EXPLICIT}, nothing otherwise), the
 * payload whose fingerprint an {@code EXPLICIT} record keeps (SPEC v1.1 rule 9: the whole input),
 * and the supplied key.
 */
record KeyMaterial(JsonInput key, JsonInput payload, String supplied) {
    private static final KeyMaterial NONE = new KeyMaterial(null, null, null);

    /** For an input given as a map of JSON-native values. */
    static KeyMaterial of(RegisteredTool tool, Map<String, Object> input) {
        switch (tool.strategy) {
            case HASH_INPUT:
                return new KeyMaterial(JsonInput.ofValue(input, tool.name), null, null);
            case EXPLICIT:
                return explicit(tool, input, JsonInput.ofValue(input, tool.name));
            default:
                return NONE;
        }
    }

    /**
     * For an input given as JSON text, hashed as given; {@code parsed} is the text's object, read
     * by the caller (needed only for {@code EXPLICIT}, to ask the supplier; else {@code null}).
     */
    static KeyMaterial ofText(RegisteredTool tool, String text, Map<String, Object> parsed) {
        switch (tool.strategy) {
            case HASH_INPUT:
                return new KeyMaterial(JsonInput.ofText(text), null, null);
            case EXPLICIT:
                return explicit(tool, parsed, JsonInput.ofText(text));
            default:
                return NONE;
        }
    }

    private static KeyMaterial explicit(
            RegisteredTool tool, Map<String, Object> input, JsonInput payload) {
        String supplied = Registrar.suppliedKey(tool.name, tool.supplier, input);
        return new KeyMaterial(JsonInput.ofString(supplied), payload, supplied);
    }
}
