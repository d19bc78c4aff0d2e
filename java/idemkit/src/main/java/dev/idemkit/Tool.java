package dev.idemkit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a method as a tool the {@link ToolDispatcher} can call by name. It is found on the class of
 * the object given to the dispatcher, its superclasses and its interfaces; an override annotated
 * {@code @Tool} again replaces the original (with its own name and {@link Idempotent}), one that is
 * not keeps the original's annotations and is what runs.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface Tool {
    /**
     * The tool's name, which is also the scope of its keys; defaults to the method name.
     *
     * @return the name, or {@code ""} for the method name
     */
    String name() default "";

    /**
     * What the tool does (for a model's tool list).
     *
     * @return the description, or {@code ""}
     */
    String description() default "";

    /**
     * {@link IdempotencyHint#REQUIRED} refuses registration without a storing {@link Idempotent}
     * policy.
     *
     * @return the hint; default {@link IdempotencyHint#DEFAULT}
     */
    IdempotencyHint idempotencyHint() default IdempotencyHint.DEFAULT;

    /**
     * A deadline in milliseconds for the store lookup, any waiting and the body together; 0 = none.
     * Must be shorter than {@code leaseSeconds * 1000}.
     *
     * @return the deadline in milliseconds, or 0 for none
     */
    long timeoutMs() default 0;
}
