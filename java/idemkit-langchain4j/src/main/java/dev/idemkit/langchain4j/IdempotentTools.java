package dev.idemkit.langchain4j;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idemkit.IdempotencyContext;
import dev.idemkit.IdempotencyException;
import dev.idemkit.IdempotencyStore;
import dev.idemkit.InvalidToolInputException;
import dev.idemkit.ToolMethod;
import dev.idemkit.adapter.ToolAdapterBuilder;
import dev.idemkit.adapter.ToolBinding;
import dev.idemkit.adapter.ToolCall;
import dev.langchain4j.agent.tool.P;
import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolMemoryId;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.agent.tool.ToolSpecifications;
import dev.langchain4j.exception.ToolExecutionException;
import dev.langchain4j.invocation.InvocationContext;
import dev.langchain4j.invocation.InvocationParameters;
import dev.langchain4j.invocation.LangChain4jManaged;
import dev.langchain4j.model.chat.request.json.JsonAnyOfSchema;
import dev.langchain4j.model.chat.request.json.JsonArraySchema;
import dev.langchain4j.model.chat.request.json.JsonObjectSchema;
import dev.langchain4j.model.chat.request.json.JsonReferenceSchema;
import dev.langchain4j.model.chat.request.json.JsonSchemaElement;
import dev.langchain4j.service.tool.AiServiceTool;
import dev.langchain4j.service.tool.DefaultToolExecutor;
import dev.langchain4j.service.tool.ToolExecutionResult;
import dev.langchain4j.service.tool.ToolExecutor;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Parameter;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;

/**
 * LangChain4j tools made idempotent: the {@code @Tool} methods (LangChain4j's {@link Tool}) of some
 * objects, each one that also carries idemkit's {@link dev.idemkit.Idempotent} (on the method or
 * its class) run at most once per key when a model calls it through {@code AiServices}; the others
 * run as LangChain4j runs them.
 *
 * <pre>{@code
 * IdempotentTools tools = IdempotentTools.builder().tools(new Flights()).store(store).build();
 * Assistant assistant =
 *         AiServices.builder(Assistant.class)
 *                 .chatModel(model)
 *                 .chatMemoryProvider(id -> MessageWindowChatMemory.withMaxMessages(20))
 *                 .tools(tools.aiServiceTools())
 *                 .build();
 * }</pre>
 *
 * <p>The key of a call is derived as for any idemkit call from the tool name, the tenant, the run
 * and the model's arguments: the run is the chat memory id ({@code @MemoryId}; LangChain4j's {@code
 * "default"} when the service has none), the tenant none, unless the builder is given others. An
 * {@link IdempotencyContext} parameter is filled in by idemkit and left out of the tool's schema.
 *
 * <p>What the model reads: the tool's result as LangChain4j writes it ({@code "Success"} for a void
 * tool, a {@code String} as it is, anything else as JSON), a repeat's remembered result the same
 * way, and an idemkit refusal as the tool error text LangChain4j sends for a failed tool: {@link
 * IdempotencyException#modelMessage()}, short and without the key, thrown as {@link
 * IdempotentToolException}. Arguments that do not bind (a member the tool has no parameter for,
 * {@code 12.5} for a {@code long}) are the tool's error text too, naming the tool, the argument and
 * the fix, so the model can correct its call and the turn goes on (nothing ran); a tool's own
 * exception is LangChain4j's {@link ToolExecutionException} with it as the cause, as LangChain4j's
 * own executor throws them. {@link Builder#modelErrorListener} tells the application of each error
 * handed over as text.
 *
 * <p>Thread-safe; {@link #close()} frees the native tools (and the store the builder created).
 */
public final class IdempotentTools implements AutoCloseable {
    /** The run of a call: the chat memory id as text ({@code null} without one). The default. */
    public static final Function<InvocationContext, String> MEMORY_ID =
            context ->
                    context == null || context.chatMemoryId() == null
                            ? null
                            : context.chatMemoryId().toString();

    /** The settings {@code AiServices.builder(...).tools(objects)} uses; see {@link #defaults}. */
    private static volatile Builder defaults;

    private final List<AiServiceTool> tools;
    private final ToolBinding binding;

    private IdempotentTools(List<AiServiceTool> tools, ToolBinding binding) {
        this.tools = Collections.unmodifiableList(tools);
        this.binding = binding;
    }

    /**
     * A builder.
     *
     * @return a builder with no tools, a new in-memory store, no tenant and the memory id as run
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Makes LangChain4j's own wiring, {@code AiServices.builder(...).tools(new Flights())}, run the
     * {@code @Idempotent} tools of those objects through idemkit, with records in {@code store}.
     * Call it once at startup; without it such a service is refused when built (never run
     * unprotected).
     *
     * @param store where the records live; it stays the caller's to close
     */
    public static void defaults(IdempotencyStore store) {
        defaults(builder().store(Objects.requireNonNull(store, "store")));
    }

