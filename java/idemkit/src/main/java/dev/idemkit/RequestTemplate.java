package dev.idemkit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetEncoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The request of a {@link WebService} action: its endpoint cut at its {@code {name}} placeholders,
 * where each parameter goes ({@link ParamType}), and how a call's input becomes a URI (placeholders
 * and query components percent-encoded) and a body (a JSON object or a form, {@link BodyEncoding}).
 * Endpoints are checked when the action is registered; nothing here touches the store or the
 * network.
 */
final class RequestTemplate {
    private static final Pattern ABSOLUTE = Pattern.compile("^[A-Za-z][A-Za-z0-9+.-]*://.*");
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    /** The request of one call: everything but the headers that depend on the call's key. */
    static final class Request {
        final URI uri;
        final byte[] body;

        Request(URI uri, byte[] body) {
            this.uri = uri;
            this.body = body;
        }
    }

    private final String name;

    /** The endpoint cut at its placeholders: literal, name, literal, name, ..., literal. */
    private final List<String> parts;

    private final boolean hasQuery;
    private final List<String> parameters;
    private final Set<String> pathNames;
    private final ParamType paramType;
    private final boolean hasBody;
    private final BodyEncoding encoding;

    private RequestTemplate(
            String name,
            List<String> parts,
            List<String> parameters,
            Set<String> pathNames,
            ParamType paramType,
            BodyEncoding encoding) {
        this.name = name;
        this.encoding = encoding;
        this.parts = parts;
        this.parameters = parameters;
        this.pathNames = pathNames;
        this.paramType = paramType;
        boolean query = false;
        for (int i = 0; i < parts.size(); i += 2) {
            query |= parts.get(i).indexOf('?') >= 0;
        }
        this.hasQuery = query;
        this.hasBody = paramType == ParamType.BODY && parameters.size() > pathNames.size();
    }

    /**
     * Checks an action's endpoint against its parameters and method.
     *
     * @param where "web-service action `name` (Class.method)", for messages
     * @param baseUri what a relative endpoint is resolved against, or null
     * @param contentType the {@code Content-Type} every request carries (a default header), or null
     */
    static RequestTemplate of(
            String where,
            String name,
            WebService ws,
            Set<String> parameters,
            String baseUri,
            String contentType) {
        String endpoint = ws.endpoint().trim();
        if (endpoint.isEmpty()) {
            throw new IllegalArgumentException(
                    where + " has an empty endpoint; give a URL or a path");
        }
        if (!ABSOLUTE.matcher(endpoint).matches()) {
            if (baseUri == null) {
                throw new IllegalArgumentException(
                        where
                                + ": endpoint `"
                                + endpoint
                                + "` is relative; set"
                                + " baseUri(...) on the WebServiceExecutor builder, or give an absolute URL");
            }
            String base =
                    baseUri.endsWith("/") ? baseUri.substring(0, baseUri.length() - 1) : baseUri;
            endpoint = base + (endpoint.startsWith("/") ? endpoint : "/" + endpoint);
        }
        List<String> parts = cut(where, endpoint);
        Set<String> pathNames = new LinkedHashSet<>();
        StringBuilder probe = new StringBuilder();
        for (int i = 0; i < parts.size(); i++) {
            if (i % 2 == 0) {
                probe.append(parts.get(i));
                continue;
            }
            String placeholder = parts.get(i);
            if (!parameters.contains(placeholder)) {
                throw new IllegalArgumentException(
                        where
                                + ": endpoint placeholder {"
                                + placeholder
                                + "} names no"
                                + " parameter; the parameters are "
                                + parameters);
            }
            pathNames.add(placeholder);
            probe.append('x');
        }
        try {
            URI uri = new URI(probe.toString());
            if (!("http".equalsIgnoreCase(uri.getScheme())
                            || "https".equalsIgnoreCase(uri.getScheme()))
                    || uri.getHost() == null) {
                throw new URISyntaxException(probe.toString(), "not an http(s) URL with a host");
            }
            if (uri.getRawFragment() != null) {
                throw new URISyntaxException(probe.toString(), "a fragment is never sent");
            }
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException(
                    where + ": endpoint `" + endpoint + "` is not a valid URL: " + e.getMessage(),
                    e);
        }
        ParamType paramType = ws.paramType();
        if (paramType == ParamType.PATH) {
            for (String p : parameters) {
                if (!pathNames.contains(p)) {
                    throw new IllegalArgumentException(
                            where
                                    + " has paramType = PATH but its endpoint `"
                                    + endpoint
                                    + "` has no placeholder {"
                                    + p
                                    + "}; add one, or use BODY or QUERY for the other"
                                    + " parameters");
                }
            }
        }
        HttpMethod httpMethod = ws.method();
        if (paramType == ParamType.BODY
                && parameters.size() > pathNames.size()
                && !httpMethod.carriesIdempotencyKey()
                && httpMethod != HttpMethod.OPTIONS) {
            throw new IllegalArgumentException(
                    where
                            + " is a "
                            + httpMethod
                            + " with paramType = BODY, but a "
                            + httpMethod
                            + " request has no body; use paramType = QUERY or PATH");
        }
        BodyEncoding encoding = ws.bodyEncoding();
        if (encoding == BodyEncoding.FORM && paramType != ParamType.BODY) {
            throw new IllegalArgumentException(
                    where
                            + " has bodyEncoding = FORM but paramType = "
                            + paramType
                            + ", which sends no body; use paramType = BODY, or drop bodyEncoding");
        }
        boolean sendsBody = paramType == ParamType.BODY && parameters.size() > pathNames.size();
        if (sendsBody && contentType != null) {
            String media = contentType.split(";", 2)[0].trim();
            if (!media.equalsIgnoreCase(encoding.mediaType())) {
                throw new IllegalArgumentException(
                        where
                                + " writes its body as "
                                + encoding
                                + " ("
                                + encoding.mediaType()
                                + "), but the executor's default header Content-Type is `"
                                + contentType
                                + "`: the server would read the body wrongly. Set @WebService(bodyEncoding = "
                                + (media.equalsIgnoreCase(BodyEncoding.FORM.mediaType())
                                        ? "BodyEncoding.FORM"
                                        : "...")
                                + ") to match, or drop the Content-Type header (the executor sets it"
                                + " from the encoding)");
            }
        }
        return new RequestTemplate(
                name,
                Collections.unmodifiableList(parts),
                Collections.unmodifiableList(new ArrayList<>(parameters)),
                Collections.unmodifiableSet(pathNames),
                paramType,
                encoding);
    }

