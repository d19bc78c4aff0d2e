package dev.idemkit;

import java.util.Arrays;
import java.util.List;

/**
 * Idempotency keys as every face of idemkit derives them (SPEC §2): the lowercase hex SHA-256 of
 * the canonical JSON of {@code ["idemkit/v1", tenant, run, scope, tag, data]}, computed by the Rust
 * core. No store is touched.
 *
 * <p>The key is the one a {@link ToolDispatcher} call of the tool named {@code scope} gets for the
 * same tenant, run and JSON input, and the one the Rust core, its C ABI and its CLI derive: use it
 * to name an operation in a log line, or send it upstream as an {@code Idempotency-Key} header from
 * code that does not go through a dispatcher.
 *
 * <p>Text that breaks the spec's rules (not strict JSON, a duplicate member after NFC, a lone
 * surrogate in the input or in the scope, tenant, run or key arguments, NaN, nesting deeper than
 * 64, a blank explicit key, a key argument missing from the input, a scope/tenant/run over 1,024
 * bytes) is refused with an {@link InvalidKeyException} naming the field; {@code null} where a
 * value is required throws {@link NullPointerException} naming the argument.
 */
public final class IdempotencyKeys {
    private IdempotencyKeys() {}

    /**
     * The key of a {@code HASH_INPUT} call over the whole input.
     *
     * @param scope the tool or action name (required)
     * @param tenant the tenant, or null for none ({@code ""} is a tenant, distinct from null)
     * @param run the run, or null for none (a new run is a new key)
     * @param jsonInput the input as JSON text (required; {@code "null"} for no input)
     * @return the 64 lowercase hex characters
     */
    public static String derive(String scope, String tenant, String run, String jsonInput) {
        return derive(scope, tenant, run, jsonInput, List.of());
    }

    /**
     * The key of a {@code HASH_INPUT} call whose policy names {@code keyArguments}: only those
     * members of the input object count (a member set to null is present; a missing one is
     * refused). An empty list means the whole input.
     *
     * @param scope the tool or action name (required)
     * @param tenant the tenant, or null for none ({@code ""} is a tenant, distinct from null)
     * @param run the run, or null for none (a new run is a new key)
     * @param jsonInput the input as JSON text (required); with key arguments, a JSON object
     * @param keyArguments the member names that identify the effect (required; empty: all)
     * @return the 64 lowercase hex characters
     */
    public static String derive(
            String scope, String tenant, String run, String jsonInput, List<String> keyArguments) {
        String name = required(scope, "scope", "the tool or action name");
        required(jsonInput, "jsonInput", "JSON text; \"null\" for no input");
        required(keyArguments, "keyArguments", "an empty list for the whole input");
        for (int i = 0; i < keyArguments.size(); i++) {
            required(keyArguments.get(i), "keyArguments[" + i + "]", "a member name of the input");
        }
        byte[] arguments =
                keyArguments.isEmpty() ? null : exact(JsonInput.ofValue(keyArguments, name));
        JsonInput input = JsonInput.ofText(jsonInput);
        return NativeBridge.deriveKey(
                literal(name),
                literal(tenant),
                literal(run),
                arguments,
                input.bytes,
                input.length,
                false);
    }

    /**
     * The key of an {@code EXPLICIT} call: over the key the call site supplies (what an {@link
     * IdempotencyKeySupplier} returns). A null, empty or blank key is refused with an {@link
     * InvalidKeyException}.
     *
     * @param scope the tool or action name (required)
     * @param tenant the tenant, or null for none ({@code ""} is a tenant, distinct from null)
     * @param run the run, or null for none (a new run is a new key)
     * @param explicitKey the key the call site supplies, as text
     * @return the 64 lowercase hex characters
     */
    public static String deriveExplicit(
            String scope, String tenant, String run, String explicitKey) {
        String name = required(scope, "scope", "the tool or action name");
        if (explicitKey == null) {
            throw new InvalidKeyException(
                    "invalid idempotency key for `"
                            + name
                            + "`: explicit key: it is null;"
                            + " supply a key with at least one visible character",
                    name,
                    null);
        }
        JsonInput key = JsonInput.ofString(explicitKey);
        return NativeBridge.deriveKey(
                literal(name), literal(tenant), literal(run), null, key.bytes, key.length, true);
    }

    /**
     * The payload fingerprint of a call's input (SPEC v1.1 rule 9): the lowercase hex SHA-256 of
     * the canonical JSON (SPEC §2) of the whole input, whatever the scope, tenant, run or key
     * arguments. A record keeps it (never the input) and a repeat with another fingerprint is
     * refused with {@link PayloadMismatchException}.
     *
     * @param jsonInput the input as JSON text (required)
     * @return the 64 lowercase hex characters
     */
    public static String fingerprint(String jsonInput) {
        required(jsonInput, "jsonInput", "JSON text");
        JsonInput input = JsonInput.ofText(jsonInput);
        return NativeBridge.fingerprint(input.bytes, input.length);
    }

    private static <T> T required(T value, String argument, String what) {
        if (value == null) {
            throw new NullPointerException(
                    "IdempotencyKeys: " + argument + " is null; pass " + what);
        }
        return value;
    }

    /** {@code s} as a JSON string literal (non-ASCII escaped), or null. */
    private static byte[] literal(String s) {
        return s == null ? null : exact(JsonInput.ofString(s));
    }

    private static byte[] exact(JsonInput json) {
        return Arrays.copyOf(json.bytes, json.length);
    }
}
