package dev.idemkit.mcp;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * The MCP tool annotations that idemkit's policy does not decide, on a {@link dev.idemkit.Tool}
 * method served over MCP: {@code readOnlyHint} and {@code idempotentHint} come from its {@link
 * dev.idemkit.Idempotent} policy, these as the developer declares them. Without it they are left
 * out (MCP's defaults: destructive, open world).
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface McpHints {
    /**
     * {@code destructiveHint}: whether the tool may destroy or overwrite (not only add).
     *
     * @return the hint
     */
    boolean destructive() default true;

    /**
     * {@code openWorldHint}: whether the tool reaches outside systems.
     *
     * @return the hint
     */
    boolean openWorld() default true;

    /**
     * The tool's human-readable title.
     *
     * @return the title, or {@code ""} for none
     */
    String title() default "";
}
