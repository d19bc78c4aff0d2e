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
     * How the {@link ParamType#BODY} parameters are written: a JSON object (default) or a form
     * ({@code application/x-www-form-urlencoded}, as Stripe takes it). A {@code Content-Type}
     * default header that names another media type is refused when the action is registered.
     *
     * @return the body's encoding; default {@link BodyEncoding#JSON}
     */
    BodyEncoding bodyEncoding() default BodyEncoding.JSON;

    /**
     * Declares that the upstream deduplicates by the {@code Idempotency-Key} it is sent, as Stripe
     * does: it stores its answer per key and answers a repeat of the key from that record (SPEC
     * v1.1 rule 12). Only then may a request that reached the server be sent again under the same
     * key, after a transport error, a 5xx or a 409 ("an earlier request with this key is still in
     * progress"), with capped backoff within {@link #timeoutMs()}; only then may a later call of
     * the same request take over a claim abandoned after a timeout, and send it again. A 422 or 417
     * under the key then means the upstream holds the key for another payload: {@link
     * PayloadMismatchException}.
     *
     * <p>Without it (the default) only a request that never reached the server (nothing was written
     * to the connection) is sent again; an answer lost after that is an unknown outcome: an {@link
     * Effect#EFFECTFUL} action holds it as indeterminate, an {@link Effect#IDEMPOTENT} one releases
     * it. Declare it only for a service that documents this behaviour for the header form you send
     * ({@code WebServiceExecutor.Builder#keyHeaderForm}); a server that keeps only 2xx answers
     * (some middleware does) may act twice on a resend after a 5xx.
     *
     * @return whether the upstream honours the key; default {@code false}
     */
    boolean honorsIdempotencyKey() default false;

    /**
     * One deadline in milliseconds for the store lookup, any waiting and the HTTP exchange (its
     * resends included); 0 = none. Must be shorter than {@code leaseSeconds * 1000}. An exchange
     * cut at the deadline throws {@link IdempotencyTimeoutException} and leaves its claim in
     * progress (its outcome is unknown).
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
