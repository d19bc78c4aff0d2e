package dev.idemkit.spring.boot;

import dev.idemkit.IdempotencyListener;
import dev.idemkit.IdempotencyStore;
import dev.idemkit.Idempotent;
import dev.idemkit.InMemoryIdempotencyStore;
import dev.idemkit.ModelErrorListener;
import dev.idemkit.PostgresIdempotencyStore;
import dev.idemkit.RedisIdempotencyStore;
import dev.idemkit.micrometer.IdempotencyMetrics;
import dev.idemkit.springai.IdempotentToolCallbacks;
import io.micrometer.core.instrument.MeterRegistry;
import java.lang.reflect.Method;
import java.util.Locale;
import javax.sql.DataSource;
import org.springframework.ai.tool.annotation.Tool;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
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
 * idemkit.store.url} (or over the app's own {@code DataSource} or Jedis client, {@code
 * idemkit.store.client}), an {@link IdempotentToolCallbacks} (a {@code ToolCallbackProvider}) of
 * every bean with a Spring AI {@code @Tool} method carrying {@code @Idempotent}, tenant and run
 * read from the tool context (or {@code idemkit.tenant}), and {@link IdempotencyMetrics} counting
 * the events in the app's {@link MeterRegistry} when it has one. Each bean steps aside for one of
 * the app's own.
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

    /** The name of the store bean this configuration makes. */
    static final String STORE_BEAN = "idempotencyStore";

    /**
     * The store {@code idemkit.store.url} names, or, with {@code idemkit.store.client}, the store
     * over the application's own {@code DataSource} or Jedis client bean (which the store borrows
     * and never closes; the bean outlives the store).
     *
     * @param properties idemkit's settings
     * @param beans the application's beans, for {@code idemkit.store.client}
     * @return the store, closed with the context
     */
    @Bean(name = STORE_BEAN, destroyMethod = "close")
    @ConditionalOnMissingBean
    public IdempotencyStore idempotencyStore(
            IdemkitProperties properties, ConfigurableListableBeanFactory beans) {
        IdemkitProperties.Store settings = properties.getStore();
        if (settings.getClient() != null) {
            return overAppClient(settings, beans);
        }
        return idempotencyStore(properties);
    }

    /** The store {@code idemkit.store.url} names. */
    IdempotencyStore idempotencyStore(IdemkitProperties properties) {
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
     * {@code idemkit.store.client}: the JDBC store over the app's {@code DataSource}, or the Jedis
     * store over its {@code UnifiedJedis}; the store bean is made to depend on the client bean, so
     * the context closes the store first.
     */
    static IdempotencyStore overAppClient(
            IdemkitProperties.Store settings, ConfigurableListableBeanFactory beans) {
        String client = settings.getClient().trim().toLowerCase(Locale.ROOT);
        // A blank URL (e.g. `idemkit.store.url=${STORE_URL:}`) is unset, as it is without a client.
        String url = settings.getUrl() == null ? "" : settings.getUrl().trim();
        if (!url.isEmpty() && !url.equalsIgnoreCase("memory")) {
            throw new IllegalArgumentException(
                    "idemkit-spring-boot-starter: idemkit.store.url and idemkit.store.client are"
                            + " both set; set idemkit.store.client to build the store over the"
                            + " application's own client, or idemkit.store.url to let idemkit open"
                            + " its own connections, not both");
        }
        switch (client) {
            case "datasource":
                {
                    DataSource dataSource =
                            appClient(
                                    beans,
                                    DataSource.class,
                                    "datasource",
                                    "a javax.sql.DataSource bean (spring-boot-starter-jdbc with"
                                            + " spring.datasource.url, or a @Bean of your own)");
                    PostgresIdempotencyStore postgres =
                            settings.getTable() == null
                                    ? new PostgresIdempotencyStore(dataSource)
                                    : new PostgresIdempotencyStore(dataSource, settings.getTable());
                    return settings.isCreateTable() ? postgres.createTableIfMissing() : postgres;
                }
            case "jedis":
                {
                    String type = "redis.clients.jedis.UnifiedJedis";
                    ClassLoader loader = IdemkitAutoConfiguration.class.getClassLoader();
                    if (!ClassUtils.isPresent(type, loader)) {
                        throw new IllegalArgumentException(
                                "idemkit-spring-boot-starter: idemkit.store.client=jedis, but Jedis"
                                        + " is not on the classpath; add redis.clients:jedis (8.x)"
                                        + " and a RedisClient bean, or set idemkit.store.url");
                    }
                    Object jedis =
                            appClient(
                                    beans,
                                    ClassUtils.resolveClassName(type, loader),
                                    "jedis",
                                    "a redis.clients.jedis.UnifiedJedis bean (a RedisClient or"
                                            + " RedisClusterClient @Bean of your own)");
                    return JedisStores.open(jedis, settings.getKeyPrefix());
                }
            default:
                throw new IllegalArgumentException(
                        "idemkit-spring-boot-starter: idemkit.store.client: unknown client `"
                                + settings.getClient()
                                + "`; use datasource (the application's javax.sql.DataSource) or"
                                + " jedis (its redis.clients.jedis.UnifiedJedis), or leave it unset"
                                + " and set idemkit.store.url");
        }
    }

    /**
     * The one bean of {@code type} (or the one marked primary among several), registered as a bean
     * the store depends on.
     */
    private static <T> T appClient(
            ConfigurableListableBeanFactory beans, Class<T> type, String client, String needed) {
        String[] names = beans.getBeanNamesForType(type);
        String chosen = names.length == 1 ? names[0] : null;
        if (names.length > 1) {
            for (String name : names) {
                if (beans.containsBeanDefinition(name)
                        && beans.getBeanDefinition(name).isPrimary()) {
                    if (chosen != null) {
                        chosen = null;
                        break;
                    }
                    chosen = name;
                }
            }
        }
        if (chosen == null) {
            throw new IllegalArgumentException(
                    "idemkit-spring-boot-starter: idemkit.store.client="
                            + client
                            + " needs "
                            + needed
                            + (names.length == 0
                                    ? ", and the application has none"
                                    : ", and the application has "
                                            + names.length
                                            + " ("
                                            + String.join(", ", names)
                                            + ") with no single one marked @Primary; mark one"
                                            + " @Primary or define an IdempotencyStore bean of"
                                            + " your own"));
        }
        T bean = beans.getBean(chosen, type);
        beans.registerDependentBean(chosen, STORE_BEAN);
        return bean;
    }

    /** Loaded only when Jedis is on the classpath. */
    private static final class JedisStores {
        static IdempotencyStore open(Object client, String prefix) {
            redis.clients.jedis.UnifiedJedis jedis = (redis.clients.jedis.UnifiedJedis) client;
            return prefix == null
                    ? new dev.idemkit.jedis.RedisIdempotencyStore(jedis)
                    : new dev.idemkit.jedis.RedisIdempotencyStore(jedis, prefix);
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
     * @param modelErrorListeners the app's {@link ModelErrorListener} beans: told of each idemkit
     *     error a tool hands Spring AI as error text for the model
     * @return the callbacks, closed with the context
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    public IdempotentToolCallbacks idempotentToolCallbacks(
            ListableBeanFactory beans,
            IdempotencyStore store,
            IdemkitProperties properties,
            ObjectProvider<IdempotencyListener> listeners,
            ObjectProvider<ModelErrorListener> modelErrorListeners) {
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
        modelErrorListeners.orderedStream().forEach(builder::modelErrorListener);
        return builder.build();
    }

    /**
     * Wraps the app's {@code ToolCallingManager} (Spring AI's auto-configured one, or its own) in
     * an {@link dev.idemkit.springai.IdempotentToolCallingManager}, so that {@code @Idempotent}
     * tools wired Spring AI's own way ({@code .tools(new Flights())}, {@code defaultTools(bean)}, a
     * {@code MethodToolCallbackProvider}) run through {@link IdempotentToolCallbacks}' store,
     * policy and listeners too. Its beans are looked up at the first tool call, not here.
     *
     * @param tools the idempotent tools, for their store, policy, listeners and tool context
     * @param resolvers the {@code ToolCallbackResolver} the manager falls back on, if any
     * @return the post-processor
     */
    @Bean
    static org.springframework.beans.factory.config.BeanPostProcessor
            idempotentToolCallingManagerPostProcessor(
                    ObjectProvider<IdempotentToolCallbacks> tools,
                    ObjectProvider<org.springframework.ai.tool.resolution.ToolCallbackResolver>
                            resolvers) {
        return new org.springframework.beans.factory.config.BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String name) {
                if (bean instanceof org.springframework.ai.model.tool.ToolCallingManager manager
                        && !(bean instanceof dev.idemkit.springai.IdempotentToolCallingManager)) {
                    return new dev.idemkit.springai.IdempotentToolCallingManager(
                            manager, tools::getObject, resolvers::getIfUnique);
                }
                return bean;
            }
        };
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
