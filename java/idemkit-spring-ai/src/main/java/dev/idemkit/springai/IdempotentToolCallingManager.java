package dev.idemkit.springai;

import dev.idemkit.IdempotentOperation;
import dev.idemkit.adapter.ToolBinding;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Supplier;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.model.Generation;
import org.springframework.ai.chat.model.ToolContext;
import org.springframework.ai.chat.prompt.Prompt;
import org.springframework.ai.model.tool.ToolCallingChatOptions;
import org.springframework.ai.model.tool.ToolCallingManager;
import org.springframework.ai.model.tool.ToolExecutionResult;
import org.springframework.ai.tool.ToolCallback;
import org.springframework.ai.tool.definition.ToolDefinition;
import org.springframework.ai.tool.execution.ToolCallResultConverter;
import org.springframework.ai.tool.execution.ToolExecutionException;
import org.springframework.ai.tool.metadata.ToolMetadata;
import org.springframework.ai.tool.method.MethodToolCallback;
import org.springframework.ai.tool.resolution.ToolCallbackResolver;
import org.springframework.aop.Advisor;
import org.springframework.aop.framework.Advised;
import org.springframework.aop.support.AopUtils;

/**
 * A {@link ToolCallingManager} that keeps {@code @Idempotent}'s promise however the app wired its
 * tools: each Spring AI {@link MethodToolCallback} of a call (from {@code .tools(new Flights())},
 * {@code defaultTools(bean)}, a {@code MethodToolCallbackProvider}, or the resolver) whose method
 * carries idemkit's {@link dev.idemkit.Idempotent} runs as an {@link IdempotentToolCallback} of an
 * {@link IdempotentToolCallbacks}' store, policy, listeners and tool context. Callbacks that are
 * already idemkit's, and tools without {@code @Idempotent}, run as the delegate runs them.
 *
 * <p>An {@code @Idempotent} tool that cannot be protected (a {@code ToolContext} parameter, a
 * policy the core refuses) is not run: its call answers a tool error naming the tool and the fix.
 * Made by {@link IdempotentToolCallbacks#toolCallingManager}; the Boot starter wraps the app's
 * manager with it.
 */
public final class IdempotentToolCallingManager implements ToolCallingManager {
    private static final System.Logger LOG =
            System.getLogger(IdempotentToolCallingManager.class.getName());

    // MethodToolCallback exposes neither its method nor its object; its fields are read.
    private static final Field METHOD;
    private static final Field OBJECT;
    private static final Field CONVERTER;
    private static final RuntimeException UNREADABLE;

    static {
        Field method = null;
        Field object = null;
        Field converter = null;
        RuntimeException unreadable = null;
        try {
            method = MethodToolCallback.class.getDeclaredField("toolMethod");
            object = MethodToolCallback.class.getDeclaredField("toolObject");
            converter = MethodToolCallback.class.getDeclaredField("toolCallResultConverter");
            method.setAccessible(true);
            object.setAccessible(true);
            converter.setAccessible(true);
        } catch (NoSuchFieldException | RuntimeException e) {
            unreadable =
                    new IllegalStateException(
                            "idemkit-spring-ai: cannot read the method behind Spring AI's"
                                    + " MethodToolCallback ("
                                    + e
                                    + "), so @Idempotent tools wired by Spring AI could not be"
                                    + " protected; open org.springframework.ai.tool.method to"
                                    + " idemkit, or wire the tools with IdempotentToolCallbacks"
                                    + " and leave the chat model's ToolCallingManager as it is",
                            e);
        }
        METHOD = method;
        OBJECT = object;
        CONVERTER = converter;
        UNREADABLE = unreadable;
    }

    private final ToolCallingManager delegate;
    private final Supplier<IdempotentToolCallbacks> tools;
    private final Supplier<ToolCallbackResolver> resolver;

