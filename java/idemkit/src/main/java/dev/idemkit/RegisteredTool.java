package dev.idemkit;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.ObjectWriter;
import com.fasterxml.jackson.databind.introspect.BeanPropertyDefinition;
import com.fasterxml.jackson.databind.node.BigIntegerNode;
import java.lang.reflect.InaccessibleObjectException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** One {@link Tool} method: how its input binds to parameters, its policy, and its native tool. */
final class RegisteredTool {
    private enum Slot {
        NAMED,
        WHOLE_INPUT,
        CONTEXT
    }

    private static final class Param {
        final Slot slot;
        final String name;
        final JavaType type;
        final Class<?> raw;

        Param(Slot slot, String name, JavaType type, Class<?> raw) {
            this.slot = slot;
            this.name = name;
            this.type = type;
            this.raw = raw;
        }
    }

    final String name;
    final String description;
    final Object target;
    final Method method;
    final IdempotencyHint hint;
    final KeyStrategy strategy;
    final IdempotencyKeySupplier supplier;
    final IdempotentInvoker.NativeTool nativeTool;
    final IdempotentInvoker.ResultCodec codec;
    final JavaType returnType;
    private final Param[] params;
    private final Set<String> names;
    private final boolean wholeInput;
    private final ObjectMapper mapper;

    private RegisteredTool(
            String name,
            String description,
            Object target,
            Method method,
            IdempotencyHint hint,
            KeyStrategy strategy,
            IdempotencyKeySupplier supplier,
            IdempotentInvoker.NativeTool nativeTool,
            JavaType returnType,
            Param[] params,
            ObjectMapper mapper) {
        this.name = name;
        this.description = description;
        this.target = target;
        this.method = method;
        this.hint = hint;
        this.strategy = strategy;
        this.supplier = supplier;
        this.nativeTool = nativeTool;
        this.returnType = returnType;
        this.params = params;
        this.mapper = mapper;
        Set<String> named = new LinkedHashSet<>();
        boolean whole = false;
        for (Param p : params) {
            if (p.slot == Slot.NAMED) {
                named.add(p.name);
            }
            whole |= p.slot == Slot.WHOLE_INPUT;
        }
        this.names = Collections.unmodifiableSet(named);
        this.wholeInput = whole;
        this.codec =
                codec(
                        mapper,
                        returnType,
                        method.getReturnType() == void.class
                                || method.getReturnType() == Void.class);
    }

    /** How results of {@code type} cross the store ({@code isVoid}: always {@code null}). */
    static IdempotentInvoker.ResultCodec codec(ObjectMapper mapper, JavaType type, boolean isVoid) {
        ObjectWriter writer = mapper.writerFor(type);
        ObjectReader reader = mapper.readerFor(type);
        return new IdempotentInvoker.ResultCodec() {
            @Override
            public byte[] encode(Object result) throws Exception {
                return isVoid || result == null
                        ? "null".getBytes(java.nio.charset.StandardCharsets.US_ASCII)
                        : writer.writeValueAsBytes(result);
            }

            @Override
            public Object decode(byte[] answer, int offset) throws Exception {
                return isVoid ? null : reader.readValue(answer, offset, answer.length - offset);
            }

            @Override
            public String type() {
                return type.toCanonical();
            }
        };
    }

    /** Reads a {@link Tool} method and builds its native tool (the core validates the policy). */
    static RegisteredTool of(Object target, Method method, ObjectMapper mapper) {
        return of(
                target,
                method,
                method.getAnnotation(Tool.class),
                method.getAnnotation(Idempotent.class),
                mapper,
                null);
    }

    /**
     * As {@link #of(Object, Method, ObjectMapper)}, with the annotations given (tests build tools
     * by name).
     */
    static RegisteredTool of(
            Object target,
            Method method,
            Tool tool,
            Idempotent methodPolicy,
            ObjectMapper mapper,
            RetryPolicy retry) {
        return of(target, method, tool, methodPolicy, mapper, retry, null);
    }

