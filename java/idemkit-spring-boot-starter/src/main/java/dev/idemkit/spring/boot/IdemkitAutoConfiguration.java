package dev.idemkit.spring.boot;

import dev.idemkit.IdempotencyListener;
import dev.idemkit.IdempotencyStore;
import dev.idemkit.Idempotent;
import dev.idemkit.InMemoryIdempotencyStore;
import dev.idemkit.PostgresIdempotencyStore;
import dev.idemkit.RedisIdempotencyStore;
import dev.idemkit.micrometer.IdempotencyMetrics;
import dev.idemkit.springai.IdempotentToolCallbacks;
import io.micrometer.core.instrument.MeterRegistry;
import java.lang.reflect.Method;
import java.util.Locale;
import org.springframework.ai.tool.annotation.Tool;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Spring Boot auto-configuration of idemkit for Spring AI: the {@link IdempotencyStore} from {@code
 * idemkit.store.url}, an {@link IdempotentToolCallbacks} (a {@code ToolCallbackProvider}) of every
 * bean with a Spring AI {@code @Tool} method carrying {@code @Idempotent}, tenant and run read from
 * the tool context (or {@code idemkit.tenant}), and {@link IdempotencyMetrics} counting the events
 * in the app's {@link MeterRegistry} when it has one. Each bean steps aside for one of the app's
 * own.
 */
@AutoConfiguration(
        afterName = {
            "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
            "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration"
        })
@ConditionalOnClass(IdempotentToolCallbacks.class)
@EnableConfigurationProperties(IdemkitProperties.class)
public class IdemkitAutoConfiguration {
    /** Made by Spring. */
    public IdemkitAutoConfiguration() {}

    /**
     * The store {@code idemkit.store.url} names.
     *
     * @param properties idemkit's settings
     * @return the store, closed with the context
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    public IdempotencyStore idempotencyStore(IdemkitProperties properties) {
        try {
            return open(properties.getStore());
        } catch (IllegalArgumentException refused) {
            // The core's message shows the URL with its password masked.
            throw new IllegalArgumentException(
                    "idemkit-spring-boot-starter: idemkit.store.url: " + refused.getMessage(),
                    refused);
        }
    }

    /**
     * The idempotent tools of the app's beans, for {@code ChatClient.Builder.defaultToolCallbacks}
     * or a prompt's {@code toolCallbacks}: every {@code @Tool} method of each bean that has one
     * carrying {@code @Idempotent} (its other tools stay Spring AI's own).
     *
     * @param beans the application's beans
     * @param store the store
     * @param properties idemkit's settings
     * @param listeners event listeners (the Micrometer counters, the app's own)
     * @return the callbacks, closed with the context
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    public IdempotentToolCallbacks idempotentToolCallbacks(
            ListableBeanFactory beans,
            IdempotencyStore store,
            IdemkitProperties properties,
            ObjectProvider<IdempotencyListener> listeners) {
        IdempotentToolCallbacks.Builder builder = IdempotentToolCallbacks.builder().store(store);
        for (String name : beans.getBeanNamesForType(Object.class, false, false)) {
            Class<?> type = beans.getType(name, false);
            if (type != null && hasIdempotentTool(ClassUtils.getUserClass(type))) {
                builder.toolObjects(beans.getBean(name));
            }
        }
        if (properties.getTenant() != null) {
            builder.tenant(properties.getTenant());
        } else {
            builder.tenant(
                    IdempotentToolCallbacks.fromToolContext(
                            properties.getToolContext().getTenantKey()));
        }
        builder.run(
                IdempotentToolCallbacks.fromToolContext(properties.getToolContext().getRunKey()));
        listeners.orderedStream().forEach(builder::listener);
        return builder.build();
    }

    /** The Micrometer counters, when the app has a registry. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass({MeterRegistry.class, IdempotencyMetrics.class})
    @ConditionalOnBean(MeterRegistry.class)
    @ConditionalOnProperty(
            prefix = "idemkit",
            name = "metrics",
            havingValue = "true",
            matchIfMissing = true)
    public static class Metrics {
        /** Made by Spring. */
        public Metrics() {}

        /**
         * Counts idemkit's events ({@code idemkit.events}, tagged kind, tool and outcome).
         *
         * @param registry the app's registry
         * @return the listener
         */
        @Bean
        @ConditionalOnMissingBean
        public IdempotencyMetrics idempotencyMetrics(MeterRegistry registry) {
            return new IdempotencyMetrics(registry);
        }
    }

    private static boolean hasIdempotentTool(Class<?> type) {
        boolean classPolicy = AnnotatedElementUtils.hasAnnotation(type, Idempotent.class);
        for (Method method : ReflectionUtils.getDeclaredMethods(type)) {
            if (AnnotationUtils.findAnnotation(method, Tool.class) != null
                    && (classPolicy
                            || method.isAnnotationPresent(Idempotent.class)
                            || method.getDeclaringClass().isAnnotationPresent(Idempotent.class))) {
                return true;
            }
        }
        return false;
    }

    /**
     * The store a URL names: {@code memory} in this process, a PostgreSQL URL with its table
     * settings, any other URL (Redis, Redis Cluster, ...) as the core opens it, refusing a scheme
     * it does not know.
     */
    static IdempotencyStore open(IdemkitProperties.Store settings) {
        String url = settings.getUrl() == null ? "memory" : settings.getUrl().trim();
        int colon = url.indexOf("://");
        String scheme = (colon < 0 ? url : url.substring(0, colon)).toLowerCase(Locale.ROOT);
        if (scheme.isEmpty() || scheme.equals("memory")) {
            return new InMemoryIdempotencyStore();
        }
        if (scheme.equals("postgres") || scheme.equals("postgresql")) {
            PostgresIdempotencyStore postgres =
                    settings.getTable() == null
                            ? new PostgresIdempotencyStore(url)
                            : new PostgresIdempotencyStore(url, settings.getTable());
            return settings.isCreateTable() ? postgres.createTableIfMissing() : postgres;
        }
        return new RedisIdempotencyStore(url, settings.getKeyPrefix());
    }
}