    /**
     * As {@link #defaults(IdempotencyStore)}, with the tenant, run, listeners and mapper of {@code
     * settings} as well (its tools are ignored; each service's objects are its own).
     *
     * @param settings a builder with a {@link Builder#store store}; copied, so later changes to it
     *     do not count
     * @throws IllegalArgumentException when {@code settings} has no store
     */
    public static void defaults(Builder settings) {
        if (!settings.hasStore()) {
            throw new IllegalArgumentException(
                    "idemkit-langchain4j: IdempotentTools.defaults needs a store:"
                            + " IdempotentTools.defaults(IdempotentTools.builder().store(store))");
        }
        defaults = settings.copy();
    }

    /**
     * Forgets the {@link #defaults}: {@code AiServices} with {@code @Idempotent} tools are refused.
     */
    public static void clearDefaults() {
        defaults = null;
    }

    /**
     * The tools of {@code objects} with the {@link #defaults}, for the AiServices hook.
     *
     * @throws IllegalStateException naming the first idempotent tool and the fix, without defaults
     */
    static IdempotentTools fromDefaults(List<Object> objects) {
        Builder settings = defaults;
        if (settings == null) {
            Method first = null;
            for (Object o : objects) {
                for (Method m : Builder.toolMethods(o.getClass())) {
                    if (first == null && isIdempotent(o, m)) {
                        first = m;
                    }
                }
            }
            String tool =
                    first == null
                            ? "an @Idempotent tool"
                            : "tool `"
                                    + toolName(first)
                                    + "` ("
                                    + first.getDeclaringClass().getName()
                                    + "."
                                    + first.getName()
                                    + ")";
            throw new IllegalStateException(
                    "idemkit-langchain4j: "
                            + tool
                            + " is @Idempotent but no idemkit store is configured for"
                            + " AiServices.builder(...).tools(...), so it is refused rather than run"
                            + " unprotected; call IdempotentTools.defaults(store) once at startup");
        }
        return settings.copy().tools(objects.toArray()).build();
    }

    /** Whether an object has a {@code @Tool} method that carries {@code @Idempotent}. */
    static boolean hasIdempotentTool(Object object) {
        for (Method m : Builder.toolMethods(object.getClass())) {
            if (isIdempotent(object, m)) {
                return true;
            }
        }
        return false;
    }

    /** Whether a tool method has a policy, where ToolMethod looks. */
    private static boolean isIdempotent(Object object, Method m) {
        return ToolBinding.isIdempotent(object.getClass(), m);
    }

    /** The name LangChain4j gives a {@code @Tool} method. */
    static String toolName(Method method) {
        Tool annotation = method.getAnnotation(Tool.class);
        return annotation == null || annotation.name().isBlank()
                ? method.getName()
                : annotation.name();
    }

    /**
     * The tools for {@code AiServices.builder(...).tools(List<AiServiceTool>)}: specification,
     * executor and return behaviour of every {@code @Tool} method of the objects.
     *
     * @return the tools; unmodifiable
     */
    public List<AiServiceTool> aiServiceTools() {
        return tools;
    }

    /**
     * The tools as {@code AiServices.builder(...).tools(Map<ToolSpecification, ToolExecutor>)}
     * takes them (without their return behaviour; prefer {@link #aiServiceTools()}).
     *
     * @return specification to executor, in declaration order; unmodifiable
     */
    public Map<ToolSpecification, ToolExecutor> toolExecutors() {
        Map<ToolSpecification, ToolExecutor> map = new LinkedHashMap<>();
        for (AiServiceTool t : tools) {
            map.put(t.toolSpecification(), t.toolExecutor());
        }
        return Collections.unmodifiableMap(map);
    }

    /**
     * The store the records live in.
     *
     * @return the store given to the builder, or the in-memory store it created
     */
    public IdempotencyStore store() {
        return binding.store();
    }

    /**
     * Frees the native tools, and the store if the builder created it; calls in flight finish
     * first. Safe to call twice.
     */
    @Override
    public void close() {
        binding.close();
    }

    /** Builds {@link IdempotentTools}; the options it shares with every adapter are inherited. */
    public static final class Builder extends ToolAdapterBuilder<Builder, InvocationContext> {
        private Builder() {
            super(context -> null, MEMORY_ID);
        }

        @Override
        protected Builder self() {
            return this;
        }

        /** The settings without the objects. */
        private Builder copy() {
            return new Builder().copyOptions(this);
        }

        private boolean hasStore() {
            return store() != null;
        }

        /**
         * Objects whose LangChain4j {@code @Tool} methods become tools (as {@code
         * AiServices.tools(Object...)} takes them).
         *
         * @param objectsWithTools the objects
         * @return this builder
         */
        public Builder tools(Object... objectsWithTools) {
            return addObjects("objectsWithTools", objectsWithTools);
        }