    /**
     * As above, with the input member of each parameter given ({@code names[i]}, or {@code null}
     * for the default: its {@link ToolParam} name, else its own); a framework adapter passes the
     * names its framework publishes.
     */
    static RegisteredTool of(
            Object target,
            Method method,
            Tool tool,
            Idempotent methodPolicy,
            ObjectMapper mapper,
            RetryPolicy retry,
            String[] names) {
        String name = tool.name().isEmpty() ? method.getName() : tool.name();
        Idempotent policy = Registrar.policy(target, method, methodPolicy);
        KeyStrategy strategy = Registrar.strategy(policy);
        String where =
                "tool `"
                        + name
                        + "` ("
                        + method.getDeclaringClass().getName()
                        + "."
                        + method.getName()
                        + ")";
        makeAccessible(method, where);

        if (tool.idempotencyHint() == IdempotencyHint.REQUIRED
                && (policy == null
                        || !(strategy == KeyStrategy.HASH_INPUT || strategy == KeyStrategy.EXPLICIT)
                        || policy.ttlSeconds() <= 0)) {
            throw new IllegalStateException(
                    where
                            + " is declared idempotencyHint = REQUIRED but "
                            + (policy == null
                                    ? "has no @Idempotent policy"
                                    : policy.ttlSeconds() <= 0
                                            ? "its ttlSeconds is " + policy.ttlSeconds()
                                            : "its strategy is "
                                                    + strategy
                                                    + ", which stores no keys")
                            + "; annotate the method or its class with @Idempotent using HASH_INPUT or EXPLICIT and"
                            + " ttlSeconds > 0, or drop the hint");
        }
        IdempotencyKeySupplier supplier = Registrar.supplier(where, strategy, target);

        Parameter[] declared = method.getParameters();
        JavaType[] types = Registrar.parameterTypes(mapper, method);
        Param[] params = new Param[declared.length];
        Set<String> seen = new LinkedHashSet<>();
        int wholeCount = 0;
        for (int i = 0; i < declared.length; i++) {
            Parameter p = declared[i];
            JavaType type = types[i];
            if (p.getType() == IdempotencyContext.class) {
                params[i] = new Param(Slot.CONTEXT, null, type, p.getType());
            } else if (p.isAnnotationPresent(ToolInput.class)) {
                params[i] = new Param(Slot.WHOLE_INPUT, null, type, p.getType());
                wholeCount++;
            } else {
                String paramName =
                        names != null && names[i] != null
                                ? names[i]
                                : Registrar.parameterName(where, p, i);
                if (!seen.add(paramName)) {
                    throw new IllegalArgumentException(
                            where + " has two parameters named `" + paramName + "`");
                }
                params[i] = new Param(Slot.NAMED, paramName, type, p.getType());
            }
        }
        if (wholeCount > 1 || (wholeCount == 1 && !seen.isEmpty())) {
            throw new IllegalArgumentException(
                    where
                            + ": a @ToolInput parameter receives the whole input, so the"
                            + " tool can have no other input parameters");
        }

        // What keyArguments may name: the parameters, or a @ToolInput bean's properties.
        String[] checkable = seen.toArray(new String[0]);
        if (wholeCount == 1) {
            checkable = null;
            for (Param p : params) {
                if (p.slot == Slot.WHOLE_INPUT && isBean(p.type)) {
                    List<String> props = new ArrayList<>();
                    for (BeanPropertyDefinition d :
                            mapper.getDeserializationConfig().introspect(p.type).findProperties()) {
                        props.add(d.getName());
                    }
                    checkable = props.toArray(new String[0]);
                }
            }
        }

        JavaType returnType = mapper.getTypeFactory().constructType(method.getGenericReturnType());
        ResultTypes.requireRoundTrip(mapper, returnType, where);

        IdempotentInvoker.NativeTool nativeTool =
                Registrar.nativeTool(name, policy, tool.timeoutMs(), checkable, retry);
        return new RegisteredTool(
                name,
                tool.description(),
                target,
                method,
                tool.idempotencyHint(),
                strategy,
                supplier,
                nativeTool,
                returnType,
                params,
                mapper);
    }

    /**
     * Lets the dispatcher call the method. In a modular application the tool's package must be
     * exported, or opened to {@code dev.idemkit}; refuses, naming the module and the fix, when it
     * is not.
     */
    static void makeAccessible(Method method, String where) {
        try {
            method.setAccessible(true);
        } catch (InaccessibleObjectException closed) {
            Class<?> owner = method.getDeclaringClass();
            String pkg = owner.getPackageName();
            throw new IllegalStateException(
                    where
                            + " cannot be called by idemkit: module "
                            + owner.getModule().getName()
                            + " does not open package "
                            + pkg
                            + " to module dev.idemkit; add `opens "
                            + pkg
                            + " to dev.idemkit;` to its module-info.java (or export the package and"
                            + " make the class and method public)",
                    closed);
        }
    }

    private static boolean isBean(JavaType type) {
        Class<?> raw = type.getRawClass();
        return !(type.isContainerType()
                || JsonNode.class.isAssignableFrom(raw)
                || raw == Object.class
                || raw.isPrimitive()
                || raw.getName().startsWith("java."));
    }

