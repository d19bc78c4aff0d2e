package dev.idemkit;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.ref.Reference;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Calls {@link Tool} methods by name under their {@link Idempotent} policies: a retried call with
 * the same input (or the same explicit key) runs its body at most once while its record is kept,
 * and every repeat gets the remembered result or a typed {@link IdempotencyException}.
 *
 * <pre>{@code
 * ToolDispatcher dispatcher = ToolDispatcher.builder()
 *     .tools(new BookingTools())
 *     .store(store)
 *     .tenant("acme")
 *     .build();
 * Object booking = dispatcher.call("book_flight", "{\"flight\":\"BA117\",\"seat\":\"12A\"}");
 * }</pre>
 *
 * <p>The input is hashed as passed, before it is converted to parameter types. Cheap views with
 * another tenant or run come from {@link #withTenant} and {@link #withRun}. Tool methods are found
 * on the class, its superclasses and interfaces: an override that is annotated {@link Tool}
 * replaces its original, one that is not keeps the original's annotations. {@link #close()} frees
 * the native tools (and a store the builder created).
 *
 * <p><b>Thread safety.</b> A dispatcher and its views are immutable and safe to share: any number
 * of threads may call tools at once. Concurrent calls with the same key are settled by the store's
 * atomic claim (one runs the body, the others wait for its outcome or get a typed exception), not
 * by locks in Java. A tool body runs on the calling thread, so the tool object itself must be safe
 * for the concurrency its callers use. {@link #close()} may race with calls: the calls in flight
 * finish first. The {@link Builder} is not thread-safe: build on one thread, then share the
 * dispatcher.
 */
public final class ToolDispatcher implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("dev.idemkit");

    /** The registered tools, shared by every view; what they own is freed on close. */
    private static final class Registry {
        final Map<String, RegisteredTool> tools;
        final Registrar registrar;
        final ObjectMapper mapper;

        Registry(Map<String, RegisteredTool> tools, Registrar registrar, ObjectMapper mapper) {
            this.tools = tools;
            this.registrar = registrar;
            this.mapper = mapper;
        }
    }

    private final Registry registry;
    private final String tenant;
    private final String run;
    private final NativeContext context;

    private ToolDispatcher(Registry registry, String tenant, String run) {
        this.registry = registry;
        this.tenant = tenant;
        this.run = run;
        this.context = new NativeContext(tenant, run);
    }

    /**
     * Starts a dispatcher: add tool objects and, optionally, a store, tenant, run and mapper.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * The same tools and store for another tenant ({@code null}: no tenant; {@code ""} is a
     * tenant).
     *
     * @param tenant the tenant that scopes every key of the view's calls
     * @return a view sharing this dispatcher's tools, store and run; closing either closes both
     */
    public ToolDispatcher withTenant(String tenant) {
        return new ToolDispatcher(registry, Registrar.checkText("tenant", tenant), run);
    }

    /**
     * The same tools and store in another run: a new run is a new key.
     *
     * @param run the run that scopes every key of the view's calls ({@code null}: no run)
     * @return a view sharing this dispatcher's tools, store and tenant; closing either closes both
     */
    public ToolDispatcher withRun(String run) {
        return new ToolDispatcher(registry, tenant, Registrar.checkText("run", run));
    }

    /**
     * The tenant this dispatcher's keys are scoped to.
     *
     * @return the tenant, or {@code null} for none
     */
    public String tenant() {
        return tenant;
    }

    /**
     * The run this dispatcher's keys are scoped to.
     *
     * @return the run, or {@code null} for none
     */
    public String run() {
        return run;
    }

    /**
     * The store the records live in (the one given to {@link Builder#store}, or the in-memory store
     * the builder created).
     *
     * @return the store, shared by every view of this dispatcher
     */
    public IdempotencyStore store() {
        return registry.registrar.store;
    }

    /**
     * The registered tool names.
     *
     * @return the names, in registration order; unmodifiable
     */
    public Set<String> toolNames() {
        return registry.tools.keySet();
    }

    /**
     * Calls a tool with its input as a map of JSON-native values (SPEC §7); answers what the method
     * returned, or the remembered result read back as the method's declared return type.
     *
     * @param tool the tool's name ({@link Tool#name()})
     * @param input the arguments by parameter name; {@code null} is an empty input
     * @return what the body returned, or the remembered result of an earlier call with the same key
     * @throws IdempotencyException a repeat the policy refuses, a wait that timed out, an abandoned
     *     claim, an unreachable store, or a body that outlived its timeout (each subclass says
     *     whether the body ran)
     * @throws InvalidKeyException a value in the input is not JSON-native, or the key is refused
     * @throws IllegalArgumentException no such tool, or the input does not bind to its parameters
     */
    public Object call(String tool, Map<String, Object> input) {
        RegisteredTool registered = lookup(tool);
        Map<String, Object> in = input == null ? Collections.emptyMap() : input;
        KeyMaterial key = KeyMaterial.of(registered, in);
        return invoke(
                registered,
                key,
                context -> registered.invoke(bindOrRefuse(() -> registered.bind(in, context))));
    }

    /**
     * Calls a tool with its input as JSON text (what a model sends); the text is hashed as given,
     * exactly (numbers are not rounded, member order does not matter).
     *
     * @param tool the tool's name ({@link Tool#name()})
     * @param jsonInput a JSON object of the arguments by parameter name
     * @return what the body returned, or the remembered result of an earlier call with the same key
     * @throws IdempotencyException a repeat the policy refuses, a wait that timed out, an abandoned
     *     claim, an unreachable store, or a body that outlived its timeout (each subclass says
     *     whether the body ran)
     * @throws IllegalArgumentException no such tool, the text is not a JSON object, or it does not
     *     bind to the tool's parameters
     */
    public Object call(String tool, String jsonInput) {
        RegisteredTool registered = lookup(tool);
        Objects.requireNonNull(jsonInput, "jsonInput");
        // An EXPLICIT key's supplier reads the parsed input; the body binds the same parse.
        JsonNode early =
                registered.strategy == KeyStrategy.EXPLICIT ? parse(registered, jsonInput) : null;
        KeyMaterial key =
                KeyMaterial.ofText(
                        registered, jsonInput, early == null ? null : asMap(registered, early));
        return invoke(
                registered,
                key,
                context -> {
                    JsonNode node =
                            early != null
                                    ? early
                                    : bindOrRefuse(() -> parse(registered, jsonInput));
                    return registered.invoke(
                            bindOrRefuse(
                                    () -> {
                                        registered.checkFloating(jsonInput);
                                        return registered.bind(node, context);
                                    }));
                });
    }

    /**
     * {@link #call(String, Map)}, the result as {@code type}.
     *
     * @param <T> the result type
     * @param tool the tool's name
     * @param input the arguments by parameter name
     * @param type the class to read the result as (converted by the dispatcher's mapper)
     * @return the result as {@code type}
     */
    public <T> T call(String tool, Map<String, Object> input, Class<T> type) {
        return as(call(tool, input), type);
    }

    /**
     * {@link #call(String, String)}, the result as {@code type}.
     *
     * @param <T> the result type
     * @param tool the tool's name
     * @param jsonInput a JSON object of the arguments by parameter name
     * @param type the class to read the result as (converted by the dispatcher's mapper)
     * @return the result as {@code type}
     */
    public <T> T call(String tool, String jsonInput, Class<T> type) {
        return as(call(tool, jsonInput), type);
    }

    /**
     * {@link #call(String, Map)}, the result as a generic type.
     *
     * @param <T> the result type
     * @param tool the tool's name
     * @param input the arguments by parameter name
     * @param type the generic type to read the result as, e.g. {@code new
     *     TypeReference<List<Booking>>() {}}
     * @return the result as {@code type}
     */
    public <T> T call(String tool, Map<String, Object> input, TypeReference<T> type) {
        return registry.mapper.convertValue(call(tool, input), type);
    }

    /**
     * {@link #call(String, String)}, the result as a generic type.
     *
     * @param <T> the result type
     * @param tool the tool's name
     * @param jsonInput a JSON object of the arguments by parameter name
     * @param type the generic type to read the result as, e.g. {@code new
     *     TypeReference<List<Booking>>() {}}
     * @return the result as {@code type}
     */
    public <T> T call(String tool, String jsonInput, TypeReference<T> type) {
        return registry.mapper.convertValue(call(tool, jsonInput), type);
    }

    private <T> T as(Object result, Class<T> type) {
        return ResultTypes.as(registry.mapper, result, type);
    }

    private Object invoke(RegisteredTool tool, KeyMaterial key, IdempotentInvoker.Body body) {
        Registrar registrar = registry.registrar;
        registrar.enter();
        try {
            return IdempotentInvoker.invoke(
                    registrar.store,
                    tool.nativeTool,
                    context,
                    key.key(),
                    key.payload(),
                    key.supplied(),
                    body,
                    tool.codec);
        } finally {
            registrar.exit();
            Reference.reachabilityFence(registry);
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Closes the dispatcher and every view of it: later calls throw {@link IllegalStateException};
     * calls in flight finish first, then the native tools are freed, and the store too if the
     * builder created it (a store given to {@link Builder#store} is the caller's to close). Atomic
     * and safe to call twice.
     */
    @Override
    public void close() {
        registry.registrar.close();
    }

    /**
     * Whether {@link #close()} was called (on this dispatcher or any view of it).
     *
     * @return {@code true} once closed
     */
    public boolean isClosed() {
        return registry.registrar.isClosed();
    }

    private interface Binding<T> {
        T get();
    }

    private static <T> T bindOrRefuse(Binding<T> binding) {
        try {
            return binding.get();
        } catch (IllegalArgumentException refused) {
            throw new IdempotentInvoker.NotRun(refused);
        }
    }

    private RegisteredTool lookup(String tool) {
        RegisteredTool registered = registry.tools.get(tool);
        if (registered == null) {
            throw new IllegalArgumentException(
                    "no tool named `" + tool + "`; the tools are " + registry.tools.keySet());
        }
        return registered;
    }

    private JsonNode parse(RegisteredTool tool, String json) {
        return JsonWire.read(registry.mapper, tool.name, json);
    }

    private Map<String, Object> asMap(RegisteredTool tool, JsonNode node) {
        if (!node.isObject()) {
            throw new IllegalArgumentException(
                    "the input of `"
                            + tool.name
                            + "` must be a JSON object; it was "
                            + node.getNodeType());
        }
        return registry.mapper.convertValue(node, new TypeReference<Map<String, Object>>() {});
    }

    /** Builds a {@link ToolDispatcher}; {@link #build()} registers and validates every tool. */
    public static final class Builder {
        private final List<Object> tools = new ArrayList<>();
        private final List<Object[]> explicitTools = new ArrayList<>();
        private IdempotencyStore store;
        private String tenant;
        private String run;
        private ObjectMapper mapper;
        private RetryPolicy retry;
        private final List<IdempotencyListener> listeners = new ArrayList<>();

        private Builder() {}

        /**
         * Objects whose {@link Tool} methods are registered.
         *
         * @param objects instances whose class (or its superclasses and interfaces) has {@link
         *     Tool} methods; each method runs on its object
         * @return this builder
         */
        public Builder tools(Object... objects) {
            for (Object o : objects) {
                tools.add(Objects.requireNonNull(o, "tool object"));
            }
            return this;
        }

        /**
         * Registers one method as a tool with these annotations instead of its own (for tests and
         * generated tools).
         */
        Builder tool(Object target, Method method, Tool tool, Idempotent policy) {
            explicitTools.add(new Object[] {target, method, tool, policy});
            return this;
        }

        /**
         * Where records live; default a new {@link InMemoryIdempotencyStore} owned by the
         * dispatcher.
         *
         * @param store the store; it stays the caller's to close, after the dispatcher
         * @return this builder
         */
        public Builder store(IdempotencyStore store) {
            this.store = store;
            return this;
        }

        /**
         * The tenant every key is scoped to: two tenants never share a record (default none).
         *
         * @param tenant the tenant; {@code ""} is a tenant, {@code null} is none
         * @return this builder
         */
        public Builder tenant(String tenant) {
            this.tenant = Registrar.checkText("tenant", tenant);
            return this;
        }

        /**
         * The run every key is scoped to, e.g. one agent session: a new run is a new key (default
         * none).
         *
         * @param run the run, or {@code null} for none
         * @return this builder
         */
        public Builder run(String run) {
            this.run = Registrar.checkText("run", run);
            return this;
        }

        /**
         * The mapper that converts arguments and results, used as it is (default: one with the
         * java.time and JDK 8 modules, dates as ISO-8601 text, unknown members ignored).
         *
         * @param mapper the mapper; not copied, so do not reconfigure it afterwards
         * @return this builder
         */
        public Builder objectMapper(ObjectMapper mapper) {
            this.mapper = mapper;
            return this;
        }

        /**
         * Retries failed tool calls by {@code retry} (SPEC v1.1 rule 8): the core runs a failure
         * again only where the tool's effect allows it (see {@link RetryPolicy}), under the same
         * key and within the tool's {@code timeoutMs}. Default: no retries.
         *
         * @param retry the policy, or null for none
         * @return this builder
         */
        public Builder retry(RetryPolicy retry) {
            this.retry = retry;
            return this;
        }

        /**
         * Calls {@code listener} with the events of this dispatcher's tools (not of other users of
         * the same store); see {@link IdempotencyListener}.
         *
         * @param listener the listener
         * @return this builder
         */
        public Builder listener(IdempotencyListener listener) {
            listeners.add(java.util.Objects.requireNonNull(listener, "listener"));
            return this;
        }

        /**
         * Registers every tool.
         *
         * @return the dispatcher, open until {@link ToolDispatcher#close()}
         * @throws IllegalStateException a REQUIRED tool without a storing policy, EXPLICIT without
         *     a supplier
         * @throws IllegalArgumentException a policy the core refuses (TTL or lease ≤ 0, unknown
         *     keyArguments, timeoutMs ≥ lease), a duplicate tool name
         */
        public ToolDispatcher build() {
            ObjectMapper m = mapper != null ? mapper : ResultTypes.defaultMapper();
            Registrar registrar = new Registrar(store, "the tool dispatcher", null);
            Map<String, RegisteredTool> registered = new LinkedHashMap<>();
            List<Long> handles = new ArrayList<>();
            try {
                List<Object[]> all = new ArrayList<>();
                for (Object target : tools) {
                    for (Method method :
                            Registrar.annotatedMethods(target.getClass(), Tool.class)) {
                        all.add(
                                new Object[] {
                                    target,
                                    method,
                                    method.getAnnotation(Tool.class),
                                    method.getAnnotation(Idempotent.class)
                                });
                    }
                }
                all.addAll(explicitTools);
                for (Object[] t : all) {
                    RegisteredTool tool =
                            RegisteredTool.of(
                                    t[0], (Method) t[1], (Tool) t[2], (Idempotent) t[3], m, retry);
                    handles.add(tool.nativeTool.handle);
                    if (registered.putIfAbsent(tool.name, tool) != null) {
                        throw new IllegalArgumentException(
                                "two tools are named `"
                                        + tool.name
                                        + "`; tool names"
                                        + " are key scopes and must be unique");
                    }
                }
            } catch (RuntimeException refused) {
                Registrar.destroy(handles.stream().mapToLong(Long::longValue).toArray());
                registrar.close();
                throw refused;
            }
            registrar.adopt(handles.stream().mapToLong(Long::longValue).toArray());
            NativeIdempotencyStore s = registrar.store;
            if (s.inProcessOnly()) {
                List<String> required = new ArrayList<>();
                for (RegisteredTool t : registered.values()) {
                    if (t.hint == IdempotencyHint.REQUIRED) {
                        required.add(t.name);
                    }
                }
                if (!required.isEmpty()) {
                    LOG.log(
                            System.Logger.Level.WARNING,
                            "idemkit: tools {0} are idempotencyHint = REQUIRED but their"
                                    + " store is in-memory: records live in this process only, so another instance or a"
                                    + " restart runs them again. Use RedisIdempotencyStore or PostgresIdempotencyStore.",
                            required);
                }
            }
            if (!listeners.isEmpty()) {
                java.util.Set<String> names = java.util.Set.copyOf(registered.keySet());
                IdempotencyListener filtered =
                        NativeIdempotencyStore.scoped(names::contains, listeners);
                s.addListener(filtered);
                registrar.onClose(() -> s.removeListener(filtered));
            }
            return new ToolDispatcher(
                    new Registry(Collections.unmodifiableMap(registered), registrar, m),
                    tenant,
                    run);
        }
    }
}
