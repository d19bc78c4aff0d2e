package dev.idemkit.langchain4j;

import dev.langchain4j.service.AiServiceContext;
import dev.langchain4j.spi.services.AiServiceContextFactory;

/**
 * LangChain4j's hook for the context of every {@code AiServices.builder(...)}, registered by {@code
 * META-INF/services}: the context's tool service is {@link IdempotentToolService}, so {@code
 * .tools(new Flights())} runs the {@code @Idempotent} tools through {@link IdempotentTools}.
 *
 * <p>Internal API of LangChain4j, verified on the LangChain4j version of this module's build
 * (1.19.0); {@code AiServicesHookTest} fails if an upgrade stops calling it. Not for applications.
 */
public final class IdempotentAiServiceContextFactory implements AiServiceContextFactory {
    /** The instance {@code ServiceLoader} makes. */
    public IdempotentAiServiceContextFactory() {}

    @Override
    public AiServiceContext create(Class<?> aiServiceClass) {
        return new Context(aiServiceClass);
    }

    /** LangChain4j's context, with idemkit's tool service (its constructor is protected). */
    private static final class Context extends AiServiceContext {
        Context(Class<?> aiServiceClass) {
            super(aiServiceClass);
            toolService = new IdempotentToolService();
        }
    }
}