    /** The input member names the tool reads (empty for a {@link ToolInput} tool). */
    Set<String> parameterNames() {
        return names;
    }

    /** Arguments from a map input (values already JSON-native). */
    Object[] bind(Map<String, Object> input, IdempotencyContext context) {
        if (!wholeInput) {
            for (String member : input.keySet()) {
                if (!names.contains(member)) {
                    throw unknown(member);
                }
            }
        }
        Object[] args = new Object[params.length];
        for (int i = 0; i < params.length; i++) {
            Param p = params[i];
            switch (p.slot) {
                case CONTEXT:
                    args[i] = context;
                    break;
                case WHOLE_INPUT:
                    args[i] = convert(p, input);
                    break;
                default:
                    Object value = input.get(p.name);
                    if (value == null && p.raw.isPrimitive()) {
                        throw missing(p);
                    }
                    args[i] = convert(p, value);
            }
        }
        return args;
    }

    /** Arguments from parsed JSON text. */
    /**
     * Before {@link #bind(JsonNode, IdempotencyContext)} of input text: a tool's own mapper may
     * read a JSON number as a {@code double} already, losing the digits the key was made of, so the
     * {@code double} and {@code float} arguments are checked on the text read exactly. Nothing to
     * do for a tool without such parameters.
     */
    void checkFloating(String jsonInput) {
        boolean any = false;
        for (Param p : params) {
            any |= p.slot != Slot.CONTEXT && FLOATING.contains(p.raw);
        }
        if (!any) {
            return;
        }
        JsonNode exact;
        try {
            exact = JsonWire.read(name, jsonInput);
        } catch (InvalidToolInputException unreadable) {
            return; // the binding itself says what is wrong with the text
        }
        for (Param p : params) {
            if (p.slot == Slot.CONTEXT || !FLOATING.contains(p.raw)) {
                continue;
            }
            JsonNode value = p.slot == Slot.WHOLE_INPUT ? exact : exact.get(p.name);
            if (value != null && value.isNumber()) {
                exactFloating(p, value);
            }
        }
    }

    Object[] bind(JsonNode input, IdempotencyContext context) {
        if (!wholeInput) {
            if (!input.isObject()) {
                throw new InvalidToolInputException(
                        "the input of `"
                                + name
                                + "` must be a JSON object with members "
                                + names
                                + "; it was "
                                + input.getNodeType(),
                        name,
                        null,
                        null);
            }
            for (Iterator<String> it = input.fieldNames(); it.hasNext(); ) {
                String member = it.next();
                if (!names.contains(member)) {
                    throw unknown(member);
                }
            }
        }
        Object[] args = new Object[params.length];
        for (int i = 0; i < params.length; i++) {
            Param p = params[i];
            switch (p.slot) {
                case CONTEXT:
                    args[i] = context;
                    break;
                case WHOLE_INPUT:
                    args[i] = read(p, input);
                    break;
                default:
                    JsonNode value = input.get(p.name);
                    if ((value == null || value.isNull()) && p.raw.isPrimitive()) {
                        throw missing(p);
                    }
                    args[i] = value == null ? null : read(p, value);
            }
        }
        return args;
    }

    private Object convert(Param p, Object value) {
        if (value == null) {
            return null;
        }
        Class<?> boxed = box(p.raw);
        if (boxed.isInstance(value) && !p.type.hasContentType()) {
            return value;
        }
        JsonNode tree;
        try {
            tree = mapper.valueToTree(value);
        } catch (IllegalArgumentException e) {
            throw Registrar.notConvertible(describe(p), name, p.type, e);
        }
        return read(p, tree);
    }

