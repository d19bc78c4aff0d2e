package dev.idemkit.langchain4j;

import dev.idemkit.Idempotent;
import dev.langchain4j.agent.tool.CompensateFor;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.service.tool.AiServiceTool;
import dev.langchain4j.service.tool.DefaultToolExecutor;
import dev.langchain4j.service.tool.ToolExecutor;
import dev.langchain4j.service.tool.ToolProvider;
import dev.langchain4j.service.tool.ToolProviderRequest;
import dev.langchain4j.service.tool.ToolProviderResult;
import dev.langchain4j.service.tool.ToolService;
import java.lang.ref.Cleaner;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * LangChain4j's tool service with idemkit in the paths a tool reaches the model by: objects given
 * to {@code tools(Object...)} that have {@code @Idempotent} tools run them through {@link
 * IdempotentTools} with its {@link IdempotentTools#defaults defaults} (refused when there are
 * none); the others run as LangChain4j runs them. A LangChain4j executor of an {@code @Idempotent}
 * method in {@code tools(Map)} is replaced by idemkit's executor of the same object's tool (with
 * the defaults; refused without them); handed over ready-made another way ({@code
 * tools(List<AiServiceTool>)}, a {@code ToolProvider}) it would run unprotected, so it is refused,
 * naming the tool and the fix.
 */
final class IdempotentToolService extends ToolService {
    private static final Cleaner CLEANER = Cleaner.create();

    IdempotentToolService() {}

    @Override
    public void tools(Collection<Object> objects) {
        List<Object> plain = new ArrayList<>();
        List<Object> idempotent = new ArrayList<>();
        for (Object o : objects) {
            (IdempotentTools.hasIdempotentTool(o) ? idempotent : plain).add(o);
        }
        if (!plain.isEmpty()) {
            super.tools(plain);
        }
        if (idempotent.isEmpty()) {
            return;
        }
        for (Object o : idempotent) {
            refuseCompensation(o);
        }
        IdempotentTools tools = IdempotentTools.fromDefaults(idempotent);
        super.tools(tools.aiServiceTools());
        // The service holds the tools as long as it lives; their native operations go with it.
        CLEANER.register(this, tools::close);
    }

    @Override
    public void tools(List<AiServiceTool> tools) {
        for (AiServiceTool t : tools) {
            refuseUnprotected(t.name(), t.toolExecutor(), "tools(List<AiServiceTool>)");
        }
        super.tools(tools);
    }

    @Override
    public void tools(Map<ToolSpecification, ToolExecutor> tools) {
        super.tools(protect(tools, "tools(Map)"));
    }

    @Override
    public void tools(Map<ToolSpecification, ToolExecutor> tools, Set<String> immediateReturn) {
        super.tools(protect(tools, "tools(Map, Set)"), immediateReturn);
    }

    /**
     * The map with each LangChain4j executor of an {@code @Idempotent} method replaced by idemkit's
     * executor of the same tool of the same object, made with the {@link IdempotentTools#defaults
     * defaults} as {@code tools(object)} would make it (langchain4j-spring-boot-starter's
     * {@code @AiService} hands a proxied tool bean over this way); without defaults, or when the
     * object or the tool cannot be found, refused as before, naming the tool and the fix.
     */
    private Map<ToolSpecification, ToolExecutor> protect(
            Map<ToolSpecification, ToolExecutor> tools, String path) {
        Map<ToolSpecification, ToolExecutor> out = new LinkedHashMap<>();
        Map<Object, IdempotentTools> made = new IdentityHashMap<>();
        for (Map.Entry<ToolSpecification, ToolExecutor> e : tools.entrySet()) {
            String name = e.getKey().name();
            ToolExecutor executor = e.getValue();
            if (idempotentMethod(executor) == null) {
                out.put(e.getKey(), executor);
                continue;
            }
            Object target = IdempotentTools.hasDefaults() ? objectOf(executor) : null;
            if (target == null) {
                refuseUnprotected(name, executor, path);
            }
            IdempotentTools protectedTools =
                    made.computeIfAbsent(
                            target,
                            o -> {
                                refuseCompensation(o);
                                IdempotentTools t = IdempotentTools.fromDefaults(List.of(o));
                                CLEANER.register(this, t::close);
                                return t;
                            });
            ToolExecutor replacement = null;
            for (AiServiceTool t : protectedTools.aiServiceTools()) {
                if (t.name().equals(name)) {
                    replacement = t.toolExecutor();
                }
            }
            if (replacement == null) {
                refuseUnprotected(name, executor, path);
            }
            out.put(e.getKey(), replacement);
        }
        return out;
    }

