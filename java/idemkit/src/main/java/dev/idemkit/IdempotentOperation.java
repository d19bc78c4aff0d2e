package dev.idemkit;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One operation made idempotent, callable from any code: "run this body under this policy, for this
 * tool name, tenant, run and JSON input, returning this type". The entry point that framework
 * adapters (LangChain4j, Spring AI) and plain service code build on; the core decides every call
 * (claim, wait, replay, refusal), as for {@link ToolDispatcher}.
 *
 * <pre>{@code
 * IdempotentOperation<Booking> bookFlight =
 *         IdempotentOperation.builder("book_flight", Booking.class).store(store).build();
 * Booking booking =
 *         bookFlight.call("acme", "conversation-42", "{\"flight\":\"BA117\"}",
 *                 context -> airline.book("BA117", context.key()));
 * }</pre>
 *
 * <p>Built {@linkplain #builder(ToolMethod) from a tool method}, {@link #call(String, String,
 * String)} binds the input to the method's parameters and runs it (an input that does not bind
 * throws {@link InvalidToolInputException} and runs nothing).
 *
 * <p>Thread-safe: call it from any number of threads; concurrent calls with one key run the body
 * once. Tenant and run are per call ({@code null}: none). {@link #close()} frees the native tool
 * (and a store the builder created); calls in flight finish first.
 *
 * @param <T> what the body returns (and a repeat reads back)
 */
public final class IdempotentOperation<T> implements AutoCloseable {
    /**
     * The work done at most once per key: runs on the calling thread.
     *
     * @param <T> what it returns
     */
    @FunctionalInterface
    public interface Body<T> {
        /**
         * Runs the work.
         *
         * @param context the call's key, tenant and run
         * @return the result, recorded as JSON for repeats
         * @throws Exception the failure, handled by the policy (released, recorded or held)
         */
        T run(IdempotencyContext context) throws Exception;
    }

    @Idempotent
    private static final class Defaults {}

    private static final Idempotent DEFAULT_POLICY = Defaults.class.getAnnotation(Idempotent.class);

    private final String name;
    private final KeyStrategy strategy;
    private final IdempotentInvoker.NativeTool nativeTool;
    private final IdempotentInvoker.ResultCodec codec;
    private final RegisteredTool tool;
    private final Registrar registrar;
    private final ObjectMapper mapper;

    /** The native tool of calls whose key comes from outside (null unless {@code outsideKeys}). */
    private final IdempotentInvoker.NativeTool outsideTool;

    private IdempotentOperation(
            String name,
            KeyStrategy strategy,
            IdempotentInvoker.NativeTool nativeTool,
            IdempotentInvoker.ResultCodec codec,
            RegisteredTool tool,
            Registrar registrar,
            ObjectMapper mapper,
            IdempotentInvoker.NativeTool outsideTool) {
        this.name = name;
        this.strategy = strategy;
        this.nativeTool = nativeTool;
        this.codec = codec;
        this.tool = tool;
        this.registrar = registrar;
        this.mapper = mapper;
        this.outsideTool = outsideTool;
    }

    /**
     * What a call answered and how: for a face that tells its caller whether an answer was
     * remembered (an MCP result's {@code _meta}).
     *
     * @param <T> the result type
     * @param value what the body returned, or the remembered result
     * @param key the call's key (64 hex digits; {@code UUID}: the generated key; {@code NONE}:
     *     {@code null})
     * @param replayed whether the value was read from a record (no body ran for this call)
     */
    public record Answer<T>(T value, String key, boolean replayed) {}

    /**
     * An operation whose body each call passes.
     *
     * @param <T> the result type
     * @param name the tool name, the scope of its keys
     * @param resultType the class results are read back as ({@code Void.class}: none)
     * @return a builder; the policy defaults to {@code @Idempotent}'s defaults (HASH_INPUT, one
     *     hour)
     */
    public static <T> Builder<T> builder(String name, Class<T> resultType) {
        Objects.requireNonNull(resultType, "resultType");
        return new Builder<>(name, null, m -> m.getTypeFactory().constructType(resultType));
    }

    /**
     * An operation whose body each call passes, with a generic result type.
     *
     * @param <T> the result type
     * @param name the tool name, the scope of its keys
     * @param resultType the type results are read back as, e.g. {@code new
     *     TypeReference<List<Booking>>() {}}
     * @return a builder
     */
    public static <T> Builder<T> builder(String name, TypeReference<T> resultType) {
        Objects.requireNonNull(resultType, "resultType");
        return new Builder<>(name, null, m -> m.getTypeFactory().constructType(resultType));
    }

    /**
     * An operation that runs a tool method: its name, policy, timeout and result type come from
     * {@code tool}; a call binds its input to the method's parameters.
     *
     * @param tool the method (see {@link ToolMethod#of})
     * @return a builder
     */
    public static Builder<Object> builder(ToolMethod tool) {
        Objects.requireNonNull(tool, "tool");
        return new Builder<>(tool.name(), tool, null);
    }

    /**
     * The tool name, the scope of the keys.
     *
     * @return the name
     */
    public String name() {
        return name;
    }

    /**
     * The key strategy of the policy.
     *
     * @return the strategy
     */
    public KeyStrategy strategy() {
        return strategy;
    }

    /**
     * The store the records live in.
     *
     * @return the store given to the builder, or the in-memory store it created
     */
    public IdempotencyStore store() {
        return registrar.store;
    }

    /**
     * Runs {@code body} at most once per key derived from the JSON text ({@code HASH_INPUT}; other
     * strategies ignore the input for the key, and {@code EXPLICIT} needs {@link #callWithKey}).
     *
     * @param tenant the tenant that scopes the key, or {@code null}
     * @param run the run that scopes the key (one conversation), or {@code null}
     * @param jsonInput the input as a JSON object's text, hashed as given
     * @param body the work
     * @return what the body returned, or the remembered result of an earlier call with the key
     * @throws IdempotencyException a repeat the policy refuses, a timeout, an abandoned claim, an
     *     unreachable store (each subclass says whether the body ran)
     */
    public T call(String tenant, String run, String jsonInput, Body<? extends T> body) {
        Objects.requireNonNull(jsonInput, "jsonInput");
        Objects.requireNonNull(body, "body");
        return invoke(
                tenant,
                run,
                new KeyMaterial(keyInput(JsonInput::ofText, jsonInput), null, null),
                body::run);
    }

    /**
     * {@link #call(String, String, String, Body)} with the input as a map of JSON-native values. An
     * operation built from a {@link ToolMethod} makes the key as its method's calls do ({@code
     * EXPLICIT} too: its supplier reads the map), and runs {@code body} instead of the method (an
     * interceptor around the method passes its own invocation).
     *
     * @param tenant the tenant, or {@code null}
     * @param run the run, or {@code null}
     * @param input the input by member name; {@code null} is empty
     * @param body the work
     * @return what the body returned, or the remembered result
     */
    public T call(String tenant, String run, Map<String, Object> input, Body<? extends T> body) {
        Objects.requireNonNull(body, "body");
        Map<String, Object> in = input == null ? Collections.emptyMap() : input;
        // Built from a tool method, the key is made as for the method's own calls (an EXPLICIT
        // key from its supplier, with the whole input as the payload).
        KeyMaterial key =
                tool != null
                        ? KeyMaterial.of(tool, in)
                        : new KeyMaterial(
                                keyInput(i -> JsonInput.ofValue(i, name), in), null, null);
        return invoke(tenant, run, key, body::run);
    }

    /**
     * Runs {@code body} at most once per explicit key (an {@code EXPLICIT} policy: an upstream
     * request id, an order number).
     *
     * @param tenant the tenant, or {@code null}
     * @param run the run, or {@code null}
     * @param key the key, at least one visible character
     * @param body the work
     * @return what the body returned, or the remembered result
     */
    public T callWithKey(String tenant, String run, String key, Body<? extends T> body) {
        Objects.requireNonNull(body, "body");
        if (strategy != KeyStrategy.EXPLICIT) {
            throw new IllegalStateException(
                    "`"
                            + name
                            + "` uses strategy "
                            + strategy
                            + "; callWithKey is for EXPLICIT"
                            + " (use call with the input instead)");
        }
        if (key == null) {
            throw new InvalidKeyException(
                    "invalid idempotency key for `"
                            + name
                            + "`: explicit key: null; supply a key with at least one visible"
                            + " character",
                    name,
                    null);
        }
        return invoke(tenant, run, new KeyMaterial(JsonInput.ofString(key), null, key), body::run);
    }

    /**
     * Runs the tool method with {@code jsonInput} bound to its parameters (an operation built from
     * a {@link ToolMethod}).
     *
     * @param tenant the tenant, or {@code null}
     * @param run the run, or {@code null}
     * @param jsonInput the arguments as a JSON object's text (what a model sends)
     * @return what the method returned ({@code null} for void), or the remembered result
     * @throws InvalidToolInputException the input does not bind to the parameters (nothing ran)
     * @throws IdempotencyException as for {@link #call(String, String, String, Body)}
     */
    @SuppressWarnings("unchecked")
    public T call(String tenant, String run, String jsonInput) {
        RegisteredTool t = requireTool();
        Objects.requireNonNull(jsonInput, "jsonInput");
        // An EXPLICIT key's supplier reads the parsed input; the body binds the same parse.
        JsonNode early = null;
        if (t.strategy == KeyStrategy.EXPLICIT) {
            early = JsonWire.read(mapper, t.name, jsonInput);
            if (!early.isObject()) {
                throw new InvalidToolInputException(
                        "the input of `" + t.name + "` must be a JSON object", t.name, null, null);
            }
        }
        KeyMaterial key =
                KeyMaterial.ofText(t, jsonInput, early == null ? null : JsonWire.map(early));
        JsonNode parsed = early;
        return (T)
                invoke(
                        tenant,
                        run,
                        key,
                        context -> {
                            JsonNode node =
                                    parsed != null
                                            ? parsed
                                            : notRun(
                                                    () -> JsonWire.read(mapper, t.name, jsonInput));
                            return t.invoke(
                                    notRun(
                                            () -> {
                                                t.checkFloating(jsonInput);
                                                return t.bind(node, context);
                                            }));
                        });
    }

    /**
     * {@link #call(String, String, String)} with the arguments as a map of JSON-native values.
     *
     * @param tenant the tenant, or {@code null}
     * @param run the run, or {@code null}
     * @param input the arguments by parameter name; {@code null} is empty
     * @return what the method returned, or the remembered result
     */
    @SuppressWarnings("unchecked")
    public T call(String tenant, String run, Map<String, Object> input) {
        RegisteredTool t = requireTool();
        Map<String, Object> in = input == null ? Collections.emptyMap() : input;
        return (T)
                invoke(
                        tenant,
                        run,
                        KeyMaterial.of(t, in),
                        context -> t.invoke(notRun(() -> t.bind(in, context))));
    }

    /**
     * {@link #call(String, String, String)}, answering also the call's key and whether the result
     * was read from a record.
     *
     * @param tenant the tenant, or {@code null}
     * @param run the run, or {@code null}
     * @param jsonInput the arguments as a JSON object's text
     * @return the answer
     * @throws InvalidToolInputException the input does not bind to the parameters (nothing ran)
     * @throws IdempotencyException as for {@link #call(String, String, String, Body)}
     */
    public Answer<T> answer(String tenant, String run, String jsonInput) {
        RegisteredTool t = requireTool();
        Objects.requireNonNull(jsonInput, "jsonInput");
        JsonNode early = t.strategy == KeyStrategy.EXPLICIT ? object(t, jsonInput) : null;
        KeyMaterial key =
                KeyMaterial.ofText(t, jsonInput, early == null ? null : JsonWire.map(early));
        return traced(nativeTool, tenant, run, key, toolBody(t, jsonInput, early));
    }

    /**
     * {@link #call(String, String, String, Body)}, answering also the call's key and whether the
     * result was read from a record.
     *
     * @param tenant the tenant, or {@code null}
     * @param run the run, or {@code null}
     * @param jsonInput the input as a JSON object's text, hashed as given
     * @param body the work
     * @return the answer
     */
    public Answer<T> answer(String tenant, String run, String jsonInput, Body<? extends T> body) {
        Objects.requireNonNull(jsonInput, "jsonInput");
        Objects.requireNonNull(body, "body");
        return traced(
                nativeTool,
                tenant,
                run,
                new KeyMaterial(keyInput(JsonInput::ofText, jsonInput), null, null),
                body::run);
    }

    /**
     * Runs the tool method under a key that comes from outside the application (an MCP client's
     * {@code _meta.idempotencyKey}, a caller's inbound {@code Idempotency-Key}), whatever the
     * policy's own strategy: the key is an explicit key scoped by the tool, tenant and run, the
     * whole input is fingerprinted, and a repeat of the key with another input is refused with
     * {@link PayloadMismatchException} (SPEC v1.2 §9 rule 1). The rest of the policy (TTL, lease,
     * effect, failures, timeout) is the operation's. Needs {@link Builder#outsideKeys()}.
     *
     * @param tenant the tenant, or {@code null}
     * @param run the run, or {@code null}
     * @param key the caller's key, at least one visible character
     * @param jsonInput the arguments as a JSON object's text
     * @return the answer
     * @throws PayloadMismatchException the key was used before with another input (nothing ran)
     * @throws IdempotencyException as for {@link #call(String, String, String, Body)}
     */
    public Answer<T> answerWithOutsideKey(String tenant, String run, String key, String jsonInput) {
        RegisteredTool t = requireTool();
        Objects.requireNonNull(jsonInput, "jsonInput");
        return traced(
                requireOutside(key),
                tenant,
                run,
                outside(key, jsonInput),
                toolBody(t, jsonInput, null));
    }

    /**
     * {@link #answerWithOutsideKey(String, String, String, String)} for an operation whose body
     * each call passes.
     *
     * @param tenant the tenant, or {@code null}
     * @param run the run, or {@code null}
     * @param key the caller's key, at least one visible character
     * @param jsonInput the call's whole input as a JSON object's text: its fingerprint is checked
     * @param body the work
     * @return the answer
     * @throws PayloadMismatchException the key was used before with another input (nothing ran)
     */
    public Answer<T> answerWithOutsideKey(
            String tenant, String run, String key, String jsonInput, Body<? extends T> body) {
        Objects.requireNonNull(jsonInput, "jsonInput");
        Objects.requireNonNull(body, "body");
        return traced(requireOutside(key), tenant, run, outside(key, jsonInput), body::run);
    }

    private IdempotentInvoker.NativeTool requireOutside(String key) {
        if (outsideTool == null) {
            throw new IllegalStateException(
                    "`"
                            + name
                            + "` takes no outside keys; build it with outsideKeys() to call it"
                            + " with a caller's key");
        }
        if (key == null) {
            throw new InvalidKeyException(
                    "invalid idempotency key for `"
                            + name
                            + "`: explicit key: null; supply a key with at least one visible"
                            + " character",
                    name,
                    null);
        }
        return outsideTool;
    }

    private static KeyMaterial outside(String key, String jsonInput) {
        return new KeyMaterial(JsonInput.ofString(key), JsonInput.ofText(jsonInput), key);
    }

    private JsonNode object(RegisteredTool t, String jsonInput) {
        JsonNode node = JsonWire.read(mapper, t.name, jsonInput);
        if (!node.isObject()) {
            throw new InvalidToolInputException(
                    "the input of `" + t.name + "` must be a JSON object", t.name, null, null);
        }
        return node;
    }

    /** Binds the JSON text (or its parse) to the method's parameters and runs it. */
    private IdempotentInvoker.Body toolBody(RegisteredTool t, String jsonInput, JsonNode parsed) {
        return context -> {
            JsonNode node =
                    parsed != null
                            ? parsed
                            : notRun(() -> JsonWire.read(mapper, t.name, jsonInput));
            return t.invoke(
                    notRun(
                            () -> {
                                t.checkFloating(jsonInput);
                                return t.bind(node, context);
                            }));
        };
    }

    @SuppressWarnings("unchecked")
    private Answer<T> traced(
            IdempotentInvoker.NativeTool with,
            String tenant,
            String run,
            KeyMaterial key,
            IdempotentInvoker.Body body) {
        IdempotentInvoker.Trace trace = new IdempotentInvoker.Trace();
        T value = (T) invoke(with, tenant, run, key, body, trace);
        return new Answer<>(value, trace.key, trace.replayed);
    }

    private interface KeyInput<I> {
        JsonInput of(I input);
    }

    /** The key material of a body call: the input for HASH_INPUT, none otherwise. */
    private <I> JsonInput keyInput(KeyInput<I> of, I input) {
        switch (strategy) {
            case HASH_INPUT:
                return of.of(input);
            case EXPLICIT:
                throw new IllegalStateException(
                        "`"
                                + name
                                + "` uses strategy EXPLICIT: pass its key with callWithKey(tenant,"
                                + " run, key, body)");
            default:
                return null;
        }
    }

    private RegisteredTool requireTool() {
        if (tool == null) {
            throw new IllegalStateException(
                    "`"
                            + name
                            + "` has no tool method to bind its input to; pass the body:"
                            + " call(tenant, run, input, body), or build the operation with"
                            + " builder(ToolMethod)");
        }
        return tool;
    }

    private interface Binding<R> {
        R get();
    }

    private static <R> R notRun(Binding<R> binding) {
        try {
            return binding.get();
        } catch (IllegalArgumentException refused) {
            throw new IdempotentInvoker.NotRun(refused);
        }
    }

    @SuppressWarnings("unchecked")
    private T invoke(String tenant, String run, KeyMaterial key, IdempotentInvoker.Body body) {
        return (T) invoke(nativeTool, tenant, run, key, body, null);
    }

    private Object invoke(
            IdempotentInvoker.NativeTool with,
            String tenant,
            String run,
            KeyMaterial key,
            IdempotentInvoker.Body body,
            IdempotentInvoker.Trace trace) {
        NativeContext context =
                new NativeContext(
                        Registrar.checkText("tenant", tenant), Registrar.checkText("run", run));
        registrar.enter();
        try {
            return IdempotentInvoker.invoke(
                    registrar.store,
                    with,
                    context,
                    key.key(),
                    key.payload(),
                    key.supplied(),
                    body,
                    codec,
                    trace);
        } finally {
            registrar.exit();
            Reference.reachabilityFence(context);
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Frees the native tool and the store if the builder created it; later calls throw {@link
     * IllegalStateException}. Calls in flight finish first. Safe to call twice.
     */
    @Override
    public void close() {
        registrar.close();
    }

    /** {@code codec}, with a repeat read back as the recorded JSON's tree. */
    private static IdempotentInvoker.ResultCodec asJson(
            IdempotentInvoker.ResultCodec codec, ObjectMapper mapper) {
        return new IdempotentInvoker.ResultCodec() {
            @Override
            public byte[] encode(Object result) throws Exception {
                return codec.encode(result);
            }

            @Override
            public String type() {
                return codec.type();
            }

            @Override
            public Object value(Object result) {
                return codec.value(result);
            }

            @Override
            public Object decode(byte[] answer, int offset) throws Exception {
                return mapper.readTree(answer, offset, answer.length - offset);
            }
        };
    }

    private interface TypeOf {
        JavaType of(ObjectMapper mapper);
    }

    /**
     * Builds an {@link IdempotentOperation}; {@link #build()} validates the policy in the core.
     *
     * @param <T> the result type
     */
    public static final class Builder<T> {
        private final String name;
        private final ToolMethod tool;
        private final TypeOf resultType;
        private Idempotent policy;
        private long timeoutMs;
        private IdempotencyStore store;
        private RetryPolicy retry;
        private ObjectMapper mapper;
        private final List<IdempotencyListener> listeners = new ArrayList<>();
        private boolean outsideKeys;
        private boolean replaysAsJson;

        private Builder(String name, ToolMethod tool, TypeOf resultType) {
            this.name = Objects.requireNonNull(name, "name");
            this.tool = tool;
            this.resultType = resultType;
            this.policy = tool != null ? tool.policy() : DEFAULT_POLICY;
            this.timeoutMs = tool != null ? tool.timeoutMs() : 0;
        }

        /**
         * The policy: an {@link Idempotent} read from a method or class ({@code
         * SomeClass.class.getAnnotation(Idempotent.class)}). Default: the tool method's, or
         * {@code @Idempotent}'s defaults.
         *
         * @param policy the policy; {@code null} is strategy {@link KeyStrategy#NONE}
         * @return this builder
         */
        public Builder<T> policy(Idempotent policy) {
            this.policy = policy;
            return this;
        }

        /**
         * A deadline for the lookup, any waiting and the body together (SPEC §3); shorter than the
         * lease.
         *
         * @param timeoutMs milliseconds, or 0 for none (the default, or the tool's)
         * @return this builder
         */
        public Builder<T> timeoutMs(long timeoutMs) {
            this.timeoutMs = timeoutMs;
            return this;
        }

        /**
         * Where records live; default a new {@link InMemoryIdempotencyStore} owned by the
         * operation.
         *
         * @param store the store; it stays the caller's to close, after the operation
         * @return this builder
         */
        public Builder<T> store(IdempotencyStore store) {
            this.store = store;
            return this;
        }

        /**
         * Retries failed calls by {@code retry} where the effect allows it (see {@link
         * RetryPolicy}).
         *
         * @param retry the policy, or {@code null} for none
         * @return this builder
         */
        public Builder<T> retry(RetryPolicy retry) {
            this.retry = retry;
            return this;
        }

        /**
         * The mapper for arguments and results (default: as {@link ToolDispatcher}'s).
         *
         * @param mapper the mapper, used as it is
         * @return this builder
         */
        public Builder<T> objectMapper(ObjectMapper mapper) {
            this.mapper = mapper;
            return this;
        }

        /**
         * Calls {@code listener} with the events of this operation's calls.
         *
         * @param listener the listener
         * @return this builder
         */
        public Builder<T> listener(IdempotencyListener listener) {
            listeners.add(Objects.requireNonNull(listener, "listener"));
            return this;
        }

        /**
         * Lets calls carry a key from outside the application ({@link
         * IdempotentOperation#answerWithOutsideKey}): a second native tool of the same name is
         * made, keyed {@code EXPLICIT} with the payload always checked (SPEC v1.2 §9 rule 1), the
         * rest of its policy this operation's.
         *
         * @return this builder
         */
        public Builder<T> outsideKeys() {
            this.outsideKeys = true;
            return this;
        }

        /**
         * Repeats answer the recorded result as a Jackson {@link JsonNode} (the JSON as recorded)
         * instead of reading it back as the tool method's result type; a call that runs the body
         * still answers what the body returned. For a face that passes results on as JSON and may
         * meet a record another face wrote in a shape of its own (an MCP server answering what a
         * Rust MCP server recorded: a whole {@code CallToolResult}). Only for an operation of a
         * tool method ({@link IdempotentOperation#builder(ToolMethod)}); an operation whose body
         * each call passes takes {@code JsonNode.class} as its result type instead.
         *
         * @return this builder
         */
        public Builder<T> replaysAsJson() {
            if (tool == null) {
                throw new IllegalStateException(
                        "`"
                                + name
                                + "`: replaysAsJson() is for an operation of a tool method; give"
                                + " this operation JsonNode.class as its result type instead");
            }
            this.replaysAsJson = true;
            return this;
        }

        /**
         * Validates the policy and makes the operation.
         *
         * @return the operation, open until {@link IdempotentOperation#close()}
         * @throws IllegalArgumentException a policy the core refuses (TTL or lease ≤ 0, unknown
         *     keyArguments, timeoutMs ≥ lease)
         * @throws IllegalStateException EXPLICIT on a tool method whose object is no {@link
         *     IdempotencyKeySupplier}
         */
        public IdempotentOperation<T> build() {
            ObjectMapper m = mapper != null ? mapper : ResultTypes.defaultMapper();
            Registrar registrar = new Registrar(store, "the operation `" + name + "`", null);
            RegisteredTool registered = null;
            IdempotentInvoker.NativeTool nativeTool = null;
            IdempotentInvoker.NativeTool outside = null;
            IdempotentInvoker.ResultCodec codec;
            try {
                if (tool != null) {
                    registered =
                            RegisteredTool.of(
                                    tool.target(),
                                    tool.method(),
                                    tool.asTool(timeoutMs),
                                    policy,
                                    m,
                                    retry,
                                    tool.memberNames());
                    nativeTool = registered.nativeTool;
                    codec = replaysAsJson ? asJson(registered.codec, m) : registered.codec;
                } else {
                    JavaType type = resultType.of(m);
                    String where = "operation `" + name + "`";
                    ResultTypes.requireRoundTrip(m, type, where);
                    nativeTool = Registrar.nativeTool(name, policy, timeoutMs, null, retry);
                    Class<?> raw = type.getRawClass();
                    codec = RegisteredTool.codec(m, type, raw == void.class || raw == Void.class);
                }
                if (outsideKeys) {
                    outside =
                            Registrar.nativeTool(
                                    nativeTool.name,
                                    OutsideKeyPolicy.of(policy),
                                    timeoutMs,
                                    null,
                                    retry);
                }
            } catch (RuntimeException refused) {
                if (nativeTool != null) {
                    Registrar.destroy(new long[] {nativeTool.handle});
                }
                registrar.close();
                throw refused;
            }
            registrar.adopt(
                    outside == null
                            ? new long[] {nativeTool.handle}
                            : new long[] {nativeTool.handle, outside.handle});
            if (!listeners.isEmpty()) {
                String toolName = nativeTool.name;
                IdempotencyListener filtered =
                        NativeIdempotencyStore.scoped(toolName::equals, listeners);
                NativeIdempotencyStore s = registrar.store;
                s.addListener(filtered);
                registrar.onClose(() -> s.removeListener(filtered));
            }
            return new IdempotentOperation<>(
                    nativeTool.name,
                    nativeTool.strategy,
                    nativeTool,
                    codec,
                    registered,
                    registrar,
                    m,
                    outside);
        }
    }
}
