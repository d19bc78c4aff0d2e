package dev.idemkit;

import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.ObjectWriter;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetEncoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * One {@link WebService} method: its endpoint template, where each parameter goes, its policy and
 * native tool, and how the response body reads as its declared return type. Everything that can be
 * refused is refused here, when the action is registered.
 */
final class RegisteredAction {
    private static final Pattern ABSOLUTE = Pattern.compile("^[A-Za-z][A-Za-z0-9+.-]*://.*");
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    /** How the response body becomes the declared return type. */
    enum Result { NOTHING, TEXT, BYTES, JSON }

    static final class Param {
        final String name;
        final JavaType type;
        final boolean primitive;

        Param(String name, JavaType type, boolean primitive) {
            this.name = name;
            this.type = type;
            this.primitive = primitive;
        }
    }

    /** The request of one call: everything but the headers that depend on the call's key. */
    static final class Request {
        final URI uri;
        final byte[] body;

        Request(URI uri, byte[] body) {
            this.uri = uri;
            this.body = body;
        }
    }

    final String name;
    final String description;
    final HttpMethod method;
    final ParamType paramType;
    final long timeoutMs;
    final KeyStrategy strategy;
    final IdempotencyKeySupplier supplier;
    final IdempotentInvoker.NativeTool nativeTool;
    final IdempotentInvoker.ResultCodec codec;
    final JavaType returnType;
    final Result result;
    private final ObjectReader resultReader;
    /** The endpoint cut at its placeholders: literal, name, literal, name, ..., literal. */
    private final List<String> template;
    private final boolean templateHasQuery;
    private final Map<String, Param> params;
    private final Set<String> pathNames;
    private final boolean hasBody;
    private final ObjectMapper mapper;

    private RegisteredAction(String name, String description, HttpMethod method, ParamType paramType, long timeoutMs,
            KeyStrategy strategy, IdempotencyKeySupplier supplier, IdempotentInvoker.NativeTool nativeTool,
            JavaType returnType, List<String> template, Map<String, Param> params, Set<String> pathNames,
            ObjectMapper mapper) {
        this.name = name;
        this.description = description;
        this.method = method;
        this.paramType = paramType;
        this.timeoutMs = timeoutMs;
        this.strategy = strategy;
        this.supplier = supplier;
        this.nativeTool = nativeTool;
        this.returnType = returnType;
        this.template = template;
        this.params = params;
        this.pathNames = pathNames;
        this.mapper = mapper;
        boolean query = false;
        for (int i = 0; i < template.size(); i += 2) {
            query |= template.get(i).indexOf('?') >= 0;
        }
        this.templateHasQuery = query;
        this.hasBody = paramType == ParamType.BODY && params.size() > pathNames.size();
        Class<?> raw = returnType.getRawClass();
        this.result = raw == void.class || raw == Void.class ? Result.NOTHING
                : raw == String.class ? Result.TEXT : raw == byte[].class ? Result.BYTES : Result.JSON;
        this.resultReader = mapper.readerFor(returnType);
        ObjectWriter writer = mapper.writerFor(returnType);
        boolean nothing = result == Result.NOTHING;
        this.codec = new IdempotentInvoker.ResultCodec() {
            @Override
            public byte[] encode(Object outcome) throws Exception {
                Object value = ((WebServiceResponse<?>) outcome).value();
                return nothing || value == null ? "null".getBytes(StandardCharsets.US_ASCII) : writer.writeValueAsBytes(value);
            }

            @Override
            public Object decode(byte[] answer, int offset) throws Exception {
                Object value = nothing ? null : resultReader.readValue(answer, offset, answer.length - offset);
                return WebServiceResponse.replayed(value, NativeBridge.key(answer));
            }

            @Override
            public String type() {
                return returnType.toCanonical();
            }

            @Override
            public Object value(Object outcome) {
                return ((WebServiceResponse<?>) outcome).value();
            }
        };
    }

