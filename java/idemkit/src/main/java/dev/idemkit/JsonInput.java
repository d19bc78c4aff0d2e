package dev.idemkit;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;

/**
 * The input as it crosses into native code: JSON text as UTF-8 with every non-ASCII character
 * escaped as {@code \\uXXXX}, so a lone surrogate reaches the core's parser and is refused there.
 *
 * <p>From a {@code Map}, only JSON-native values are written (SPEC §7); anything else is refused
 * with {@link InvalidKeyException} naming the member. Doubles and floats are written as their
 * shortest round-trip decimal, {@code BigDecimal}/{@code BigInteger} exactly. Nothing here decides
 * what is equal: canonical form and hashing happen in the core.
 */
final class JsonInput {
    /**
     * Deeper than the core's limit (64) by one: the core then refuses the input with its own
     * message.
     */
    private static final int WRITE_DEPTH = 65;

    private static final byte[] HEX =
            "0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    byte[] bytes;
    int length;

    private JsonInput(int capacity) {
        bytes = new byte[capacity];
    }

    /** The map (or any JSON-native value) written as JSON. */
    static JsonInput ofValue(Object input, String tool) {
        JsonInput out = new JsonInput(128);
        try {
            out.value(input, 0);
        } catch (NotJson e) {
            throw new InvalidKeyException(
                    "invalid idempotency key for `"
                            + tool
                            + "`: "
                            + e.path("input")
                            + ": "
                            + e.getMessage(),
                    tool,
                    null);
        }
        return out;
    }

    /** JSON text as the caller gave it, with non-ASCII characters escaped. */
    static JsonInput ofText(String json) {
        JsonInput out = new JsonInput(json.length() + 16);
        int backslashes = 0;
        for (int i = 0, n = json.length(); i < n; i++) {
            char c = json.charAt(i);
            if (c < 0x80) {
                out.put((byte) c);
                backslashes = c == '\\' ? backslashes + 1 : 0;
            } else if ((backslashes & 1) == 1) {
                // `\` before a non-ASCII character is an invalid escape: keep it invalid (escaping
                // the character would turn it into the valid escape `\\`).
                out.putUtf8(c);
                backslashes = 0;
            } else {
                out.escape(c);
                backslashes = 0;
            }
        }
        return out;
    }

    /** A string as a JSON string literal (an explicit key). */
    static JsonInput ofString(String s) {
        JsonInput out = new JsonInput(s.length() + 8);
        out.string(s);
        return out;
    }

    private void ensure(int more) {
        if (length + more > bytes.length) {
            bytes = java.util.Arrays.copyOf(bytes, Math.max(bytes.length * 2, length + more));
        }
    }

    private void put(byte b) {
        if (length == bytes.length) {
            ensure(1);
        }
        bytes[length++] = b;
    }

    private void ascii(String s) {
        int n = s.length();
        ensure(n);
        for (int i = 0; i < n; i++) {
            bytes[length++] = (byte) s.charAt(i);
        }
    }

    private void escape(char c) {
        ensure(6);
        bytes[length++] = '\\';
        bytes[length++] = 'u';
        bytes[length++] = HEX[(c >> 12) & 0xF];
        bytes[length++] = HEX[(c >> 8) & 0xF];
        bytes[length++] = HEX[(c >> 4) & 0xF];
        bytes[length++] = HEX[c & 0xF];
    }

    private void putUtf8(char c) {
        String s = Character.isSurrogate(c) ? "\uFFFD" : String.valueOf(c);
        byte[] utf8 = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        ensure(utf8.length);
        System.arraycopy(utf8, 0, bytes, length, utf8.length);
        length += utf8.length;
    }