    /**
     * A manager over {@code delegate}.
     *
     * @param delegate runs the tool calls
     * @param tools the store, policy, listeners and tool context, read at the first call
     * @param resolver the resolver the delegate falls back on for tools not in the options (its
     *     callbacks are protected too), or a supplier of {@code null}
     * @throws IllegalStateException Spring AI's {@code MethodToolCallback} cannot be read (the
     *     message names the fix)
     */
    public IdempotentToolCallingManager(
            ToolCallingManager delegate,
            Supplier<IdempotentToolCallbacks> tools,
            Supplier<ToolCallbackResolver> resolver) {
        if (UNREADABLE != null) {
            throw UNREADABLE;
        }
        this.delegate = Objects.requireNonNull(delegate, "delegate");
        this.tools = Objects.requireNonNull(tools, "tools");
        this.resolver = Objects.requireNonNull(resolver, "resolver");
    }

    /**
     * The delegate's definitions, an {@code @Idempotent} method's without its {@code
     * IdempotencyContext} members (idemkit fills them in).
     */
    @Override
    public List<ToolDefinition> resolveToolDefinitions(ToolCallingChatOptions options) {
        List<ToolDefinition> definitions = delegate.resolveToolDefinitions(options);
        List<ToolDefinition> published = new ArrayList<>(definitions.size());
        for (ToolDefinition d : definitions) {
            ToolDefinition shown = d;
            for (ToolCallback c : options.getToolCallbacks()) {
                Target t = c.getToolDefinition().name().equals(d.name()) ? target(c) : null;
                if (t != null) {
                    try {
                        shown = IdempotentToolCallbacks.protectedDefinition(t.object, t.method, d);
                    } catch (RuntimeException refused) {
                        shown = d; // its call is refused, naming why
                    }
                }
            }
            published.add(shown);
        }
        return published;
    }

    @Override
    public ToolExecutionResult executeToolCalls(Prompt prompt, ChatResponse chatResponse) {
        if (!(prompt.getOptions() instanceof ToolCallingChatOptions)) {
            return delegate.executeToolCalls(prompt, chatResponse);
        }
        ToolCallingChatOptions options = (ToolCallingChatOptions) prompt.getOptions();
        IdempotentToolCallbacks settings = tools.get();
        List<IdempotentOperation<Object>> made = new ArrayList<>();
        try {
            List<ToolCallback> callbacks = new ArrayList<>();
            Set<String> names = new HashSet<>();
            boolean changed = false;
            for (ToolCallback c : options.getToolCallbacks()) {
                ToolCallback p = protect(c, settings, made);
                changed |= p != c;
                callbacks.add(p);
                names.add(c.getToolDefinition().name());
            }
            // A tool the options lack is one the delegate resolves by name: resolved here first.
            ToolCallbackResolver r = resolver.get();
            if (r != null && chatResponse != null) {
                for (Generation g : chatResponse.getResults()) {
                    for (AssistantMessage.ToolCall call : g.getOutput().getToolCalls()) {
                        if (names.add(call.name())) {
                            ToolCallback found = r.resolve(call.name());
                            ToolCallback p = found == null ? null : protect(found, settings, made);
                            if (p != null && p != found) {
                                callbacks.add(p);
                                changed = true;
                            }
                        }
                    }
                }
            }
            if (!changed) {
                return delegate.executeToolCalls(prompt, chatResponse);
            }
            ToolCallingChatOptions protectedOptions = withCallbacks(options, callbacks);
            return delegate.executeToolCalls(
                    new Prompt(prompt.getInstructions(), protectedOptions), chatResponse);
        } finally {
            for (IdempotentOperation<Object> op : made) {
                op.close();
            }
        }
    }

    /** Whether the options have Spring AI 2.0's {@code mutate()}; 1.1's have setters instead. */
    private static final boolean MUTABLE_COPY = hasMutate();