    /**
     * Reads a {@link WebService} method and builds its native tool (the core validates the policy).
     *
     * @param baseUri what a relative endpoint is resolved against, or null
     */
    static RegisteredAction of(Object role, Method method, String baseUri, ObjectMapper mapper) {
        WebService ws = method.getAnnotation(WebService.class);
        String name = ws.name().isEmpty() ? method.getName() : ws.name();
        String where = "web-service action `" + name + "` (" + method.getDeclaringClass().getName() + "."
                + method.getName() + ")";
        Idempotent policy = method.getAnnotation(Idempotent.class);
        if (policy == null) {
            policy = method.getDeclaringClass().getAnnotation(Idempotent.class);
        }
        if (policy == null) {
            policy = role.getClass().getAnnotation(Idempotent.class);
        }
        KeyStrategy strategy = policy == null ? KeyStrategy.NONE : policy.strategy();
        IdempotencyKeySupplier supplier = null;
        if (strategy == KeyStrategy.EXPLICIT) {
            if (!(role instanceof IdempotencyKeySupplier)) {
                throw new IllegalStateException(where + " uses strategy EXPLICIT but " + role.getClass().getName()
                        + " does not implement IdempotencyKeySupplier; implement idempotencyKeyFor(input) on the"
                        + " role class, or use HASH_INPUT");
            }
            supplier = (IdempotencyKeySupplier) role;
        }

        Map<String, Param> params = new LinkedHashMap<>();
        Parameter[] declared = method.getParameters();
        java.lang.reflect.Type[] generic = method.getGenericParameterTypes();
        for (int i = 0; i < declared.length; i++) {
            Parameter p = declared[i];
            if (p.getType() == IdempotencyContext.class || p.isAnnotationPresent(ToolInput.class)) {
                throw new IllegalArgumentException(where + ": parameter " + i + " is "
                        + (p.getType() == IdempotencyContext.class ? "an IdempotencyContext" : "@ToolInput")
                        + ", but a web-service method is never run: its parameters are the request's named"
                        + " parameters only (the call's key is on WebServiceResponse.key())");
            }
            ToolParam named = p.getAnnotation(ToolParam.class);
            boolean hasName = named != null && !named.name().isEmpty();
            if (!hasName && !p.isNamePresent()) {
                throw new IllegalStateException(where + ": the name of parameter " + i + " is not known; compile"
                        + " with -parameters or annotate it with @ToolParam(name = ...)");
            }
            String paramName = hasName ? named.name() : p.getName();
            JavaType type = mapper.getTypeFactory().constructType(generic.length == declared.length ? generic[i]
                    : p.getParameterizedType());
            if (params.put(paramName, new Param(paramName, type, p.getType().isPrimitive())) != null) {
                throw new IllegalArgumentException(where + " has two parameters named `" + paramName + "`");
            }
        }

        String endpoint = ws.endpoint().trim();
        if (endpoint.isEmpty()) {
            throw new IllegalArgumentException(where + " has an empty endpoint; give a URL or a path");
        }
        if (!ABSOLUTE.matcher(endpoint).matches()) {
            if (baseUri == null) {
                throw new IllegalArgumentException(where + ": endpoint `" + endpoint + "` is relative; set"
                        + " baseUri(...) on the WebServiceExecutor builder, or give an absolute URL");
            }
            String base = baseUri.endsWith("/") ? baseUri.substring(0, baseUri.length() - 1) : baseUri;
            endpoint = base + (endpoint.startsWith("/") ? endpoint : "/" + endpoint);
        }
        List<String> template = cut(where, endpoint);
        Set<String> pathNames = new LinkedHashSet<>();
        StringBuilder probe = new StringBuilder();
        for (int i = 0; i < template.size(); i++) {
            if (i % 2 == 0) {
                probe.append(template.get(i));
                continue;
            }
            String placeholder = template.get(i);
            if (!params.containsKey(placeholder)) {
                throw new IllegalArgumentException(where + ": endpoint placeholder {" + placeholder + "} names no"
                        + " parameter; the parameters are " + params.keySet());
            }
            pathNames.add(placeholder);
            probe.append('x');
        }
        try {
            URI uri = new URI(probe.toString());
            if (!("http".equalsIgnoreCase(uri.getScheme()) || "https".equalsIgnoreCase(uri.getScheme()))
                    || uri.getHost() == null) {
                throw new java.net.URISyntaxException(probe.toString(), "not an http(s) URL with a host");
            }
            if (uri.getRawFragment() != null) {
                throw new java.net.URISyntaxException(probe.toString(), "a fragment is never sent");
            }
        } catch (java.net.URISyntaxException e) {
            throw new IllegalArgumentException(where + ": endpoint `" + endpoint + "` is not a valid URL: "
                    + e.getMessage(), e);
        }
        ParamType paramType = ws.paramType();
        if (paramType == ParamType.PATH) {
            for (String p : params.keySet()) {
                if (!pathNames.contains(p)) {
                    throw new IllegalArgumentException(where + " has paramType = PATH but its endpoint `" + endpoint
                            + "` has no placeholder {" + p + "}; add one, or use BODY or QUERY for the other"
                            + " parameters");
                }
            }
        }
        HttpMethod httpMethod = ws.method();
        if (paramType == ParamType.BODY && params.size() > pathNames.size() && !httpMethod.carriesIdempotencyKey()
                && httpMethod != HttpMethod.OPTIONS) {
            throw new IllegalArgumentException(where + " is a " + httpMethod + " with paramType = BODY, but a "
                    + httpMethod + " request has no body; use paramType = QUERY or PATH");
        }

        JavaType returnType = mapper.getTypeFactory().constructType(method.getGenericReturnType());
        Class<?> rawReturn = returnType.getRawClass();
        if (rawReturn != String.class && rawReturn != byte[].class) {
            ResultTypes.requireRoundTrip(mapper, returnType, where);
        }

        long ttl = policy == null ? NativeBridge.DEFAULT_TTL_SECONDS : policy.ttlSeconds();
        long lease = policy == null ? NativeBridge.DEFAULT_LEASE_SECONDS : policy.leaseSeconds();
        String onCacheHit = policy == null ? RetryBehavior.RETURN_CACHED.name() : policy.onCacheHit().name();
        boolean cacheFailures = policy != null && policy.cacheFailures();
        String[] keyArguments = policy == null ? new String[0] : policy.keyArguments();
        long handle = NativeBridge.toolNew(name, strategy.name(), ttl, onCacheHit, cacheFailures, keyArguments, lease,
                ws.timeoutMs(), params.keySet().toArray(new String[0]));
        IdempotentInvoker.NativeTool nativeTool = new IdempotentInvoker.NativeTool(name, strategy, ws.timeoutMs() > 0,
                handle);
        return new RegisteredAction(name, ws.description(), httpMethod, paramType, ws.timeoutMs(), strategy, supplier,
                nativeTool, returnType, Collections.unmodifiableList(template), Collections.unmodifiableMap(params),
                Collections.unmodifiableSet(pathNames), mapper);
    }

