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
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * LangChain4j's tool service with idemkit in the paths a tool reaches the model by: objects given
 * to {@code tools(Object...)} that have {@code @Idempotent} tools run them through {@link
 * IdempotentTools} with its {@link IdempotentTools#defaults defaults} (refused when there are
 * none); the others run as LangChain4j runs them. A LangChain4j executor of an {@code @Idempotent}
 * method handed over ready-made ({@code tools(Map)}, {@code tools(List<AiServiceTool>)}, a {@code
 * ToolProvider}) would run unprotected, so it is refused, naming the tool and the fix.
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
        tools.forEach((s, e) -> refuseUnprotected(s.name(), e, "tools(Map)"));
        super.tools(tools);
    }

    @Override
    public void tools(Map<ToolSpecification, ToolExecutor> tools, Set<String> immediateReturn) {
        tools.forEach((s, e) -> refuseUnprotected(s.name(), e, "tools(Map, Set)"));
        super.tools(tools, immediateReturn);
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
        if (!(executor instanceof DefaultToolExecutor)) {
            return;
        }
        Method m = ((DefaultToolExecutor) executor).originalMethod();
        if (m == null
                || (m.getAnnotation(Idempotent.class) == null
                        && m.getDeclaringClass().getAnnotation(Idempotent.class) == null)) {
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