        /**
         * Reads the objects' tools and validates each idempotent one's policy in the core.
         *
         * @return the tools, open until {@link IdempotentTools#close()}
         * @throws IllegalArgumentException an object without {@code @Tool} methods, a policy the
         *     core refuses, two tools with one name, or an idempotent tool with a parameter that
         *     LangChain4j fills in ({@code @ToolMemoryId}, {@code InvocationParameters}, ...) or a
         *     {@code @P(defaultValue)} (idemkit binds only the model's arguments)
         */
        public IdempotentTools build() {
            ToolBinding binding = openBinding("idemkit-langchain4j", IdempotentTools.class);
            List<AiServiceTool> tools = new ArrayList<>();
            ObjectMapper m =
                    mapper() != null ? mapper() : new ObjectMapper().findAndRegisterModules();
            try {
                for (Object object : objects()) {
                    List<Method> methods = toolMethods(object.getClass());
                    if (methods.isEmpty()) {
                        throw binding.noTools(
                                object.getClass(),
                                "LangChain4j's @Tool (dev.langchain4j.agent.tool.Tool)");
                    }
                    for (Method method : methods) {
                        AiServiceTool tool = tool(object, method, binding, m);
                        binding.claimName(tool.name());
                        tools.add(tool);
                    }
                }
            } catch (RuntimeException refused) {
                binding.close();
                throw refused;
            }
            return new IdempotentTools(tools, binding);
        }

        private AiServiceTool tool(
                Object object, Method method, ToolBinding binding, ObjectMapper m) {
            Tool annotation = method.getAnnotation(Tool.class);
            String name = annotation.name().isBlank() ? method.getName() : annotation.name();
            String description = String.join("\n", annotation.value());
            ToolMethod toolMethod =
                    ToolMethod.of(object, method, name, description, Builder::memberName);
            ToolSpecification specification = ToolSpecifications.toolSpecificationFrom(method);
            ToolExecutor executor;
            if (toolMethod.isIdempotent()) {
                refuseFrameworkParameters(binding, toolMethod);
                specification = withoutContext(specification, toolMethod);
                executor =
                        new Executor(
                                call(binding, binding.bind(toolMethod)), toolMethod.isVoid(), m);
            } else {
                executor =
                        DefaultToolExecutor.builder()
                                .object(object)
                                .originalMethod(method)
                                .methodToInvoke(method)
                                .wrapToolArgumentsExceptions(true)
                                .propagateToolExecutionExceptions(true)
                                .build();
            }
            return AiServiceTool.builder()
                    .toolSpecification(specification)
                    .toolExecutor(executor)
                    .returnBehavior(annotation.returnBehavior())
                    .build();
        }

        /** The input member LangChain4j publishes for a parameter: its {@code @P(name)}. */
        private static String memberName(Parameter p) {
            P named = p.getAnnotation(P.class);
            return named != null && !named.name().isBlank() ? named.name() : null;
        }

        private static void refuseFrameworkParameters(ToolBinding binding, ToolMethod tool) {
            for (Parameter p : tool.method().getParameters()) {
                Class<?> type = p.getType();
                String what = null;
                if (p.isAnnotationPresent(ToolMemoryId.class)) {
                    what = "LangChain4j's @ToolMemoryId";
                } else if (InvocationParameters.class.isAssignableFrom(type)
                        || type == InvocationContext.class
                        || LangChain4jManaged.class.isAssignableFrom(type)) {
                    what = "a " + type.getSimpleName() + " (LangChain4j fills it in)";
                } else if (p.isAnnotationPresent(P.class)
                        && !P.NO_DEFAULT.equals(p.getAnnotation(P.class).defaultValue())) {
                    what = "a @P(defaultValue = ...) (idemkit binds the model's arguments as sent)";
                }
                if (what != null) {
                    throw binding.refusedParameter(
                            tool,
                            p,
                            what,
                            "take an IdempotencyContext parameter instead (its run() is the"
                                    + " memory id, its tenant() the tenant), or give the default"
                                    + " in the method body");
                }
            }
        }

        /** The specification without the IdempotencyContext parameters, which idemkit fills in. */
        private static ToolSpecification withoutContext(ToolSpecification spec, ToolMethod tool) {
            Set<String> context = ToolBinding.contextMembers(tool, Builder::memberName);
            JsonObjectSchema parameters = spec.parameters();
            if (context.isEmpty() || parameters == null) {
                return spec;
            }
            Map<String, JsonSchemaElement> properties =
                    new LinkedHashMap<>(parameters.properties());
            properties.keySet().removeAll(context);
            List<String> required = new ArrayList<>(parameters.required());
            required.removeAll(context);
            JsonObjectSchema kept =
                    properties.isEmpty()
                            ? null
                            : JsonObjectSchema.builder()
                                    .description(parameters.description())
                                    .addProperties(properties)
                                    .required(required)
                                    .additionalProperties(parameters.additionalProperties())
                                    .definitions(
                                            referenced(
                                                    properties.values(), parameters.definitions()))
                                    .build();
            return spec.toBuilder().parameters(kept).build();
        }

