package dev.idemkit.spring.boot;

import dev.idemkit.IdempotencyListener;
import dev.idemkit.IdempotencyStore;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.aop.config.AopConfigUtils;
import org.springframework.aop.framework.Advised;
import org.springframework.aop.framework.AopProxyUtils;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.EnvironmentAware;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotationMetadata;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * {@code @Idempotent} on any bean method, applied the way Spring applies {@code @Transactional}: an
 * auto-proxy creator (Spring's infrastructure one, unless the app has the AspectJ one) with {@link
 * IdempotentMethodAdvisor}, so every caller that goes through the bean — a Spring AI chat client
 * given the bean, a {@code MethodToolCallbackProvider} over it, a controller calling a service — is
 * protected. At startup it builds each singleton's operations (a policy the core refuses fails the
 * start) and logs a WARN naming each {@code @Idempotent} method the proxy cannot reach (private,
 * final, static, on a final class, or a bean not proxied) with the fix. {@code
 * idemkit.methods=false} turns it off.
 */
@AutoConfiguration(after = IdemkitAutoConfiguration.class)
@ConditionalOnProperty(
        prefix = "idemkit",
        name = "methods",
        havingValue = "true",
        matchIfMissing = true)
@Import(IdemkitMethodAutoConfiguration.ProxyCreator.class)
public class IdemkitMethodAutoConfiguration {
    private static final Log LOG = LogFactory.getLog(IdemkitMethodAutoConfiguration.class);

    /** Made by Spring. */
    public IdemkitMethodAutoConfiguration() {}

    /**
     * Registers Spring's auto-proxy creator if the app has none, proxying classes (as Boot does by
     * default) unless {@code spring.aop.proxy-target-class=false}: Spring AI calls a tool's method
     * of the bean's class on the bean, which a JDK interface proxy is not.
     */
    static final class ProxyCreator implements ImportBeanDefinitionRegistrar, EnvironmentAware {
        private Environment environment;

        @Override
        public void setEnvironment(Environment environment) {
            this.environment = environment;
        }

        @Override
        public void registerBeanDefinitions(
                AnnotationMetadata metadata, BeanDefinitionRegistry registry) {
            AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
            if (environment.getProperty("spring.aop.proxy-target-class", Boolean.class, true)) {
                AopConfigUtils.forceAutoProxyCreatorToUseClassProxying(registry);
            }
        }
    }

    /**
     * The advisor; its dependencies are looked up at the first call, so that making it (among the
     * first beans) makes nothing else early.
     *
     * @param store the store
     * @param properties idemkit's settings
     * @param listeners event listeners (the Micrometer counters, the app's own)
     * @param resolver the tenant and run of calls without a tool context
     * @param toolCallbacks the starter's tool callbacks, whose tools' events are heard already
     * @return the advisor
     */
    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    static IdempotentMethodAdvisor idempotentMethodAdvisor(
            ObjectProvider<IdempotencyStore> store,
            ObjectProvider<IdemkitProperties> properties,
            ObjectProvider<IdempotencyListener> listeners,
            ObjectProvider<IdempotencyContextResolver> resolver,
            ObjectProvider<dev.idemkit.springai.IdempotentToolCallbacks> toolCallbacks) {
        return new IdempotentMethodAdvisor(
                new IdempotentMethodInterceptor(
                        store, properties, listeners, resolver, toolCallbacks));
    }

    /**
     * The default resolver: the tenant {@code idemkit.tenant} (or none), no run.
     *
     * @param properties idemkit's settings
     * @return the resolver
     */
    @Bean
    @ConditionalOnMissingBean
    public IdempotencyContextResolver idempotencyContextResolver(IdemkitProperties properties) {
        return IdempotencyContextResolver.fixed(properties.getTenant(), null);
    }

    /**
     * The startup check, once every singleton exists.
     *
     * @param beans the bean factory
     * @param advisor the advisor
     * @return the check
     */
    @Bean
    static SmartInitializingSingleton idempotentMethodCheck(
            ConfigurableListableBeanFactory beans, IdempotentMethodAdvisor advisor) {
        return () -> check(beans, advisor);
    }

    /** Prepares each reachable method's operation; warns of each one a proxy cannot reach. */
    static void check(ConfigurableListableBeanFactory beans, IdempotentMethodAdvisor advisor) {
        List<String> warnings = new ArrayList<>();
        for (String name : beans.getBeanDefinitionNames()) {
            Class<?> type = beans.getType(name, false);
            if (type == null || name.startsWith("scopedTarget.")) {
                continue;
            }
            Class<?> user = ClassUtils.getUserClass(type);
            List<Method> reachable = new ArrayList<>();
            for (Method method : ReflectionUtils.getAllDeclaredMethods(user)) {
                if (IdempotentMethodAdvisor.policy(method, user) == null
                        || method.isBridge()
                        || method.isSynthetic()) {
                    continue;
                }
                String why = IdempotentMethodAdvisor.unreachable(method, user);
                if (why != null) {
                    warnings.add(describe(name, user, method) + why);
                } else {
                    reachable.add(method);
                }
            }
            if (reachable.isEmpty() || !beans.isSingleton(name) || !beans.containsSingleton(name)) {
                continue;
            }
            Object bean = beans.getSingleton(name);
            if (!advised(bean, advisor)) {
                for (Method method : reachable) {
                    warnings.add(
                            describe(name, user, method)
                                    + "the bean is not proxied (it was made before the"
                                    + " auto-proxy creator, e.g. a BeanPostProcessor or one of"
                                    + " its dependencies); inject it lazily or make it an ordinary"
                                    + " bean");
                }
                continue;
            }
            Object target = AopProxyUtils.getSingletonTarget(bean);
            if (target != null) {
                for (Method method : reachable) {
                    advisor.interceptor()
                            .guard(AopUtils.getMostSpecificMethod(method, user), target);
                }
            }
        }
        for (String warning : warnings) {
            LOG.warn(warning);
        }
    }

    private static String describe(String bean, Class<?> type, Method method) {
        return "idemkit: @Idempotent on "
                + type.getName()
                + "."
                + method.getName()
                + " (bean `"
                + bean
                + "`) is NOT applied, and calls of it run unprotected: ";
    }

    private static boolean advised(Object bean, IdempotentMethodAdvisor advisor) {
        if (!(bean instanceof Advised)) {
            return false;
        }
        for (org.springframework.aop.Advisor a : ((Advised) bean).getAdvisors()) {
            if (a == advisor) {
                return true;
            }
        }
        return false;
    }
}