    /**
     * The endpoint's host and port ({@code api.stripe.com}), or null when a placeholder is in it.
     */
    String host() {
        String first = parts.get(0);
        if (parts.size() > 1
                && first.indexOf("://") >= 0
                && first.indexOf('/', first.indexOf("://") + 3) < 0) {
            return null;
        }
        try {
            URI uri = new URI(parts.size() > 1 ? first + "x" : first);
            return uri.getPort() < 0 ? uri.getHost() : uri.getHost() + ":" + uri.getPort();
        } catch (URISyntaxException e) {
            return null;
        }
    }

    /** The media type of the body this template writes. */
    String mediaType() {
        return encoding.mediaType();
    }

    /** Cuts {@code a/{x}/b} into {@code ["a/", "x", "/b"]}; refuses unbalanced or empty braces. */
    private static List<String> cut(String where, String endpoint) {
        List<String> parts = new ArrayList<>();
        StringBuilder literal = new StringBuilder();
        for (int i = 0; i < endpoint.length(); i++) {
            char c = endpoint.charAt(i);
            if (c == '}') {
                throw new IllegalArgumentException(
                        where
                                + ": endpoint `"
                                + endpoint
                                + "` has a `}` without its `{`"
                                + " at index "
                                + i);
            }
            if (c != '{') {
                literal.append(c);
                continue;
            }
            int close = endpoint.indexOf('}', i + 1);
            int nested = endpoint.indexOf('{', i + 1);
            if (close < 0 || (nested >= 0 && nested < close)) {
                throw new IllegalArgumentException(
                        where
                                + ": endpoint `"
                                + endpoint
                                + "` has a `{` without its `}`"
                                + " at index "
                                + i
                                + "; placeholders are {name}");
            }
            String placeholder = endpoint.substring(i + 1, close);
            if (placeholder.isBlank()) {
                throw new IllegalArgumentException(
                        where
                                + ": endpoint `"
                                + endpoint
                                + "` has an empty placeholder {}"
                                + " at index "
                                + i);
            }
            parts.add(literal.toString());
            parts.add(placeholder);
            literal.setLength(0);
            i = close;
        }
        parts.add(literal.toString());
        return parts;
    }

    /** Whether a parameter fills the path (it must then be present). */
    boolean fillsPath(String parameter) {
        return pathNames.contains(parameter);
    }

    /** Whether the request has a JSON body. */
    boolean hasBody() {
        return hasBody;
    }

