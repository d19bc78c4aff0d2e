package dev.idemkit.springai;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.idemkit.IdempotencyListener;
import dev.idemkit.IdempotencyStore;
import dev.idemkit.IdempotentOperation;
import dev.idemkit.ToolMethod;
import dev.idemkit.adapter.ToolAdapterBuilder;
import dev.idemkit.adapter.ToolBinding;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import org.springframework.ai.chat.memory.ChatMemory;
import org.springframework.ai.chat.model.ToolContext;
import org.springframework.ai.tool.ToolCallback;
import org.springframework.ai.tool.ToolCallbackProvider;
import org.springframework.ai.tool.annotation.Tool;
import org.springframework.ai.tool.definition.DefaultToolDefinition;
import org.springframework.ai.tool.definition.ToolDefinition;
import org.springframework.ai.tool.metadata.ToolMetadata;
import org.springframework.ai.tool.method.MethodToolCallback;
import org.springframework.ai.tool.support.ToolDefinitions;
import org.springframework.ai.tool.support.ToolUtils;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Spring AI tools made idempotent: the {@code @Tool} methods (Spring AI's {@link Tool}) of some
 * objects as {@link ToolCallback}s, where each one that also carries idemkit's {@link
 * dev.idemkit.Idempotent} (on the method or its class) is an {@link IdempotentToolCallback} and
 * runs at most once per key; the others are Spring AI's own {@link MethodToolCallback}s. Use it
 * where {@code MethodToolCallbackProvider} or {@code .tools(object)} would go:
 *
 * <pre>{@code
 * IdempotentToolCallbacks tools =
 *         IdempotentToolCallbacks.builder().toolObjects(new Flights()).store(store).build();
 * chatClient.prompt()
 *         .user("Book me on BA117")
 *         .toolCallbacks(tools.getToolCallbacks())
 *         .toolContext(Map.of(ChatMemory.CONVERSATION_ID, "conversation-42"))
 *         .call()
 *         .content();
 * }</pre>
 *
 * <p>The key of a call is derived from the tool name, the tenant, the run and the model's
 * arguments. The run is the {@link ToolContext} entry {@link ChatMemory#CONVERSATION_ID} (the
 * conversation id Spring AI's chat memory uses), the tenant its entry {@link #TENANT}, unless the
 * builder is given others ({@link #toolContext(String, String)} makes both entries). An {@code
 * IdempotencyContext} parameter is filled in by idemkit and left out of the tool's input schema; a
 * {@code ToolContext} parameter is refused in an idempotent tool (take an {@code
 * IdempotencyContext}).
 *
 * <p>Thread-safe; {@link #close()} frees the native tools (and the store the builder created).
 */
public final class IdempotentToolCallbacks implements ToolCallbackProvider, AutoCloseable {
    /** The tool context entry the tenant is read from by default. */
    public static final String TENANT = "idemkit.tenant";

    /** The default tenant: the {@link #TENANT} entry of the tool context. */
    public static final Function<ToolContext, String> TENANT_ENTRY = fromToolContext(TENANT);

    /** The default run: the {@link ChatMemory#CONVERSATION_ID} entry of the tool context. */
    public static final Function<ToolContext, String> CONVERSATION_ID =
            fromToolContext(ChatMemory.CONVERSATION_ID);

    private final ToolCallback[] callbacks;
    private final ToolBinding binding;
    private final Builder settings;

    /**
     * Tools an {@link IdempotentToolCallingManager} protected whose names have no operation here.
     */
    private final Set<String> managed = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private final IdempotencyListener managedListener;

    private IdempotentToolCallbacks(
            ToolCallback[] callbacks, ToolBinding binding, Builder settings) {
        this.callbacks = callbacks;
        this.binding = binding;
        this.settings = settings;
        // The store hands every event of a tool name to each listener registered for that name, so
        // the tools a manager protects per call are listened to once, here, not per operation.
        List<IdempotencyListener> copy = settings.eventListeners();
        if (copy.isEmpty()) {
            this.managedListener = null;
        } else {
            this.managedListener =
                    event -> {
                        if (event.tool() != null && managed.contains(event.tool())) {
                            for (IdempotencyListener l : copy) {
                                try {
                                    l.onEvent(event);
                                } catch (RuntimeException failed) {
                                    System.getLogger(IdempotentToolCallbacks.class.getName())
                                            .log(
                                                    System.Logger.Level.WARNING,
                                                    "idemkit-spring-ai: a listener failed",
                                                    failed);
                                }
                            }
                        }
                    };
            binding.store().addListener(managedListener);
        }
    }

    /**
     * A {@link org.springframework.ai.model.tool.ToolCallingManager} that protects, with these
     * callbacks' store, policy, listeners and tool context, every {@code @Idempotent} tool Spring
     * AI wired its own way ({@code .tools(new Flights())}, {@code defaultTools(bean)}, a {@code
     * MethodToolCallbackProvider}); give it to the chat model in place of {@code delegate}.
     *
     * @param delegate the manager that runs the tool calls (e.g. {@code
     *     ToolCallingManager.builder().build()})
     * @return the manager; it stays usable until these callbacks are closed
     */
    public IdempotentToolCallingManager toolCallingManager(
            org.springframework.ai.model.tool.ToolCallingManager delegate) {
        return new IdempotentToolCallingManager(delegate, () -> this, () -> null);
    }

    /**
     * The callback of an {@code @Idempotent} method Spring AI made its own callback for: its
     * definition (without {@code IdempotencyContext} members), metadata and converter, over an
     * operation built here (no listeners: {@link #managedListener} tells them) that the caller
     * closes.
     */
    IdempotentToolCallback protect(
            Object object,
            Method method,
            ToolDefinition definition,
            ToolMetadata metadata,
            org.springframework.ai.tool.execution.ToolCallResultConverter converter,
            List<IdempotentOperation<Object>> made) {
        if (!binding.isBound(definition.name())) {
            managed.add(definition.name());
        }
        ToolMethod tool = settings.idempotentTool(binding, object, method, definition);
        IdempotentOperation<Object> operation = binding.operation(tool, List.of());
        made.add(operation);
        return settings.callback(binding, tool, operation, definition, metadata, converter);
    }

    /** The definition a protected {@code @Idempotent} method publishes. */
    static ToolDefinition protectedDefinition(
            Object object, Method method, ToolDefinition definition) {
        ToolMethod tool =
                ToolMethod.of(object, method, definition.name(), definition.description());
        return Builder.withoutContext(definition, ToolBinding.contextMembers(tool, p -> null));
    }

    /**
     * A builder.
     *
     * @return a builder with no tools, a new in-memory store, {@link #TENANT_ENTRY} as tenant and
     *     {@link #CONVERSATION_ID} as run
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * A tenant or run read from a {@link ToolContext} entry.
     *
     * @param key the entry's key
     * @return the entry as text, or {@code null} without a context or entry
     */
    public static Function<ToolContext, String> fromToolContext(String key) {
        Objects.requireNonNull(key, "key");
        return context -> {
            if (context == null) {
                return null;
            }
            Object value = context.getContext().get(key);
            return value == null ? null : value.toString();
        };
    }

    /**
     * The tools: an {@link IdempotentToolCallback} per idempotent method, a Spring AI {@link
     * MethodToolCallback} per other.
     *
     * @return a copy of the callbacks
     */
    @Override
    public ToolCallback[] getToolCallbacks() {
        return callbacks.clone();
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
        if (managedListener != null) {
            binding.store().removeListener(managedListener);
        }
        binding.close();
    }

    /**
     * Builds {@link IdempotentToolCallbacks}; the options it shares with every adapter are
     * inherited.
     */
    public static final class Builder extends ToolAdapterBuilder<Builder, ToolContext> {
        private static final ObjectMapper JSON = new ObjectMapper();

        private Builder() {
            super(TENANT_ENTRY, CONVERSATION_ID);
        }

        @Override
        protected Builder self() {
            return this;
        }

        private List<IdempotencyListener> eventListeners() {
            return listeners();
        }

        /**
         * Objects whose Spring AI {@code @Tool} methods become tools (Spring AOP proxies are read
         * through to their class).
         *
         * @param toolObjects the objects
         * @return this builder
         */
        public Builder toolObjects(Object... toolObjects) {
            return addObjects("toolObjects", toolObjects);
        }

        /**
         * Reads the objects' tools and validates each idempotent one's policy in the core.
         *
         * @return the callbacks, open until {@link IdempotentToolCallbacks#close()}
         * @throws IllegalArgumentException an object without {@code @Tool} methods, two tools with
         *     one name, a policy the core refuses, or an idempotent tool taking a {@code
         *     ToolContext}
         */
        public IdempotentToolCallbacks build() {
            ToolBinding binding = openBinding("idemkit-spring-ai", IdempotentToolCallback.class);
            List<ToolCallback> callbacks = new ArrayList<>();
            try {
                for (Object object : objects()) {
                    Class<?> type =
                            AopUtils.isAopProxy(object)
                                    ? AopUtils.getTargetClass(object)
                                    : object.getClass();
                    int found = 0;
                    for (Method method : ReflectionUtils.getDeclaredMethods(type)) {
                        if (AnnotationUtils.findAnnotation(method, Tool.class) == null
                                || !ReflectionUtils.USER_DECLARED_METHODS.matches(method)) {
                            continue;
                        }
                        found++;
                        ToolCallback callback = callback(object, method, binding);
                        binding.claimName(callback.getToolDefinition().name());
                        callbacks.add(callback);
                    }
                    if (found == 0) {
                        throw binding.noTools(
                                type,
                                "Spring AI's @Tool (org.springframework.ai.tool.annotation.Tool)");
                    }
                }
            } catch (RuntimeException refused) {
                binding.close();
                throw refused;
            }
            return new IdempotentToolCallbacks(
                    callbacks.toArray(new ToolCallback[0]),
                    binding,
                    new Builder().copyOptions(this));
        }

        private ToolCallback callback(Object object, Method method, ToolBinding binding) {
            ToolDefinition definition = ToolDefinitions.from(method);
            ToolMetadata metadata = ToolMetadata.from(method);
            ToolMethod tool =
                    ToolMethod.of(object, method, definition.name(), definition.description());
            if (!tool.isIdempotent()) {
                return MethodToolCallback.builder()
                        .toolDefinition(definition)
                        .toolMetadata(metadata)
                        .toolMethod(method)
                        .toolObject(object)
                        .toolCallResultConverter(ToolUtils.getToolCallResultConverter(method))
                        .build();
            }
            tool = idempotentTool(binding, object, method, definition);
            return callback(
                    binding,
                    tool,
                    binding.bind(tool),
                    definition,
                    metadata,
                    ToolUtils.getToolCallResultConverter(method));
        }

        /** The tool of an idempotent method, refused when it takes a {@code ToolContext}. */
        ToolMethod idempotentTool(
                ToolBinding binding, Object object, Method method, ToolDefinition definition) {
            ToolMethod tool =
                    ToolMethod.of(object, method, definition.name(), definition.description());
            for (Parameter p : method.getParameters()) {
                if (ClassUtils.isAssignable(ToolContext.class, p.getType())) {
                    throw binding.refusedParameter(
                            tool,
                            p,
                            "a ToolContext",
                            "take an IdempotencyContext parameter instead (its run() and"
                                    + " tenant() are the call's)");
                }
            }
            return tool;
        }

        /** The callback of an idempotent tool over its operation. */
        IdempotentToolCallback callback(
                ToolBinding binding,
                ToolMethod tool,
                IdempotentOperation<Object> operation,
                ToolDefinition definition,
                ToolMetadata metadata,
                org.springframework.ai.tool.execution.ToolCallResultConverter converter) {
            return new IdempotentToolCallback(
                    withoutContext(definition, ToolBinding.contextMembers(tool, p -> null)),
                    metadata,
                    call(binding, operation),
                    converter,
                    tool.method().getGenericReturnType());
        }

        /** The definition without the IdempotencyContext members, which idemkit fills in. */
        static ToolDefinition withoutContext(ToolDefinition definition, Set<String> names) {
            if (names.isEmpty()) {
                return definition;
            }
            try {
                JsonNode schema = JSON.readTree(definition.inputSchema());
                if (schema.get("properties") instanceof ObjectNode) {
                    ((ObjectNode) schema.get("properties")).remove(names);
                }
                if (schema.get("required") instanceof ArrayNode) {
                    Iterator<JsonNode> required = schema.get("required").elements();
                    while (required.hasNext()) {
                        if (names.contains(required.next().asText())) {
                            required.remove();
                        }
                    }
                }
                return DefaultToolDefinition.builder()
                        .name(definition.name())
                        .description(definition.description())
                        .inputSchema(JSON.writeValueAsString(schema))
                        .build();
            } catch (JsonProcessingException e) {
                throw new IllegalStateException(
                        "idemkit-spring-ai: the input schema of `"
                                + definition.name()
                                + "` is not JSON: "
                                + e.getOriginalMessage(),
                        e);
            }
        }
    }

    /**
     * The entries idemkit reads from a tool context, for a chat client's {@code .toolContext(...)}.
     *
     * @param tenant the tenant, or {@code null}
     * @param conversation the conversation (the run), or {@code null}
     * @return the entries: {@link ChatMemory#CONVERSATION_ID} and, given, {@code "idemkit.tenant"}
     */
    public static Map<String, Object> toolContext(String tenant, String conversation) {
        Map<String, Object> entries = new java.util.LinkedHashMap<>();
        if (conversation != null) {
            entries.put(ChatMemory.CONVERSATION_ID, conversation);
        }
        if (tenant != null) {
            entries.put(TENANT, tenant);
        }
        return entries;
    }
}