    /**
     * Reads an argument as its parameter's type, refusing lossy number conversions: a number with a
     * fraction for an integer type ({@code 12.5} for a {@code long}) at any depth. A whole number
     * written with a fraction or exponent ({@code 12.0}, {@code 1.2e1}) is its integer when it is
     * the argument itself. A number for a {@code double} or {@code float} (boxed too) must be the
     * shortest decimal of the value it becomes, compared as the key compares numbers ({@code 0.1},
     * {@code 2.0}, {@code 1e2} bind): otherwise the body would get another number than the key was
     * made of.
     */
    private Object read(Param p, JsonNode value) {
        if (INTEGRAL.contains(p.raw) && value.isNumber() && !value.isIntegralNumber()) {
            value = whole(p, value);
        } else if (FLOATING.contains(p.raw) && value.isNumber()) {
            exactFloating(p, value);
        }
        try {
            return mapper.readerFor(p.type)
                    .without(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
                    .readValue(value);
        } catch (java.io.IOException | IllegalArgumentException e) {
            throw Registrar.notConvertible(describe(p), name, p.type, e);
        }
    }

    /** The whole number a floating-point argument for an integer parameter stands for. */
    private JsonNode whole(Param p, JsonNode value) {
        BigDecimal exact = null;
        if (!value.isDouble() && !value.isFloat() || Double.isFinite(value.doubleValue())) {
            exact = value.decimalValue();
        }
        if (exact == null || exact.signum() != 0 && exact.stripTrailingZeros().scale() > 0) {
            throw new InvalidToolInputException(
                    "argument `"
                            + describe(p)
                            + "` of `"
                            + name
                            + "` is "
                            + value.asText()
                            + ", which is not a whole number, and its type "
                            + p.type.toCanonical()
                            + " holds whole numbers only; it is refused rather than rounded (send a"
                            + " whole number, or declare the parameter double or BigDecimal)",
                    name,
                    describe(p),
                    null);
        }
        return BigIntegerNode.valueOf(exact.toBigIntegerExact());
    }

    /**
     * Refuses a number that a {@code double} or {@code float} cannot hold as written: one whose
     * value, rounded to the type, has a shortest decimal of another value ({@code
     * 9007199254740993}, {@code 0.10000000000000000555}), or that overflows ({@code 1e300} for a
     * {@code float}). A Java double or float handed over in a map is its own value.
     */
    private void exactFloating(Param p, JsonNode value) {
        if (value.isDouble() || value.isFloat()) {
            return;
        }
        BigDecimal exact = value.decimalValue();
        if (exact.signum() == 0) {
            return;
        }
        boolean single = p.raw == float.class || p.raw == Float.class;
        String shortest = null;
        if (single) {
            float f = exact.floatValue();
            if (Float.isFinite(f)) {
                shortest = ShortestDecimal.of(f);
            }
        } else {
            double d = exact.doubleValue();
            if (Double.isFinite(d)) {
                shortest = ShortestDecimal.of(d);
            }
        }
        if (shortest != null && new BigDecimal(shortest).compareTo(exact) == 0) {
            return;
        }
        throw new InvalidToolInputException(
                "argument `"
                        + describe(p)
                        + "` of `"
                        + name
                        + "` is "
                        + value.asText()
                        + ", which a "
                        + p.raw.getSimpleName()
                        + (shortest == null
                                ? " cannot hold (it overflows)"
                                : " would hold as " + shortest)
                        + "; it is refused rather than rounded, so that the body gets the number the"
                        + " key was made of (send at most the digits the type holds, or declare the"
                        + " parameter BigDecimal)",
                name,
                describe(p),
                null);
    }

    private static final Set<Class<?>> FLOATING =
            Set.of(double.class, float.class, Double.class, Float.class);

    private static final Set<Class<?>> INTEGRAL =
            Set.of(
                    int.class,
                    long.class,
                    short.class,
                    byte.class,
                    Integer.class,
                    Long.class,
                    Short.class,
                    Byte.class,
                    BigInteger.class);

    private static String describe(Param p) {
        return p.name == null ? "input" : p.name;
    }

    private InvalidToolInputException unknown(String member) {
        return new InvalidToolInputException(
                "`" + name + "` has no parameter `" + member + "`; its parameters are " + names,
                name,
                member,
                null);
    }

    private InvalidToolInputException missing(Param p) {
        return new InvalidToolInputException(
                "`"
                        + name
                        + "` needs argument `"
                        + p.name
                        + "` ("
                        + p.raw.getName()
                        + "); it is missing or null",
                name,
                p.name,
                null);
    }

    /** Runs the method; its own exception comes out unchanged. */
    Object invoke(Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static Class<?> box(Class<?> c) {
        if (!c.isPrimitive()) {
            return c;
        }
        if (c == int.class) {
            return Integer.class;
        } else if (c == long.class) {
            return Long.class;
        } else if (c == boolean.class) {
            return Boolean.class;
        } else if (c == double.class) {
            return Double.class;
        } else if (c == float.class) {
            return Float.class;
        } else if (c == short.class) {
            return Short.class;
        } else if (c == byte.class) {
            return Byte.class;
        } else if (c == char.class) {
            return Character.class;
        }
        return Void.class;
    }

    @Override
    public String toString() {
        return "tool " + name + Arrays.toString(names.toArray());
    }
}