    /** Cuts {@code a/{x}/b} into {@code ["a/", "x", "/b"]}; refuses unbalanced or empty braces. */
    private static List<String> cut(String where, String endpoint) {
        List<String> parts = new ArrayList<>();
        StringBuilder literal = new StringBuilder();
        for (int i = 0; i < endpoint.length(); i++) {
            char c = endpoint.charAt(i);
            if (c == '}') {
                throw new IllegalArgumentException(where + ": endpoint `" + endpoint + "` has a `}` without its `{`"
                        + " at index " + i);
            }
            if (c != '{') {
                literal.append(c);
                continue;
            }
            int close = endpoint.indexOf('}', i + 1);
            int nested = endpoint.indexOf('{', i + 1);
            if (close < 0 || (nested >= 0 && nested < close)) {
                throw new IllegalArgumentException(where + ": endpoint `" + endpoint + "` has a `{` without its `}`"
                        + " at index " + i + "; placeholders are {name}");
            }
            String placeholder = endpoint.substring(i + 1, close);
            if (placeholder.isBlank()) {
                throw new IllegalArgumentException(where + ": endpoint `" + endpoint + "` has an empty placeholder {}"
                        + " at index " + i);
            }
            parts.add(literal.toString());
            parts.add(placeholder);
            literal.setLength(0);
            i = close;
        }
        parts.add(literal.toString());
        return parts;
    }

    /** The input member names the action accepts. */
    Set<String> parameterNames() {
        return params.keySet();
    }

    /** Whether the request has a JSON body. */
    boolean hasBody() {
        return hasBody;
    }

