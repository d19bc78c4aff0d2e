package dev.idemkit;

import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.ObjectWriter;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * One {@link WebService} method: its parameters, its {@link RequestTemplate}, its policy and native
 * tool, and how the response body reads as its declared return type. Everything that can be refused
 * is refused here, when the action is registered.
 */
final class RegisteredAction {
    /** How the response body becomes the declared return type. */
    enum Result {
        NOTHING,
        TEXT,
        BYTES,
        JSON
    }

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

    final String name;
    final String description;
    final HttpMethod method;
    final ParamType paramType;
    final long timeoutMs;
    final boolean honorsKey;
    final KeyStrategy strategy;
    final IdempotencyKeySupplier supplier;
    final IdempotentInvoker.NativeTool nativeTool;
    final IdempotentInvoker.ResultCodec codec;
    final JavaType returnType;
    final Result result;
    private final ObjectReader resultReader;
    private final RequestTemplate template;
    private final Map<String, Param> params;
    private final ObjectMapper mapper;

    private RegisteredAction(
            String name,
            String description,
            HttpMethod method,
            ParamType paramType,
            long timeoutMs,
            boolean honorsKey,
            KeyStrategy strategy,
            IdempotencyKeySupplier supplier,
            IdempotentInvoker.NativeTool nativeTool,
            JavaType returnType,
            RequestTemplate template,
            Map<String, Param> params,
            ObjectMapper mapper) {
        this.name = name;
        this.description = description;
        this.method = method;
        this.paramType = paramType;
        this.timeoutMs = timeoutMs;
        this.honorsKey = honorsKey;
        this.strategy = strategy;
        this.supplier = supplier;
        this.nativeTool = nativeTool;
        this.returnType = returnType;
        this.template = template;
        this.params = params;
        this.mapper = mapper;
        Class<?> raw = returnType.getRawClass();
        this.result =
                raw == void.class || raw == Void.class
                        ? Result.NOTHING
                        : raw == String.class
                                ? Result.TEXT
                                : raw == byte[].class ? Result.BYTES : Result.JSON;
        this.resultReader = mapper.readerFor(returnType);
        ObjectWriter writer = mapper.writerFor(returnType);
        boolean nothing = result == Result.NOTHING;
        this.codec =
                new IdempotentInvoker.ResultCodec() {
                    @Override
                    public byte[] encode(Object outcome) throws Exception {
                        Object value = ((WebServiceResponse<?>) outcome).value();
                        return nothing || value == null
                                ? "null".getBytes(StandardCharsets.US_ASCII)
                                : writer.writeValueAsBytes(value);
                    }

                    @Override
                    public Object decode(byte[] answer, int offset) throws Exception {
                        Object value =
                                nothing
                                        ? null
                                        : resultReader.readValue(
                                                answer, offset, answer.length - offset);
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
     * @param contentType the executor's default {@code Content-Type} header, or null
     * @param retry how the core may resend the action's request within one call, or null
     */
    static RegisteredAction of(
            Object role,
            Method method,
            String baseUri,
            ObjectMapper mapper,
            String contentType,
            RetryPolicy retry) {
        WebService ws = method.getAnnotation(WebService.class);
        String name = ws.name().isEmpty() ? method.getName() : ws.name();
        String where =
                "web-service action `"
                        + name
                        + "` ("
                        + method.getDeclaringClass().getName()
                        + "."
                        + method.getName()
                        + ")";
        Idempotent policy = Registrar.policy(role, method, method.getAnnotation(Idempotent.class));
        KeyStrategy strategy = Registrar.strategy(policy);
        IdempotencyKeySupplier supplier = Registrar.supplier(where, strategy, role);

        Map<String, Param> params = new LinkedHashMap<>();
        Parameter[] declared = method.getParameters();
        JavaType[] types = Registrar.parameterTypes(mapper, method);
        for (int i = 0; i < declared.length; i++) {
            Parameter p = declared[i];
            if (p.getType() == IdempotencyContext.class || p.isAnnotationPresent(ToolInput.class)) {
                throw new IllegalArgumentException(
                        where
                                + ": parameter "
                                + i
                                + " is "
                                + (p.getType() == IdempotencyContext.class
                                        ? "an IdempotencyContext"
                                        : "@ToolInput")
                                + ", but a web-service method is never run: its parameters are the request's named"
                                + " parameters only (the call's key is on WebServiceResponse.key())");
            }
            String paramName = Registrar.parameterName(where, p, i);
            if (params.put(paramName, new Param(paramName, types[i], p.getType().isPrimitive()))
                    != null) {
                throw new IllegalArgumentException(
                        where + " has two parameters named `" + paramName + "`");
            }
        }

        RequestTemplate template =
                RequestTemplate.of(where, name, ws, params.keySet(), baseUri, contentType);

        JavaType returnType = mapper.getTypeFactory().constructType(method.getGenericReturnType());
        Class<?> rawReturn = returnType.getRawClass();
        if (rawReturn != String.class && rawReturn != byte[].class) {
            ResultTypes.requireRoundTrip(mapper, returnType, where);
        }

        IdempotentInvoker.NativeTool nativeTool =
                Registrar.nativeTool(
                        name,
                        policy,
                        ws.timeoutMs(),
                        params.keySet().toArray(new String[0]),
                        retry,
                        ws.honorsIdempotencyKey());
        return new RegisteredAction(
                name,
                ws.description(),
                ws.method(),
                ws.paramType(),
                ws.timeoutMs(),
                ws.honorsIdempotencyKey(),
                strategy,
                supplier,
                nativeTool,
                returnType,
                template,
                Collections.unmodifiableMap(params),
                mapper);
    }

    /** The input member names the action accepts. */
    Set<String> parameterNames() {
        return params.keySet();
    }

    /** Whether the request has a body. */
    boolean hasBody() {
        return template.hasBody();
    }

    /** The host (and port) requests go to, or null when the endpoint has none fixed. */
    String host() {
        return template.host();
    }

    /** The media type of the request body ({@link BodyEncoding}). */
    String mediaType() {
        return template.mediaType();
    }

    /**
     * The request for this input (a JSON object as passed): refuses members that are not
     * parameters, missing path or primitive parameters, and values that do not convert to their
     * parameter's type. Nothing here touches the store.
     */
    RequestTemplate.Request request(JsonNode input) {
        if (!input.isObject()) {
            throw new IllegalArgumentException(
                    "the input of `"
                            + name
                            + "` must be a JSON object with members "
                            + params.keySet()
                            + "; it was "
                            + input.getNodeType());
        }
        for (Iterator<String> it = input.fieldNames(); it.hasNext(); ) {
            String member = it.next();
            if (!params.containsKey(member)) {
                throw new IllegalArgumentException(
                        "`"
                                + name
                                + "` has no parameter `"
                                + member
                                + "`; its parameters"
                                + " are "
                                + params.keySet());
            }
        }
        for (Param p : params.values()) {
            JsonNode value = input.get(p.name);
            if (value == null || value.isNull()) {
                if (p.primitive || template.fillsPath(p.name)) {
                    throw new IllegalArgumentException(
                            "`"
                                    + name
                                    + "` needs argument `"
                                    + p.name
                                    + "` ("
                                    + (template.fillsPath(p.name)
                                            ? "it fills the path"
                                            : p.type.toCanonical())
                                    + "); it is missing or null");
                }
                continue;
            }
            checkFinite(p.name, value);
            try {
                mapper.readerFor(p.type).readValue(value);
            } catch (java.io.IOException | IllegalArgumentException e) {
                throw Registrar.notConvertible(p.name, name, p.type, e);
            }
        }

        return template.request(input);
    }

    private void checkFinite(String member, JsonNode value) {
        if ((value.isDouble() || value.isFloat()) && !Double.isFinite(value.doubleValue())) {
            throw new IllegalArgumentException(
                    "argument `"
                            + member
                            + "` of `"
                            + name
                            + "` is "
                            + value.doubleValue()
                            + ", which is not a JSON number");
        }
        for (JsonNode item : value) {
            checkFinite(member, item);
        }
    }

    /** The response body as the declared return type. */
    Object read(byte[] body, Charset charset) throws java.io.IOException {
        switch (result) {
            case NOTHING:
                return null;
            case TEXT:
                return new String(body, charset);
            case BYTES:
                return body;
            default:
                return body.length == 0 ? null : resultReader.readValue(body);
        }
    }

    @Override
    public String toString() {
        return "action " + name + " " + method + " " + template;
    }
}