    /** The object a LangChain4j executor runs its method on (its private field), or null. */
    private static Object objectOf(ToolExecutor executor) {
        try {
            Field object = DefaultToolExecutor.class.getDeclaredField("object");
            object.setAccessible(true);
            return object.get(executor);
        } catch (ReflectiveOperationException | RuntimeException unreadable) {
            return null;
        }
    }

    /** The {@code @Idempotent} method a LangChain4j executor runs, or null. */
    private static Method idempotentMethod(ToolExecutor executor) {
        if (!(executor instanceof DefaultToolExecutor)) {
            return null;
        }
        Method m = ((DefaultToolExecutor) executor).originalMethod();
        if (m == null
                || (m.getAnnotation(Idempotent.class) == null
                        && m.getDeclaringClass().getAnnotation(Idempotent.class) == null)) {
            return null;
        }
        return m;
    }

    @Override
    public void toolProvider(ToolProvider provider) {
        super.toolProvider(provider == null ? null : guarded(provider));
    }

    @Override
    public void toolProviders(Collection<ToolProvider> providers) {
        if (providers == null) {
            super.toolProviders(null);
            return;
        }
        List<ToolProvider> guarded = new ArrayList<>();
        for (ToolProvider p : providers) {
            guarded.add(p == null ? null : guarded(p));
        }
        super.toolProviders(guarded);
    }

    private static ToolProvider guarded(ToolProvider provider) {
        return provider instanceof Guarded ? provider : new Guarded(provider);
    }

    /**
     * A provider whose tools are checked each time it provides them (the model has not seen them).
     */
    private static final class Guarded implements ToolProvider {
        private final ToolProvider provider;

        Guarded(ToolProvider provider) {
            this.provider = provider;
        }

        @Override
        public ToolProviderResult provideTools(ToolProviderRequest request) {
            ToolProviderResult result = provider.provideTools(request);
            if (result != null) {
                for (AiServiceTool t : result.aiServiceTools()) {
                    refuseUnprotected(t.name(), t.toolExecutor(), "a ToolProvider");
                }
            }
            return result;
        }

        @Override
        public boolean isDynamic() {
            return provider.isDynamic();
        }
    }

    /**
     * Refuses LangChain4j's own executor of an {@code @Idempotent} method: it would bypass idemkit.
     */
    private static void refuseUnprotected(String name, ToolExecutor executor, String path) {
        Method m = idempotentMethod(executor);
        if (m == null) {
            return;
        }
        throw new IllegalStateException(
                "idemkit-langchain4j: tool `"
                        + name
                        + "` ("
                        + m.getDeclaringClass().getName()
                        + "."
                        + m.getName()
                        + ") is @Idempotent but reaches AiServices through "
                        + path
                        + " with LangChain4j's own executor, which would run it unprotected, so it"
                        + " is refused; pass the object to AiServices.builder(...).tools(object)"
                        + " (with IdempotentTools.defaults(store)), or its"
                        + " IdempotentTools.builder().tools(object).store(store).build()"
                        + ".aiServiceTools()");
    }

    /** LangChain4j's {@code @CompensateFor} is not carried through idemkit's tools: refused. */
    private static void refuseCompensation(Object o) {
        for (Class<?> c = o.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
            for (Method m : c.getDeclaredMethods()) {
                if (m.isAnnotationPresent(CompensateFor.class)) {
                    throw new IllegalStateException(
                            "idemkit-langchain4j: "
                                    + o.getClass().getName()
                                    + "."
                                    + m.getName()
                                    + " is LangChain4j's @CompensateFor on an object with"
                                    + " @Idempotent tools, which idemkit does not carry; move the"
                                    + " compensation to another object");
                }
            }
        }
    }
}
