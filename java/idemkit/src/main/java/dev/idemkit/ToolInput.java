package dev.idemkit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks the one parameter that receives the whole input (converted to its type by Jackson), for
 * tools that take a bean, a {@code Map} or a {@code JsonNode}, or whose input is not an object.
 * Such a tool has no other input parameters ({@link IdempotencyContext} is still allowed).
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.PARAMETER)
public @interface ToolInput {}
