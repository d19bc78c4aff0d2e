package dev.idemkit.spring.boot;

import dev.idemkit.IdempotencyListener;
import dev.idemkit.IdempotencyStore;
import dev.idemkit.ModelErrorListener;
import dev.idemkit.langchain4j.IdempotentTools;
import java.util.function.Supplier;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.NoSuchBeanDefinitionException;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.support.DefaultSingletonBeanRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * LangChain4j in a Spring Boot app: every {@code AiServices.builder(...).tools(...)} the app (or
 * langchain4j-spring-boot-starter's {@code @AiService}) builds while the context is open runs its
 * {@code @Idempotent} tools through idemkit with the context's {@link IdempotencyStore} bean,
 * {@code idemkit.tenant}, and the {@link IdempotencyListener} and {@link ModelErrorListener} beans,
 * with no {@code IdempotentTools.defaults(store)} of the app's own (a call of its own still wins).
 * The store bean is looked up when a service is built, so services built before it (an
 * {@code @AiService} bean is) find it. {@code idemkit.langchain4j=false} turns it off; then such a
 * service is refused when built, as without the starter.
 */
@AutoConfiguration(after = IdemkitAutoConfiguration.class)
@ConditionalOnClass(IdempotentTools.class)
@ConditionalOnProperty(prefix = "idemkit", name = "langchain4j", matchIfMissing = true)
public class IdemkitLangChain4jAutoConfiguration {
    /** Made by Spring. */
    public IdemkitLangChain4jAutoConfiguration() {}

    /** The name of the singleton that takes the defaults back when the context closes. */
    static final String DEFAULTS_BEAN = "idemkitLangChain4jDefaults";

    /**
     * Installs the context's settings as {@link IdempotentTools}'s defaults before any bean is made
     * (a post-processor runs before singletons), and takes them back when the context closes.
     *
     * @return the post-processor
     */
    @Bean
    public static BeanFactoryPostProcessor idemkitLangChain4jDefaultsInstaller() {
        return IdemkitLangChain4jAutoConfiguration::install;
    }

    private static void install(ConfigurableListableBeanFactory beans) {
        Supplier<IdempotentTools.Builder> settings = () -> settings(beans);
        IdempotentTools.defaultsFrom(settings);
        DisposableBean takeBack = () -> IdempotentTools.clearDefaultsFrom(settings);
        beans.registerSingleton(DEFAULTS_BEAN, takeBack);
        if (beans instanceof DefaultSingletonBeanRegistry registry) {
            registry.registerDisposableBean(DEFAULTS_BEAN, takeBack);
        }
    }

    private static IdempotentTools.Builder settings(ConfigurableListableBeanFactory beans) {
        IdempotencyStore store;
        try {
            store = beans.getBean(IdempotencyStore.class);
        } catch (NoSuchBeanDefinitionException missing) {
            throw new IllegalStateException(
                    "idemkit-spring-boot-starter: a LangChain4j service has @Idempotent tools but"
                            + " the context has no single IdempotencyStore bean ("
                            + missing.getMessage()
                            + "); set idemkit.store.url, or make one bean @Primary",
                    missing);
        }
        IdempotentTools.Builder builder = IdempotentTools.builder().store(store);
        IdemkitProperties properties =
                beans.getBeanProvider(IdemkitProperties.class).getIfAvailable();
        String tenant = properties == null ? null : properties.getTenant();
        if (tenant != null && !tenant.isBlank()) {
            builder.tenant(tenant);
        }
        beans.getBeanProvider(IdempotencyListener.class).orderedStream().forEach(builder::listener);
        beans.getBeanProvider(ModelErrorListener.class)
                .orderedStream()
                .forEach(builder::modelErrorListener);
        return builder;
    }
}