    private void string(String s) {
        ensure(s.length() + 2);
        bytes[length++] = '"';
        for (int i = 0, n = s.length(); i < n; i++) {
            char c = s.charAt(i);
            if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
                put((byte) c);
            } else if (c == '"' || c == '\\') {
                put((byte) '\\');
                put((byte) c);
            } else {
                escape(c);
            }
        }
        put((byte) '"');
    }

    private void value(Object v, int depth) {
        if (v == null) {
            ascii("null");
        } else if (v instanceof String) {
            string((String) v);
        } else if (v instanceof Boolean) {
            ascii(((Boolean) v) ? "true" : "false");
        } else if (v instanceof Integer
                || v instanceof Long
                || v instanceof Short
                || v instanceof Byte) {
            ascii(Long.toString(((Number) v).longValue()));
        } else if (v instanceof Double) {
            number((Double) v);
        } else if (v instanceof Float) {
            float f = (Float) v;
            if (Float.isFinite(f)) {
                ascii(ShortestDecimal.of(f));
            } else {
                nonFinite(f);
            }
        } else if (v instanceof BigDecimal) {
            ascii(((BigDecimal) v).toString());
        } else if (v instanceof BigInteger) {
            ascii(v.toString());
        } else if (v instanceof Map) {
            object((Map<?, ?>) v, depth + 1);
        } else if (v instanceof List) {
            array((List<?>) v, depth + 1);
        } else {
            throw new NotJson(
                    v.getClass().getName()
                            + " is not a JSON value; pass a String, Boolean, Integer, Long,"
                            + " Short, Byte, BigInteger, Float, Double, BigDecimal, null, List or Map with String keys"
                            + " (convert it first, e.g. an enum or Instant to a String)");
        }
    }

    private void number(double d) {
        if (Double.isFinite(d)) {
            ascii(ShortestDecimal.of(d));
        } else {
            nonFinite(d);
        }
    }

    /** NaN and infinities are written as their names, which the core refuses naming the member. */
    private void nonFinite(double d) {
        ascii(Double.isNaN(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity");
    }

    private void object(Map<?, ?> map, int depth) {
        if (depth > WRITE_DEPTH) {
            ascii("null");
            return;
        }
        put((byte) '{');
        boolean first = true;
        for (Map.Entry<?, ?> e : map.entrySet()) {
            Object name = e.getKey();
            if (!(name instanceof String)) {
                throw new NotJson(
                        "a member name is "
                                + (name == null ? "null" : "a " + name.getClass().getName())
                                + "; JSON member names are Strings");
            }
            if (!first) {
                put((byte) ',');
            }
            first = false;
            string((String) name);
            put((byte) ':');
            try {
                value(e.getValue(), depth);
            } catch (NotJson inner) {
                throw inner.at(new Member((String) name));
            }
        }
        put((byte) '}');
    }

    private void array(List<?> list, int depth) {
        if (depth > WRITE_DEPTH) {
            ascii("null");
            return;
        }
        put((byte) '[');
        int i = 0;
        for (Object item : list) {
            if (i > 0) {
                put((byte) ',');
            }
            try {
                value(item, depth);
            } catch (NotJson inner) {
                throw inner.at(i);
            }
            i++;
        }
        put((byte) ']');
    }

    private static final class Member {
        final String name;

        Member(String name) {
            this.name = name;
        }
    }

    /** A value that is not JSON-native, with the path to it collected as the error unwinds. */
    private static final class NotJson extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final java.util.ArrayList<Object> trail = new java.util.ArrayList<>();

        NotJson(String message) {
            super(message, null, false, false);
        }

        NotJson at(Object step) {
            trail.add(step);
            return this;
        }

        String path(String root) {
            StringBuilder path = new StringBuilder(root);
            for (int i = trail.size() - 1; i >= 0; i--) {
                Object step = trail.get(i);
                if (step instanceof Integer) {
                    path.append('[').append(step).append(']');
                } else {
                    String name = ((Member) step).name;
                    if (name.matches("[A-Za-z_$][A-Za-z0-9_$]*")) {
                        path.append('.').append(name);
                    } else {
                        JsonInput quoted = ofString(name);
                        path.append('[')
                                .append(
                                        new String(
                                                quoted.bytes,
                                                0,
                                                quoted.length,
                                                java.nio.charset.StandardCharsets.US_ASCII))
                                .append(']');
                    }
                }
            }
            return path.toString();
        }
    }
}
