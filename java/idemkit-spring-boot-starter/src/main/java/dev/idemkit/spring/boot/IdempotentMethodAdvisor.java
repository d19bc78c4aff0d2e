package dev.idemkit.spring.boot;

import dev.idemkit.Idempotent;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import org.aopalliance.aop.Advice;
import org.springframework.aop.ClassFilter;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.StaticMethodMatcherPointcut;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.util.ClassUtils;

/**
 * The advisor the starter registers, as Spring registers its own for {@code @Transactional}: its
 * pointcut matches the {@code @Idempotent} methods a proxy can reach (public, protected or
 * package-private, not final or static, on a class that is not final), and its advice runs each
 * call through idemkit ({@link IdempotentMethodInterceptor}). A method's own {@code @Idempotent}
 * counts, and a class's for the class's tool methods: Spring AI's, LangChain4j's or idemkit's
 * {@code @Tool}.
 */
public final class IdempotentMethodAdvisor extends AbstractPointcutAdvisor
        implements DisposableBean {
    private static final long serialVersionUID = 1L;

    private static final String SPRING_AI_TOOL = "org.springframework.ai.tool.annotation.Tool";

    private final transient IdempotentMethodInterceptor interceptor;

    private final transient Pointcut pointcut =
            new StaticMethodMatcherPointcut() {
                {
                    setClassFilter((ClassFilter) type -> !Modifier.isFinal(type.getModifiers()));
                }

                @Override
                public boolean matches(Method method, Class<?> targetClass) {
                    return !method.isBridge()
                            && !method.isSynthetic()
                            && policy(method, targetClass) != null
                            && unreachable(method, targetClass) == null;
                }
            };

    IdempotentMethodAdvisor(IdempotentMethodInterceptor interceptor) {
        this.interceptor = interceptor;
    }

    @Override
    public Pointcut getPointcut() {
        return pointcut;
    }

    @Override
    public Advice getAdvice() {
        return interceptor;
    }

    /** The interceptor, to prepare a bean's operations at startup. */
    IdempotentMethodInterceptor interceptor() {
        return interceptor;
    }

    @Override
    public void destroy() {
        interceptor.close();
    }

    /**
     * The policy declared for {@code method} of {@code targetClass}: the most specific method's own
     * {@code @Idempotent}, else its class's when the method is a tool.
     *
     * @return the policy, or {@code null} when none is declared
     */
    static Idempotent policy(Method method, Class<?> targetClass) {
        Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
        Idempotent own = AnnotatedElementUtils.findMergedAnnotation(specific, Idempotent.class);
        if (own != null || !isTool(specific)) {
            return own;
        }
        Idempotent declaring =
                AnnotationUtils.findAnnotation(specific.getDeclaringClass(), Idempotent.class);
        return declaring != null
                ? declaring
                : AnnotationUtils.findAnnotation(targetClass, Idempotent.class);
    }

    /**
     * Why a proxy cannot apply the declared policy of {@code method}: {@code null} when it can, or
     * when nothing is declared; else the reason and the one-line fix.
     */
    static String unreachable(Method method, Class<?> targetClass) {
        if (method.isBridge()
                || method.isSynthetic()
                || method.getDeclaringClass() == Object.class
                || policy(method, targetClass) == null) {
            return null;
        }
        int modifiers = method.getModifiers();
        if (Modifier.isStatic(modifiers)) {
            return "it is static; make it an instance method called through the bean";
        }
        if (Modifier.isPrivate(modifiers)) {
            return "it is private; make it public and call it through the bean (not from the"
                    + " class itself)";
        }
        if (Modifier.isFinal(modifiers)) {
            return "it is final, so the proxy cannot override it; remove `final`";
        }
        if (Modifier.isFinal(ClassUtils.getUserClass(targetClass).getModifiers())) {
            return "its class is final, so Spring cannot proxy it; remove `final` from the class";
        }
        return null;
    }

    /** Spring AI's {@code @Tool}, when Spring AI is on the class path. */
    private static final Class<? extends java.lang.annotation.Annotation> SPRING_AI_TOOL_TYPE =
            ClassUtils.isPresent(SPRING_AI_TOOL, IdempotentMethodAdvisor.class.getClassLoader())
                    ? ClassUtils.resolveClassName(
                                    SPRING_AI_TOOL, IdempotentMethodAdvisor.class.getClassLoader())
                            .asSubclass(java.lang.annotation.Annotation.class)
                    : null;

    private static final String LANGCHAIN4J_TOOL = "dev.langchain4j.agent.tool.Tool";

    /** LangChain4j's {@code @Tool}, when LangChain4j is on the class path. */
    private static final Class<? extends java.lang.annotation.Annotation> LANGCHAIN4J_TOOL_TYPE =
            ClassUtils.isPresent(LANGCHAIN4J_TOOL, IdempotentMethodAdvisor.class.getClassLoader())
                    ? ClassUtils.resolveClassName(
                                    LANGCHAIN4J_TOOL,
                                    IdempotentMethodAdvisor.class.getClassLoader())
                            .asSubclass(java.lang.annotation.Annotation.class)
                    : null;

    /** Whether {@code method} is a tool (Spring AI's, LangChain4j's or idemkit's {@code @Tool}). */
    static boolean isTool(Method method) {
        return AnnotationUtils.findAnnotation(method, dev.idemkit.Tool.class) != null
                || SPRING_AI_TOOL_TYPE != null
                        && AnnotationUtils.findAnnotation(method, SPRING_AI_TOOL_TYPE) != null
                || langChain4jToolName(method) != null;
    }

    /**
     * The tool name of a LangChain4j {@code @Tool} method as idemkit-langchain4j names it (its
     * {@code name}, else the method's), so that a call through its {@code IdempotentTools} and the
     * proxy share one key; {@code null} for any other method.
     */
    static String langChain4jToolName(Method method) {
        if (LANGCHAIN4J_TOOL_TYPE == null) {
            return null;
        }
        java.lang.annotation.Annotation tool =
                AnnotationUtils.findAnnotation(method, LANGCHAIN4J_TOOL_TYPE);
        if (tool == null) {
            return null;
        }
        Object name = AnnotationUtils.getValue(tool, "name");
        return name instanceof String && !((String) name).isBlank()
                ? (String) name
                : method.getName();
    }

    /** Whether {@code method} is a Spring AI {@code @Tool}. */
    static boolean isSpringAiTool(Method method) {
        return SPRING_AI_TOOL_TYPE != null
                && AnnotationUtils.findAnnotation(method, SPRING_AI_TOOL_TYPE) != null;
    }
}