    /**
     * The request for an input already checked against the parameters (a JSON object as passed).
     */
    Request request(JsonNode input) {
        StringBuilder uri = new StringBuilder(64);
        for (int i = 0; i < parts.size(); i++) {
            if (i % 2 == 0) {
                uri.append(parts.get(i));
            } else {
                String placeholder = parts.get(i);
                JsonNode value = input.get(placeholder);
                if (value.isContainerNode()) {
                    throw new IllegalArgumentException(
                            "argument `"
                                    + placeholder
                                    + "` of `"
                                    + name
                                    + "` fills the"
                                    + " path, so it must be a string, number or boolean; it was "
                                    + value.getNodeType());
                }
                uri.append(encode(scalar(value), placeholder));
            }
        }
        byte[] body = null;
        if (paramType == ParamType.QUERY) {
            StringBuilder query = new StringBuilder();
            for (String p : parameters) {
                JsonNode value = input.get(p);
                if (pathNames.contains(p) || value == null || value.isNull()) {
                    continue;
                }
                if (value.isArray()) {
                    for (JsonNode item : value) {
                        if (!item.isNull()) {
                            pair(query, p, item);
                        }
                    }
                } else {
                    pair(query, p, value);
                }
            }
            if (query.length() > 0) {
                uri.append(hasQuery ? '&' : '?').append(query);
            }
        } else if (hasBody && encoding == BodyEncoding.FORM) {
            StringBuilder form = new StringBuilder();
            for (Iterator<Map.Entry<String, JsonNode>> it = input.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> member = it.next();
                if (!pathNames.contains(member.getKey())) {
                    formPairs(form, member.getKey(), member.getValue(), member.getKey());
                }
            }
            body = form.toString().getBytes(StandardCharsets.US_ASCII);
        } else if (hasBody) {
            ObjectNode members = JsonWire.objectNode();
            for (Iterator<Map.Entry<String, JsonNode>> it = input.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> member = it.next();
                if (!pathNames.contains(member.getKey())) {
                    members.set(member.getKey(), member.getValue());
                }
            }
            body = JsonWire.bytes(members);
        }
        return new Request(URI.create(uri.toString()), body);
    }

    /**
     * One member as form pairs: a scalar as {@code name=value}, an object as {@code
     * name[member]=...}, a list as {@code name[0]=...} (Stripe's convention), a null left out.
     */
    private static void formPairs(StringBuilder form, String name, JsonNode value, String member) {
        if (value == null || value.isNull()) {
            return;
        }
        if (value.isObject()) {
            for (Iterator<Map.Entry<String, JsonNode>> it = value.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> inner = it.next();
                formPairs(form, name + "[" + inner.getKey() + "]", inner.getValue(), member);
            }
            return;
        }
        if (value.isArray()) {
            int i = 0;
            for (JsonNode item : value) {
                formPairs(form, name + "[" + i++ + "]", item, member);
            }
            return;
        }
        if (form.length() > 0) {
            form.append('&');
        }
        form.append(encode(name, member)).append('=').append(encode(scalar(value), member));
    }

    private static void pair(StringBuilder query, String member, JsonNode value) {
        if (query.length() > 0) {
            query.append('&');
        }
        String text = value.isContainerNode() ? JsonWire.text(value) : scalar(value);
        query.append(encode(member, member)).append('=').append(encode(text, member));
    }

    /**
     * A scalar as text: a string as itself, a number as its JSON text (shortest for doubles), a
     * boolean.
     */
    private static String scalar(JsonNode value) {
        if (value.isTextual()) {
            return value.textValue();
        }
        if (value.isDouble()) {
            return ShortestDecimal.of(value.doubleValue());
        }
        if (value.isFloat()) {
            return ShortestDecimal.of(value.floatValue());
        }
        if (value.isBigDecimal()) {
            return value.decimalValue().toString();
        }
        return value.asText();
    }

    /**
     * Percent-encodes the UTF-8 bytes of {@code text}: everything but the unreserved characters
     * ({@code A-Z a-z 0-9 - . _ ~}), so the result is one path segment or one query component
     * ({@code /}, {@code ?}, {@code &}, {@code =}, {@code +} and a space as {@code %20} included).
     */
    static String encode(String text, String member) {
        CharsetEncoder utf8 =
                StandardCharsets.UTF_8
                        .newEncoder()
                        .onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer bytes;
        try {
            bytes = utf8.encode(CharBuffer.wrap(text));
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException(
                    "argument `"
                            + member
                            + "` contains a lone surrogate; use whole"
                            + " characters",
                    e);
        }
        StringBuilder out = new StringBuilder(text.length() + 8);
        while (bytes.hasRemaining()) {
            int b = bytes.get() & 0xFF;
            if ((b >= 'A' && b <= 'Z')
                    || (b >= 'a' && b <= 'z')
                    || (b >= '0' && b <= '9')
                    || b == '-'
                    || b == '.'
                    || b == '_'
                    || b == '~') {
                out.append((char) b);
            } else {
                out.append('%').append(HEX[b >> 4]).append(HEX[b & 0xF]);
            }
        }
        return out.toString();
    }

    @Override
    public String toString() {
        StringBuilder endpoint = new StringBuilder();
        for (int i = 0; i < parts.size(); i++) {
            endpoint.append(i % 2 == 0 ? parts.get(i) : "{" + parts.get(i) + "}");
        }
        return endpoint + " " + paramType + " " + parameters;
    }
}