        /**
         * The definitions that the kept properties refer to (through {@code $ref}, transitively):
         * an IdempotencyContext's own schema is left out with its parameter.
         */
        private static Map<String, JsonSchemaElement> referenced(
                Collection<JsonSchemaElement> kept, Map<String, JsonSchemaElement> definitions) {
            if (definitions == null || definitions.isEmpty()) {
                return definitions;
            }
            Map<String, JsonSchemaElement> used = new LinkedHashMap<>();
            Deque<JsonSchemaElement> pending = new ArrayDeque<>(kept);
            while (!pending.isEmpty()) {
                JsonSchemaElement e = pending.pop();
                if (e instanceof JsonReferenceSchema) {
                    String ref = ((JsonReferenceSchema) e).reference();
                    JsonSchemaElement target = definitions.get(ref);
                    if (target != null && used.put(ref, target) == null) {
                        pending.push(target);
                    }
                } else if (e instanceof JsonObjectSchema) {
                    JsonObjectSchema o = (JsonObjectSchema) e;
                    if (o.properties() != null) {
                        pending.addAll(o.properties().values());
                    }
                    if (o.definitions() != null) {
                        pending.addAll(o.definitions().values());
                    }
                } else if (e instanceof JsonArraySchema) {
                    JsonSchemaElement items = ((JsonArraySchema) e).items();
                    if (items != null) {
                        pending.push(items);
                    }
                } else if (e instanceof JsonAnyOfSchema) {
                    pending.addAll(((JsonAnyOfSchema) e).anyOf());
                }
            }
            Map<String, JsonSchemaElement> ordered = new LinkedHashMap<>();
            for (Map.Entry<String, JsonSchemaElement> d : definitions.entrySet()) {
                if (used.containsKey(d.getKey())) {
                    ordered.put(d.getKey(), d.getValue());
                }
            }
            return ordered.isEmpty() ? null : ordered;
        }

        /**
         * The {@code @Tool} methods of a class and its superclasses (a proxy's overrides find the
         * annotated method they override), one per signature.
         */
        static List<Method> toolMethods(Class<?> type) {
            List<Method> found = new ArrayList<>();
            Set<String> seen = new HashSet<>();
            for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) {
                for (Method method : c.getDeclaredMethods()) {
                    if (method.isBridge()
                            || method.isSynthetic()
                            || Modifier.isStatic(method.getModifiers())
                            || !method.isAnnotationPresent(Tool.class)) {
                        continue;
                    }
                    String signature =
                            method.getName() + Arrays.toString(method.getParameterTypes());
                    if (seen.add(signature)) {
                        found.add(method);
                    }
                }
            }
            return found;
        }
    }

    /** Runs an idempotent tool for LangChain4j: the shared call, its errors as LangChain4j's. */
    private static final class Executor implements ToolExecutor, ToolCall.Errors {
        private final ToolCall<InvocationContext> call;
        private final boolean isVoid;
        private final ObjectMapper mapper;

        Executor(ToolCall<InvocationContext> call, boolean isVoid, ObjectMapper mapper) {
            this.call = call;
            this.isVoid = isVoid;
            this.mapper = mapper;
        }

        @Override
        public String execute(ToolExecutionRequest request, Object memoryId) {
            return executeWithContext(
                            request, InvocationContext.builder().chatMemoryId(memoryId).build())
                    .resultText();
        }

        @Override
        public ToolExecutionResult executeWithContext(
                ToolExecutionRequest request, InvocationContext context) {
            Object result = call.call(request.arguments(), context, this);
            return ToolExecutionResult.builder().result(result).resultText(text(result)).build();
        }

        @Override
        public RuntimeException refused(IdempotencyException refusal) {
            return new IdempotentToolException(refusal);
        }

        @Override
        public RuntimeException invalid(InvalidToolInputException invalid) {
            // LangChain4j's default argument handler would end the turn; the model can fix it.
            return new IdempotentToolException(invalid);
        }

        @Override
        public RuntimeException failed(Throwable cause) {
            return new ToolExecutionException(cause);
        }

        /** The result as LangChain4j's own executor writes it. */
        private String text(Object result) {
            if (isVoid) {
                return "Success";
            }
            if (result instanceof String) {
                return (String) result;
            }
            try {
                return mapper.writeValueAsString(result);
            } catch (JsonProcessingException e) {
                throw new ToolExecutionException(e);
            }
        }
    }
}
