package dev.idemkit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Names and describes a tool parameter: the input member it is read from. Without it the
 * parameter's own name is used (compile with {@code -parameters}).
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.PARAMETER)
public @interface ToolParam {
    /**
     * The input member the parameter is read from.
     *
     * @return the name, or {@code ""} for the parameter's own name
     */
    String name() default "";

    /**
     * What the parameter means (for a model's tool list).
     *
     * @return the description, or {@code ""}
     */
    String description() default "";
}