    /**
     * The request for this input (a JSON object as passed): refuses members that are not
     * parameters, missing path or primitive parameters, and values that do not convert to their
     * parameter's type. Nothing here touches the store.
     */
    Request request(JsonNode input) {
        if (!input.isObject()) {
            throw new IllegalArgumentException("the input of `" + name + "` must be a JSON object with members "
                    + params.keySet() + "; it was " + input.getNodeType());
        }
        for (Iterator<String> it = input.fieldNames(); it.hasNext();) {
            String member = it.next();
            if (!params.containsKey(member)) {
                throw new IllegalArgumentException("`" + name + "` has no parameter `" + member + "`; its parameters"
                        + " are " + params.keySet());
            }
        }
        for (Param p : params.values()) {
            JsonNode value = input.get(p.name);
            if (value == null || value.isNull()) {
                if (p.primitive || pathNames.contains(p.name)) {
                    throw new IllegalArgumentException("`" + name + "` needs argument `" + p.name + "` ("
                            + (pathNames.contains(p.name) ? "it fills the path" : p.type.toCanonical())
                            + "); it is missing or null");
                }
                continue;
            }
            checkFinite(p.name, value);
            try {
                mapper.readerFor(p.type).readValue(value);
            } catch (java.io.IOException | IllegalArgumentException e) {
                throw new IllegalArgumentException("argument `" + p.name + "` of `" + name + "` does not convert to "
                        + p.type.toCanonical() + ": " + e.getMessage(), e);
            }
        }

        StringBuilder uri = new StringBuilder(64);
        for (int i = 0; i < template.size(); i++) {
            if (i % 2 == 0) {
                uri.append(template.get(i));
            } else {
                String placeholder = template.get(i);
                JsonNode value = input.get(placeholder);
                if (value.isContainerNode()) {
                    throw new IllegalArgumentException("argument `" + placeholder + "` of `" + name + "` fills the"
                            + " path, so it must be a string, number or boolean; it was " + value.getNodeType());
                }
                uri.append(encode(scalar(value), placeholder));
            }
        }
        byte[] body = null;
        if (paramType == ParamType.QUERY) {
            StringBuilder query = new StringBuilder();
            for (Param p : params.values()) {
                JsonNode value = input.get(p.name);
                if (pathNames.contains(p.name) || value == null || value.isNull()) {
                    continue;
                }
                if (value.isArray()) {
                    for (JsonNode item : value) {
                        if (!item.isNull()) {
                            pair(query, p.name, item);
                        }
                    }
                } else {
                    pair(query, p.name, value);
                }
            }
            if (query.length() > 0) {
                uri.append(templateHasQuery ? '&' : '?').append(query);
            }
        } else if (hasBody) {
            ObjectNode members = mapper.getNodeFactory().objectNode();
            for (Iterator<Map.Entry<String, JsonNode>> it = input.fields(); it.hasNext();) {
                Map.Entry<String, JsonNode> member = it.next();
                if (!pathNames.contains(member.getKey())) {
                    members.set(member.getKey(), member.getValue());
                }
            }
            body = WebServiceExecutor.bodyBytes(members);
        }
        return new Request(URI.create(uri.toString()), body);
    }

    private void pair(StringBuilder query, String member, JsonNode value) {
        if (query.length() > 0) {
            query.append('&');
        }
        String text = value.isContainerNode() ? WebServiceExecutor.jsonText(value) : scalar(value);
        query.append(encode(member, member)).append('=').append(encode(text, member));
    }

    /** A scalar as text: a string as itself, a number as its JSON text (shortest for doubles), a boolean. */
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

    private void checkFinite(String member, JsonNode value) {
        if ((value.isDouble() || value.isFloat()) && !Double.isFinite(value.doubleValue())) {
            throw new IllegalArgumentException("argument `" + member + "` of `" + name + "` is " + value.doubleValue()
                    + ", which is not a JSON number");
        }
        for (JsonNode item : value) {
            checkFinite(member, item);
        }
    }

    /**
     * Percent-encodes the UTF-8 bytes of {@code text}: everything but the unreserved characters
     * ({@code A-Z a-z 0-9 - . _ ~}), so the result is one path segment or one query component
     * ({@code /}, {@code ?}, {@code &}, {@code =}, {@code +} and a space as {@code %20} included).
     */
    static String encode(String text, String member) {
        CharsetEncoder utf8 = StandardCharsets.UTF_8.newEncoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer bytes;
        try {
            bytes = utf8.encode(CharBuffer.wrap(text));
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException("argument `" + member + "` contains a lone surrogate; use whole"
                    + " characters", e);
        }
        StringBuilder out = new StringBuilder(text.length() + 8);
        while (bytes.hasRemaining()) {
            int b = bytes.get() & 0xFF;
            if ((b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || (b >= '0' && b <= '9') || b == '-' || b == '.'
                    || b == '_' || b == '~') {
                out.append((char) b);
            } else {
                out.append('%').append(HEX[b >> 4]).append(HEX[b & 0xF]);
            }
        }
        return out.toString();
    }

    /** The response body as the declared return type. */
    Object read(byte[] body, String charset) throws java.io.IOException {
        switch (result) {
            case NOTHING:
                return null;
            case TEXT:
                return new String(body, charsetOr(charset));
            case BYTES:
                return body;
            default:
                return body.length == 0 ? null : resultReader.readValue(body);
        }
    }

    /** The named charset, or UTF-8 when none is named or the name is not one the JDK knows. */
    static java.nio.charset.Charset charsetOr(String name) {
        if (name != null) {
            try {
                return java.nio.charset.Charset.forName(name);
            } catch (IllegalArgumentException unknown) {
                // fall through: UTF-8
            }
        }
        return StandardCharsets.UTF_8;
    }

    @Override
    public String toString() {
        StringBuilder endpoint = new StringBuilder();
        for (int i = 0; i < template.size(); i++) {
            endpoint.append(i % 2 == 0 ? template.get(i) : "{" + template.get(i) + "}");
        }
        return "action " + name + " " + method + " " + endpoint + " " + paramType + " " + params.keySet();
    }
}