    private static boolean hasMutate() {
        try {
            ToolCallingChatOptions.class.getMethod("mutate");
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    /**
     * {@code options} with {@code callbacks}: on Spring AI 2.0 a mutated copy (every option kept);
     * on 1.1, which lacks {@code mutate()}, new options of the tool callbacks and tool context, the
     * two things a {@code ToolCallingManager} reads (the model keeps its own prompt's options).
     */
    private static ToolCallingChatOptions withCallbacks(
            ToolCallingChatOptions options, List<ToolCallback> callbacks) {
        if (MUTABLE_COPY) {
            return options.mutate().toolCallbacks(callbacks).build();
        }
        ToolCallingChatOptions.Builder<?> copy =
                ToolCallingChatOptions.builder().toolCallbacks(callbacks);
        if (options.getToolContext() != null) {
            copy.toolContext(options.getToolContext());
        }
        if (options.getModel() != null) {
            copy.model(options.getModel());
        }
        return copy.build();
    }

    /**
     * The method and object behind a Spring AI callback, when the method is {@code @Idempotent}.
     */
    private record Target(Object object, Method method, ToolCallResultConverter converter) {}

    private static Target target(ToolCallback callback) {
        if (!(callback instanceof MethodToolCallback)) {
            return null; // idemkit's own, or no method behind it
        }
        Object object;
        Method method;
        ToolCallResultConverter converter;
        try {
            object = OBJECT.get(callback);
            method = (Method) METHOD.get(callback);
            converter = (ToolCallResultConverter) CONVERTER.get(callback);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(UNREADABLE_TEXT + e, e);
        }
        Class<?> type =
                object == null
                        ? method.getDeclaringClass()
                        : AopUtils.isAopProxy(object)
                                ? AopUtils.getTargetClass(object)
                                : object.getClass();
        if (!ToolBinding.isIdempotent(type, method) || advisedByIdemkit(object)) {
            return null;
        }
        return new Target(object, method, converter);
    }

    private static final String UNREADABLE_TEXT =
            "idemkit-spring-ai: cannot read Spring AI's MethodToolCallback: ";

    /** A Spring AOP proxy that idemkit's own advice already guards. */
    private static boolean advisedByIdemkit(Object object) {
        if (!(object instanceof Advised)) {
            return false;
        }
        for (Advisor a : ((Advised) object).getAdvisors()) {
            if (a.getClass().getName().startsWith("dev.idemkit.")
                    || a.getAdvice().getClass().getName().startsWith("dev.idemkit.")) {
                return true;
            }
        }
        return false;
    }

    private static ToolCallback protect(
            ToolCallback callback,
            IdempotentToolCallbacks settings,
            List<IdempotentOperation<Object>> made) {
        Target t = target(callback);
        if (t == null) {
            return callback;
        }
        String name = callback.getToolDefinition().name();
        if (t.object == null) {
            return new Refused(
                    callback,
                    "idemkit-spring-ai: tool `"
                            + name
                            + "` is @Idempotent but static, so idemkit cannot protect it and did"
                            + " not run it; make the method an instance method");
        }
        try {
            return settings.protect(
                    t.object,
                    t.method,
                    callback.getToolDefinition(),
                    callback.getToolMetadata(),
                    t.converter,
                    made);
        } catch (RuntimeException refused) {
            return new Refused(
                    callback,
                    "idemkit-spring-ai: tool `"
                            + name
                            + "` is @Idempotent but cannot be protected, so it was not run: "
                            + refused.getMessage());
        }
    }

    /** An {@code @Idempotent} tool idemkit cannot protect: every call is a tool error. */
    private static final class Refused implements ToolCallback {
        private final ToolCallback callback;
        private final String text;

        Refused(ToolCallback callback, String text) {
            this.callback = callback;
            this.text = text;
            LOG.log(System.Logger.Level.WARNING, text);
        }

        @Override
        public ToolDefinition getToolDefinition() {
            return callback.getToolDefinition();
        }

        @Override
        public ToolMetadata getToolMetadata() {
            return callback.getToolMetadata();
        }

        @Override
        public String call(String toolInput) {
            return call(toolInput, null);
        }

        @Override
        public String call(String toolInput, ToolContext toolContext) {
            throw new ToolExecutionException(
                    callback.getToolDefinition(), new IllegalStateException(text));
        }
    }
}
