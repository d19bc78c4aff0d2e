package dev.idemkit.spring.boot;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.datatype.jdk8.Jdk8Module;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import dev.idemkit.IdempotencyContext;
import dev.idemkit.IdempotencyListener;
import dev.idemkit.IdempotencyStore;
import dev.idemkit.Idempotent;
import dev.idemkit.IdempotentOperation;
import dev.idemkit.ToolMethod;
import dev.idemkit.springai.IdempotentToolCallbacks;
import java.lang.reflect.Method;
import java.lang.reflect.UndeclaredThrowableException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.ai.chat.model.ToolContext;
import org.springframework.ai.tool.support.ToolUtils;
import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.core.annotation.AnnotationUtils;

/**
 * Runs a call of an {@code @Idempotent} bean method through idemkit: an {@link IdempotentOperation}
 * built from the method (its policy, its name as the key's scope, its result type), called with the
 * arguments by parameter name as the tool dispatcher builds its input, and the invocation as the
 * body. The core decides every call (claim, wait, replay, refusal); this class only translates.
 *
 * <p>The key's scope is the tool's name for a Spring AI, LangChain4j or idemkit {@code @Tool} (the
 * name {@code IdempotentToolCallbacks} or {@code IdempotentTools} uses, so both paths share
 * records), else {@code Class.method}. Tenant and run come from a {@code ToolContext} argument (the
 * starter's tool-context keys), else from the {@link IdempotencyContextResolver} bean. A call that
 * is already the body of an idemkit call of the same tool on this thread (the method called through
 * {@code IdempotentToolCallbacks} or a {@code ToolDispatcher}, which then invoke the proxy) runs
 * the method directly: one protocol.
 */
final class IdempotentMethodInterceptor implements MethodInterceptor {
    /** The context of the call whose body this thread has passed to the method already. */
    private static final ThreadLocal<IdempotencyContext> ENTERED = new ThreadLocal<>();

    /** Arguments to JSON-native values as idemkit's own mapper writes them; numbers exactly. */
    private static final ObjectMapper MAPPER =
            JsonMapper.builder()
                    .addModule(new Jdk8Module())
                    .addModule(new JavaTimeModule())
                    .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
                    .disable(DeserializationFeature.ADJUST_DATES_TO_CONTEXT_TIME_ZONE)
                    .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
                    .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
                    .disable(SerializationFeature.WRITE_DURATIONS_AS_TIMESTAMPS)
                    .enable(SerializationFeature.WRITE_DATES_WITH_ZONE_ID)
                    .build();

    private final ObjectProvider<IdempotencyStore> store;
    private final ObjectProvider<IdemkitProperties> properties;
    private final ObjectProvider<IdempotencyListener> listeners;
    private final ObjectProvider<IdempotencyContextResolver> resolver;
    private final ObjectProvider<IdempotentToolCallbacks> toolCallbacks;
    private final Map<Method, Guarded> guarded = new ConcurrentHashMap<>();

    IdempotentMethodInterceptor(
            ObjectProvider<IdempotencyStore> store,
            ObjectProvider<IdemkitProperties> properties,
            ObjectProvider<IdempotencyListener> listeners,
            ObjectProvider<IdempotencyContextResolver> resolver,
            ObjectProvider<IdempotentToolCallbacks> toolCallbacks) {
        this.store = store;
        this.toolCallbacks = toolCallbacks;
        this.properties = properties;
        this.listeners = listeners;
        this.resolver = resolver;
    }

    /** One advised method: its operation and how its arguments make the input. */
    private static final class Guarded {
        final String name;
        final ToolMethod tool;
        final IdempotentOperation<Object> operation;
        final int toolContext;
        final Function<ToolContext, String> tenant;
        final Function<ToolContext, String> run;

        Guarded(
                String name,
                ToolMethod tool,
                IdempotentOperation<Object> operation,
                int toolContext,
                Function<ToolContext, String> tenant,
                Function<ToolContext, String> run) {
            this.name = name;
            this.tool = tool;
            this.operation = operation;
            this.toolContext = toolContext;
            this.tenant = tenant;
            this.run = run;
        }

