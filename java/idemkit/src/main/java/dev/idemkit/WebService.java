package dev.idemkit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a method of a role class as a {@code WEB_SERVICE} action the {@link WebServiceExecutor}
 * calls by name: an HTTP request built from the call's input. The method is a declaration and is
 * never run: its parameters (named by {@link ToolParam} or, compiled with {@code -parameters}, by
 * themselves) are the input members the action accepts, and its declared return type is what the
 * response body is read as ({@code String}: the raw body; {@code void}/{@code Void}: nothing;
 * anything else: JSON read by Jackson, generics included).
 *
 * <p>The policy is the method's {@link Idempotent}, else its class's (a method's replaces the
 * class's entirely); with neither, the action has strategy {@link KeyStrategy#NONE}. The action's
 * name is the scope of its keys, as a tool's is: a tool and an action of one name on one store
 * share records.
 *
 * <p>It is found on the role's class, its superclasses and its interfaces, as {@link Tool} is: an
 * override annotated {@code @WebService} again replaces the original, one that is not keeps the
 * original's annotations.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface WebService {
    /**
     * The URL: absolute ({@code https://api.example.com/v1/charges}), or a path ({@code
     * /v1/charges}) resolved against the executor's {@code baseUri}. {@code {name}} placeholders
     * are filled from the parameters of those names, percent-encoded as one path segment each.
     *
     * @return the endpoint URL or path
     */
    String endpoint();

    /**
     * The HTTP method.
     *
     * @return the method; default {@code POST}
     */
    HttpMethod method() default HttpMethod.POST;

    /**
     * Where the parameters go (placeholders always fill the path).
     *
     * @return where the parameters go; default the JSON body
     */
    ParamType paramType() default ParamType.BODY;

    /**
     * One deadline in milliseconds for the store lookup, any waiting and the HTTP exchange (its
     * transport retries included); 0 = none. Must be shorter than {@code leaseSeconds * 1000}. An
     * exchange cut at the deadline throws {@link IdempotencyTimeoutException} and leaves its claim
     * in progress (its outcome is unknown).
     *
     * @return the deadline in milliseconds, or 0 for none
     */
    long timeoutMs() default 0;

    /**
     * The action's name, which is also the scope of its keys; defaults to the method name.
     *
     * @return the name, or {@code ""} for the method name
     */
    String name() default "";

    /**
     * What the action does (for a model's tool list).
     *
     * @return the description, or {@code ""}
     */
    String description() default "";
}
