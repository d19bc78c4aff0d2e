package dev.idemkit.spring.boot;

import java.lang.reflect.Method;

/**
 * The tenant and run of a call of an {@code @Idempotent} bean method that the starter's advisor
 * protects, where the call itself carries none (a Spring AI {@code ToolContext} argument does: then
 * its entries are used, as for the {@code IdempotentToolCallbacks} bean). Define a bean of this
 * type to scope keys by the current request, e.g. a tenant read from a request-scoped bean or the
 * security context. The default bean answers {@code idemkit.tenant} (or none) and no run.
 */
public interface IdempotencyContextResolver {
    /**
     * The tenant that scopes the call's key.
     *
     * @param method the {@code @Idempotent} method called
     * @param arguments its arguments (do not modify them)
     * @return the tenant, or {@code null} for none
     */
    String tenant(Method method, Object[] arguments);

    /**
     * The run that scopes the call's key (a conversation, a job).
     *
     * @param method the {@code @Idempotent} method called
     * @param arguments its arguments (do not modify them)
     * @return the run, or {@code null} for none
     */
    String run(Method method, Object[] arguments);

    /**
     * A resolver answering the same tenant and run for every call.
     *
     * @param tenant the tenant, or {@code null}
     * @param run the run, or {@code null}
     * @return the resolver
     */
    static IdempotencyContextResolver fixed(String tenant, String run) {
        return new IdempotencyContextResolver() {
            @Override
            public String tenant(Method method, Object[] arguments) {
                return tenant;
            }

            @Override
            public String run(Method method, Object[] arguments) {
                return run;
            }
        };
    }
}