        /** The arguments by parameter name, as JSON-native values (SPEC §7). */
        Map<String, Object> input(Object[] args) {
            Map<String, Object> input = new LinkedHashMap<>();
            for (ToolMethod.Parameter p : tool.parameters()) {
                if (p.index() == toolContext) {
                    continue;
                }
                Object value = MAPPER.convertValue(args[p.index()], Object.class);
                if (p.wholeInput()) {
                    if (value == null) {
                        return Collections.emptyMap();
                    }
                    if (!(value instanceof Map)) {
                        throw new IllegalArgumentException(
                                "idemkit: the @ToolInput argument of `"
                                        + name
                                        + "` is not a JSON object");
                    }
                    @SuppressWarnings("unchecked")
                    Map<String, Object> whole = (Map<String, Object>) value;
                    return whole;
                }
                input.put(p.name(), value);
            }
            return input;
        }
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        Object target = invocation.getThis();
        Method method =
                AopUtils.getMostSpecificMethod(
                        invocation.getMethod(), AopUtils.getTargetClass(target));
        Guarded g = guard(method, target);
        IdempotencyContext current = IdempotencyContext.current().orElse(null);
        IdempotencyContext entered = ENTERED.get();
        if (current != null && current != entered && current.tool().equals(g.name)) {
            // Already the body of this tool's idemkit call (a wrapper invoked the proxy).
            ENTERED.set(current);
            try {
                return invocation.proceed();
            } finally {
                restore(entered);
            }
        }
        Object[] args = invocation.getArguments();
        String tenant;
        String run;
        if (g.toolContext >= 0) {
            ToolContext context = (ToolContext) args[g.toolContext];
            tenant = g.tenant.apply(context);
            run = g.run.apply(context);
        } else {
            IdempotencyContextResolver r = resolver();
            tenant = r.tenant(method, args);
            run = r.run(method, args);
        }
        Exception[] checked = new Exception[1];
        try {
            return g.operation.call(
                    tenant,
                    run,
                    g.input(args),
                    context -> {
                        Object[] bound = args.clone();
                        Class<?>[] types = method.getParameterTypes();
                        for (int i = 0; i < types.length; i++) {
                            if (types[i] == IdempotencyContext.class) {
                                bound[i] = context;
                            }
                        }
                        IdempotencyContext outer = ENTERED.get();
                        ENTERED.set(context);
                        try {
                            // A clone for each run: the core may run a retried body again.
                            return ((ProxyMethodInvocation) invocation)
                                    .invocableClone(bound)
                                    .proceed();
                        } catch (RuntimeException | Error unchecked) {
                            throw unchecked;
                        } catch (Exception e) {
                            checked[0] = e;
                            throw e;
                        } catch (Throwable t) {
                            throw new UndeclaredThrowableException(t);
                        } finally {
                            restore(outer);
                        }
                    });
        } catch (UndeclaredThrowableException wrapped) {
            // The body's own checked exception, as the method declares it.
            if (checked[0] != null && wrapped.getCause() == checked[0]) {
                throw checked[0];
            }
            throw wrapped;
        }
    }

    private static void restore(IdempotencyContext outer) {
        if (outer == null) {
            ENTERED.remove();
        } else {
            ENTERED.set(outer);
        }
    }

    private IdempotencyContextResolver resolver() {
        IdempotencyContextResolver r = resolver.getIfAvailable();
        return r != null ? r : IdempotencyContextResolver.fixed(null, null);
    }

    /**
     * Builds (once) the operation of {@code method} on {@code target}, the unproxied bean; a policy
     * or result type the core refuses fails here, at startup for singletons.
     */
    Guarded guard(Method method, Object target) {
        Guarded g = guarded.get(method);
        if (g != null) {
            return g;
        }
        // Built outside the map: building may make beans whose own calls come back here.
        Guarded built = build(method, target);
        Guarded raced = guarded.putIfAbsent(method, built);
        if (raced != null) {
            built.operation.close();
            return raced;
        }
        return built;
    }

    private Guarded build(Method method, Object target) {
        Class<?> type = AopUtils.getTargetClass(target);
        Idempotent policy = IdempotentMethodAdvisor.policy(method, type);
        String name = name(method, type);
        ToolMethod tool = ToolMethod.of(target, method, name, null);
        int toolContext = -1;
        Class<?>[] types = method.getParameterTypes();
        for (int i = 0; i < types.length; i++) {
            if (ToolContext.class.isAssignableFrom(types[i])) {
                toolContext = i;
            }
        }
        IdemkitProperties settings = properties.getIfAvailable(IdemkitProperties::new);
        Function<ToolContext, String> tenant =
                settings.getTenant() != null
                        ? context -> settings.getTenant()
                        : IdempotentToolCallbacks.fromToolContext(
                                settings.getToolContext().getTenantKey());
        Function<ToolContext, String> run =
                IdempotentToolCallbacks.fromToolContext(settings.getToolContext().getRunKey());
        IdempotentOperation.Builder<Object> builder =
                IdempotentOperation.builder(tool)
                        .policy(policy)
                        .store(store.getObject())
                        .objectMapper(MAPPER);
        // The store hands each event to every listener scoped to its tool name: where the
        // IdempotentToolCallbacks bean already listens for this name, listening again counts twice.
        IdempotentToolCallbacks callbacks = toolCallbacks.getIfAvailable();
        boolean heard = false;
        if (callbacks != null) {
            for (org.springframework.ai.tool.ToolCallback c : callbacks.getToolCallbacks()) {
                heard |= c.getToolDefinition().name().equals(name);
            }
        }
        if (!heard) {
            listeners.orderedStream().forEach(builder::listener);
        }
        try {
            return new Guarded(name, tool, builder.build(), toolContext, tenant, run);
        } catch (RuntimeException refused) {
            throw new IllegalStateException(
                    "idemkit-spring-boot-starter: @Idempotent on "
                            + type.getName()
                            + "."
                            + method.getName()
                            + " cannot be applied: "
                            + refused.getMessage(),
                    refused);
        }
    }

    /** The key's scope: the tool's name, else {@code SimpleClassName.method}. */
    static String name(Method method, Class<?> type) {
        if (IdempotentMethodAdvisor.isSpringAiTool(method)) {
            return ToolUtils.getToolName(method);
        }
        String langChain4j = IdempotentMethodAdvisor.langChain4jToolName(method);
        if (langChain4j != null) {
            return langChain4j;
        }
        dev.idemkit.Tool tool = AnnotationUtils.findAnnotation(method, dev.idemkit.Tool.class);
        if (tool != null) {
            return tool.name().isEmpty() ? method.getName() : tool.name();
        }
        return type.getSimpleName() + "." + method.getName();
    }

    /** Closes every operation (with the context, before the store). */
    void close() {
        List<Guarded> all = new ArrayList<>(guarded.values());
        guarded.clear();
        for (Guarded g : all) {
            g.operation.close();
        }
    }
}
