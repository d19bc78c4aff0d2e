package dev.idemkit.mcp;

import io.modelcontextprotocol.common.McpTransportContext;

/**
 * Where a {@code tools/call}'s tenant and run come from: the MCP session or request context (a
 * header the transport's context extractor put in the {@link McpTransportContext}, the
 * authenticated principal, the session id), never the model's arguments (SPEC v1.2 §9 rule 4).
 *
 * <p>Taking the session id as the run makes each session its own key scope: a client that
 * reconnects gets a new session, so its retry would run the tool again. Scope by something that
 * outlives a connection (a conversation id the client sends as a header) instead.
 */
@FunctionalInterface
public interface McpScopeResolver {
    /**
     * The tenant and run of one call.
     *
     * @param context what the transport extracted from the request ({@link
     *     McpTransportContext#EMPTY} for stdio unless the server provides one)
     * @param sessionId the MCP session's id, or {@code null}
     * @return the scope; its tenant and run may be {@code null} (none)
     */
    Scope resolve(McpTransportContext context, String sessionId);

    /**
     * A call's tenant and run.
     *
     * @param tenant the tenant that scopes the call's key, or {@code null}
     * @param run the run that scopes the call's key, or {@code null}
     */
    record Scope(String tenant, String run) {}

    /**
     * One tenant and run for every call (a stdio server serves one user).
     *
     * @param tenant the tenant, or {@code null}
     * @param run the run, or {@code null}
     * @return the resolver
     */
    static McpScopeResolver fixed(String tenant, String run) {
        Scope scope = new Scope(tenant, run);
        return (context, sessionId) -> scope;
    }

    /**
     * Tenant and run read from the transport context under these keys (put there by the transport's
     * {@code McpTransportContextExtractor}, e.g. from an HTTP header or the principal); a missing
     * or non-text value is none.
     *
     * @param tenantKey the context key of the tenant, or {@code null} for none
     * @param runKey the context key of the run, or {@code null} for none
     * @return the resolver
     */
    static McpScopeResolver fromContext(String tenantKey, String runKey) {
        return (context, sessionId) -> new Scope(text(context, tenantKey), text(context, runKey));
    }

    private static String text(McpTransportContext context, String key) {
        if (key == null || context == null) {
            return null;
        }
        Object value = context.get(key);
        return value instanceof String ? (String) value : null;
    }
}
