package dev.idemkit.mcp;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idemkit.Effect;
import dev.idemkit.ErrorKind;
import dev.idemkit.IdempotencyException;
import dev.idemkit.IdempotencyListener;
import dev.idemkit.IdempotencyStore;
import dev.idemkit.Idempotent;
import dev.idemkit.IdempotentOperation;
import dev.idemkit.InMemoryIdempotencyStore;
import dev.idemkit.KeyStrategy;
import dev.idemkit.RetryPolicy;
import dev.idemkit.Tool;
import dev.idemkit.ToolMethod;
import dev.idemkit.ToolParam;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.server.McpAsyncServerExchange;
import io.modelcontextprotocol.server.McpServerFeatures.AsyncToolSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.TextContent;
import io.modelcontextprotocol.spec.McpSchema.ToolAnnotations;
import java.lang.reflect.Method;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Tools served over the Model Context Protocol (the MCP Java SDK) under idemkit's policies: every
 * {@code tools/call} of a protected tool goes through an {@link IdempotentOperation} (claim, wait,
 * replay, hold; the same store, policy and events as the other faces), and {@code tools/list}
 * carries the annotations the policy implies (SPEC v1.2 §9 rule 4).
 *
 * <pre>{@code
 * IdempotentMcpTools tools = IdempotentMcpTools.builder()
 *         .tools(new BookingTools())          // @Tool + @Idempotent methods
 *         .store(new RedisIdempotencyStore(url))
 *         .scope(McpScopeResolver.fromContext("tenant", null))
 *         .build();
 * McpServer.sync(transport).tools(tools.syncSpecifications()).build();
 * }</pre>
 *
 * <p>What a client sees: a first call's result, or a repeat's remembered result, with {@code _meta}
 * {@code {"idempotencyKey": ..., "replayed": true|false}}; a duplicate still running is waited for
 * (within the tool's {@code timeoutMs}); a refusal (a held or abandoned effect, a key reused with
 * other arguments, a timeout) is a tool error ({@code isError: true}) whose text tells the model
 * not to retry and names the key for the operator — never a protocol error. A call whose {@code
 * _meta} holds {@code "idempotencyKey": "<string>"} is keyed by that string, scoped by tool, tenant
 * and run, with its arguments checked ({@link IdempotentOperation#answerWithOutsideKey}).
 *
 * <p>Records, shared with the other faces and with a Rust MCP server ({@code idemkit::mcp}) on the
 * same store, since both key a call alike (tool name, tenant, run, the canonical JSON of the
 * arguments, or the client's key): a tool method's result is recorded as its JSON, as every Java
 * face records it, and answered as one text content (an object also as structured content); a
 * wrapped specification's result is recorded as the whole {@code CallToolResult}, as the Rust face
 * records every result. A repeat answers either form, whichever face or language wrote it.
 *
 * <p>Thread-safe once built. {@link #close()} frees the operations (and a store the builder made).
 */
public final class IdempotentMcpTools implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("dev.idemkit");

    /** The {@code _meta} member a client's key arrives in and a result's key is told in. */
    public static final String KEY_META = "idempotencyKey";

    /** The result {@code _meta} member that says whether the result was remembered. */
    public static final String REPLAYED_META = "replayed";

    private static final TypeReference<Map<String, Object>> MAP = new TypeReference<>() {};
    private static final io.modelcontextprotocol.json.TypeRef<Map<String, Object>> MAP_REF =
            new io.modelcontextprotocol.json.TypeRef<>() {};

    /** One tool as served: sync and async faces of one handler. */
    private interface Served {
        SyncToolSpecification sync();

        AsyncToolSpecification async();
    }

    /** How one protected call runs, given its scope, client key and arguments. */
    private interface Call {
        IdempotentOperation.Answer<?> run(
                McpScopeResolver.Scope scope, String clientKey, String json);
    }

    private final List<Served> served;
    private final List<AutoCloseable> owned;

    private IdempotentMcpTools(List<Served> served, List<AutoCloseable> owned) {
        this.served = served;
        this.owned = owned;
    }

    /**
     * Starts a set of served tools.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * The tools for a sync server ({@code McpServer.sync(...).tools(...)}).
     *
     * @return one specification per tool, in registration order
     * @throws IllegalStateException an async specification was wrapped (serve {@link
     *     #asyncSpecifications()} instead)
     */
    public List<SyncToolSpecification> syncSpecifications() {
        List<SyncToolSpecification> out = new ArrayList<>();
        for (Served s : served) {
            out.add(s.sync());
        }
        return out;
    }

    /**
     * The tools for an async server ({@code McpServer.async(...).tools(...)}); a call runs on
     * Reactor's bounded elastic scheduler, since the store's wait and the body block.
     *
     * @return one specification per tool, in registration order
     */
    public List<AsyncToolSpecification> asyncSpecifications() {
        List<AsyncToolSpecification> out = new ArrayList<>();
        for (Served s : served) {
            out.add(s.async());
        }
        return out;
    }

    /**
     * The annotations a policy implies (SPEC v1.2 §9 rule 4): {@code effect = READ_ONLY} → {@code
     * readOnlyHint: true}; {@code HASH_INPUT} or {@code EXPLICIT} → {@code idempotentHint: true};
     * {@code UUID}, {@code NONE} or no policy → {@code idempotentHint: false}; title, {@code
     * destructiveHint}, {@code openWorldHint} and {@code returnDirect} as {@code declared} has
     * them.
     *
     * @param policy the tool's policy, or {@code null} for none
     * @param declared the developer's annotations, or {@code null}
     * @return the annotations to list
     */
    public static ToolAnnotations annotations(Idempotent policy, ToolAnnotations declared) {
        KeyStrategy strategy = policy == null ? KeyStrategy.NONE : policy.strategy();
        boolean readOnly = policy != null && policy.effect() == Effect.READ_ONLY;
        boolean idempotent = strategy == KeyStrategy.HASH_INPUT || strategy == KeyStrategy.EXPLICIT;
        return new ToolAnnotations(
                declared == null ? null : declared.title(),
                readOnly,
                declared == null ? null : declared.destructiveHint(),
                idempotent,
                declared == null ? null : declared.openWorldHint(),
                declared == null ? null : declared.returnDirect());
    }

    /**
     * Frees every operation, and the store if the builder made it. Calls in flight finish first.
     */
    @Override
    public void close() {
        for (AutoCloseable c : owned) {
            try {
                c.close();
            } catch (Exception e) {
                LOG.log(System.Logger.Level.WARNING, "idemkit: closing an MCP tool failed", e);
            }
        }
    }

    // ---- one call ----------------------------------------------------------------------------

    /** A tool's own error result ({@code isError: true}), thrown so the policy settles it. */
    private static final class ToolErrorResult extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final transient CallToolResult result;

        ToolErrorResult(CallToolResult result) {
            super(text(result), null, false, false);
            this.result = result;
        }

        private static String text(CallToolResult result) {
            StringBuilder b = new StringBuilder("the tool answered an error");
            for (Object c : result.content()) {
                if (c instanceof TextContent) {
                    b.append(": ").append(((TextContent) c).text());
                }
            }
            return b.toString();
        }
    }

    private static final class Context {
        final McpScopeResolver resolver;
        final ObjectMapper mapper;
        final McpJsonMapper json;

        Context(McpScopeResolver resolver, ObjectMapper mapper, McpJsonMapper json) {
            this.resolver = resolver;
            this.mapper = mapper;
            this.json = json;
        }

        /** Translates one call: idemkit decides, this only reads the request and writes results. */
        CallToolResult serve(
                String tool,
                McpTransportContext transport,
                String sessionId,
                CallToolRequest request,
                Call call,
                Render render) {
            String clientKey = null;
            McpScopeResolver.Scope scope = null;
            try {
                clientKey = clientKey(tool, request);
                scope =
                        resolver.resolve(
                                transport == null ? McpTransportContext.EMPTY : transport,
                                sessionId);
                if (scope == null) {
                    scope = new McpScopeResolver.Scope(null, null);
                }
                String args =
                        mapper.writeValueAsString(
                                request.arguments() == null ? Map.of() : request.arguments());
                IdempotentOperation.Answer<?> answer = call.run(scope, clientKey, args);
                CallToolResult result = render.result(answer.value(), answer.replayed());
                return withMeta(
                        result, clientKey != null ? clientKey : answer.key(), answer.replayed());
            } catch (ToolErrorResult own) {
                // The tool's own error result, released by its policy: handed back as it was.
                return withMeta(own.result, clientKey, false);
            } catch (IdempotencyException refused) {
                return error(refusal(refused, clientKey, scope), clientKey, refused.key());
            } catch (IllegalArgumentException | IllegalStateException bad) {
                // Arguments that do not bind, a malformed client key, an EXPLICIT tool without
                // a key: nothing ran.
                return error(tool + " was not run: " + bad.getMessage(), clientKey, null);
            } catch (Exception failed) {
                return error(
                        tool
                                + " failed: "
                                + failed.getClass().getSimpleName()
                                + ": "
                                + failed.getMessage(),
                        clientKey,
                        null);
            }
        }

        /**
         * A tool method's result: a first call's value as its JSON text (and, for a JSON object, as
         * structured content too); a repeat's record as {@link #recorded} reads it.
         */
        CallToolResult text(Object value, boolean replayed) {
            if (replayed && value instanceof JsonNode) {
                return recorded((JsonNode) value);
            }
            JsonNode tree;
            try {
                tree = mapper.valueToTree(value);
            } catch (IllegalArgumentException e) {
                throw new IllegalStateException("the result could not be written as JSON", e);
            }
            return plain(tree);
        }

        /**
         * A record as a result, whichever MCP face wrote it (the same reading as the Rust face's):
         * a whole {@code CallToolResult} (what a wrapped specification returned, or what a Rust MCP
         * server records) is answered as it was; any other JSON (what a tool method returned, here
         * or through another face) as {@link #plain}.
         */
        CallToolResult recorded(JsonNode tree) {
            if (tree != null && tree.isObject() && tree.path("content").isArray()) {
                try {
                    return json.convertValue(mapper.convertValue(tree, MAP), CallToolResult.class);
                } catch (RuntimeException notAResult) {
                    // Not a result after all: answered as plain JSON.
                }
            }
            return plain(tree);
        }

        /**
         * JSON as one text content (a string as its text), an object also as structured content.
         */
        CallToolResult plain(JsonNode tree) {
            if (tree == null || tree.isMissingNode()) {
                tree = mapper.nullNode();
            }
            String text = tree.isTextual() ? tree.textValue() : tree.toString();
            Map<String, Object> structured =
                    tree.isObject() ? mapper.convertValue(tree, MAP) : null;
            return new CallToolResult(List.of(new TextContent(text)), false, structured, null);
        }
    }

    /** How a served tool's answer becomes its result. */
    private interface Render {
        CallToolResult result(Object value, boolean replayed);
    }

    private static String clientKey(String tool, CallToolRequest request) {
        Map<String, Object> meta = request.meta();
        if (meta == null || !meta.containsKey(KEY_META)) {
            return null;
        }
        Object key = meta.get(KEY_META);
        if (!(key instanceof String)) {
            throw new IllegalArgumentException(
                    "_meta." + KEY_META + " must be a string; it was " + key);
        }
        return (String) key;
    }

    private static CallToolResult withMeta(CallToolResult result, String key, boolean replayed) {
        Map<String, Object> meta = new LinkedHashMap<>();
        if (result.meta() != null) {
            meta.putAll(result.meta());
        }
        if (key != null) {
            meta.put(KEY_META, key);
        }
        meta.put(REPLAYED_META, replayed);
        return new CallToolResult(
                result.content(), result.isError(), result.structuredContent(), meta);
    }

    private static CallToolResult error(String text, String clientKey, String recordKey) {
        Map<String, Object> meta = new LinkedHashMap<>();
        String key = clientKey != null ? clientKey : recordKey;
        if (key != null) {
            meta.put(KEY_META, key);
        }
        meta.put(REPLAYED_META, false);
        return new CallToolResult(List.of(new TextContent(text)), true, null, meta);
    }

    /** The model's sentence, what to do, and the key for the operator. */
    static String refusal(
            IdempotencyException refused, String clientKey, McpScopeResolver.Scope scope) {
        StringBuilder b = new StringBuilder(refused.modelMessage()).append('.');
        ErrorKind kind = refused.kind();
        switch (kind) {
            case INDETERMINATE:
                b.append(
                        " Do not retry this call: an operator must check whether it took effect"
                                + " and settle its key.");
                break;
            case PAYLOAD_MISMATCH:
                b.append(
                        " Do not retry with this key: send the original arguments, or a new key"
                                + " for a new request.");
                break;
            case FAIL_FAST:
            case CACHED_FAILURE:
                b.append(" Do not retry this call.");
                break;
            default:
                break;
        }
        b.append(" [idempotency key ");
        if (clientKey != null) {
            b.append('"').append(clientKey).append("\" = ");
        }
        b.append(refused.key() == null ? "(none)" : refused.key());
        b.append(", tool ").append(refused.tool());
        if (scope != null && scope.tenant() != null) {
            b.append(", tenant ").append(scope.tenant());
        }
        b.append(']');
        return b.toString();
    }

    // ---- served tools ------------------------------------------------------------------------

    /** A served tool over its handler; the async face offloads the blocking call. */
    private static Served served(
            io.modelcontextprotocol.spec.McpSchema.Tool tool, Handler handler) {
        return new Served() {
            @Override
            public SyncToolSpecification sync() {
                return new SyncToolSpecification(
                        tool,
                        (exchange, request) ->
                                handler.call(
                                        exchange.transportContext(),
                                        exchange.sessionId(),
                                        request,
                                        exchange,
                                        null));
            }

            @Override
            public AsyncToolSpecification async() {
                return new AsyncToolSpecification(
                        tool,
                        (exchange, request) ->
                                Mono.fromCallable(
                                                () ->
                                                        handler.call(
                                                                exchange.transportContext(),
                                                                exchange.sessionId(),
                                                                request,
                                                                null,
                                                                exchange))
                                        .subscribeOn(Schedulers.boundedElastic()));
            }
        };
    }

    /** One call of a served tool, with whichever exchange its server passes. */
    private interface Handler {
        CallToolResult call(
                McpTransportContext transport,
                String sessionId,
                CallToolRequest request,
                McpSyncServerExchange sync,
                McpAsyncServerExchange async);
    }

    /** Builds {@link IdempotentMcpTools}. Not thread-safe. */
    public static final class Builder {
        private final List<Object> objects = new ArrayList<>();
        private final List<Object[]> wrapped = new ArrayList<>();
        private IdempotencyStore store;
        private McpScopeResolver resolver = McpScopeResolver.fixed(null, null);
        private ObjectMapper mapper;
        private McpJsonMapper jsonMapper;
        private RetryPolicy retry;
        private final List<IdempotencyListener> listeners = new ArrayList<>();
        private ObjectMapper effective;

        private Builder() {}

        /**
         * Objects whose public {@link Tool} methods are served, each under its {@link Idempotent}
         * policy (a method without one is served unprotected, and named in a startup warning).
         * Destructive and open-world hints come from {@link McpHints}.
         *
         * @param tools the objects
         * @return this builder
         */
        public Builder tools(Object... tools) {
            for (Object o : tools) {
                objects.add(Objects.requireNonNull(o, "tool object"));
            }
            return this;
        }

        /**
         * Serves an existing specification under {@code policy}: its handler runs at most once per
         * key, its result (a {@code CallToolResult}) is what repeats get, and a result with {@code
         * isError: true} counts as a failure the policy settles. {@code policy} null: the
         * specification is served as it is (a startup warning names it unless its annotations say
         * {@code readOnlyHint: true}). An {@code EXPLICIT} policy keys every call by the client's
         * {@code _meta.idempotencyKey} (a call without one is refused as a tool error).
         *
         * @param spec the specification
         * @param policy the policy, e.g. {@code SomeClass.class.getAnnotation(Idempotent.class)},
         *     or {@code null}
         * @return this builder
         */
        public Builder wrap(SyncToolSpecification spec, Idempotent policy) {
            wrapped.add(new Object[] {Objects.requireNonNull(spec, "spec"), policy});
            return this;
        }

        /**
         * {@link #wrap(SyncToolSpecification, Idempotent)} for an async specification; its {@code
         * Mono} is awaited inside the call (on Reactor's bounded elastic scheduler). Serve such
         * tools with {@link IdempotentMcpTools#asyncSpecifications()}.
         *
         * @param spec the specification
         * @param policy the policy, or {@code null} to serve it as it is
         * @return this builder
         */
        public Builder wrap(AsyncToolSpecification spec, Idempotent policy) {
            wrapped.add(new Object[] {Objects.requireNonNull(spec, "spec"), policy});
            return this;
        }

        /**
         * Where records live (default: a new in-memory store, closed with the tools).
         *
         * @param store the store; it stays the caller's to close
         * @return this builder
         */
        public Builder store(IdempotencyStore store) {
            this.store = store;
            return this;
        }

        /**
         * Where each call's tenant and run come from (default: none).
         *
         * @param resolver the resolver, over the transport context and session
         * @return this builder
         */
        public Builder scope(McpScopeResolver resolver) {
            this.resolver = Objects.requireNonNull(resolver, "resolver");
            return this;
        }

        /**
         * The mapper that binds arguments and writes results, recorded and first answered alike
         * (default: idemkit's settings).
         *
         * @param mapper the mapper
         * @return this builder
         */
        public Builder objectMapper(ObjectMapper mapper) {
            this.mapper = mapper;
            return this;
        }

        /**
         * The SDK's JSON mapper, which records a wrapped specification's results (default: one over
         * this builder's object mapper).
         *
         * @param jsonMapper the mapper
         * @return this builder
         */
        public Builder jsonMapper(McpJsonMapper jsonMapper) {
            this.jsonMapper = jsonMapper;
            return this;
        }

        /**
         * Retries failed calls where the effect allows it (see {@link RetryPolicy}).
         *
         * @param retry the policy, or {@code null} for none
         * @return this builder
         */
        public Builder retry(RetryPolicy retry) {
            this.retry = retry;
            return this;
        }

        /**
         * Calls {@code listener} with the events of these tools' calls.
         *
         * @param listener the listener
         * @return this builder
         */
        public Builder listener(IdempotencyListener listener) {
            listeners.add(Objects.requireNonNull(listener, "listener"));
            return this;
        }

        /**
         * Builds every operation (the core validates each policy) and warns of side-effecting tools
         * served without protection.
         *
         * @return the tools, open until {@link IdempotentMcpTools#close()}
         * @throws IllegalArgumentException a policy the core refuses
         * @throws IllegalStateException an {@code EXPLICIT} tool method whose object supplies no
         *     key
         */
        public IdempotentMcpTools build() {
            List<AutoCloseable> owned = new ArrayList<>();
            IdempotencyStore s = store;
            if (s == null) {
                InMemoryIdempotencyStore memory = new InMemoryIdempotencyStore();
                s = memory;
                owned.add(memory::close);
            }
            // One mapper for the operations (which write the records) and for the first answers,
            // so that a first call and its repeats read alike.
            ObjectMapper m = mapper != null ? mapper : defaultMapper();
            this.effective = m;
            McpJsonMapper jm = jsonMapper != null ? jsonMapper : new JacksonMcpJsonMapper(m);
            Context ctx = new Context(resolver, m, jm);
            List<Served> served = new ArrayList<>();
            List<String> unprotected = new ArrayList<>();
            try {
                for (Object target : objects) {
                    Method[] methods = target.getClass().getMethods();
                    Arrays.sort(methods, Comparator.comparing(Method::getName));
                    for (Method method : methods) {
                        if (method.isAnnotationPresent(Tool.class)) {
                            served.add(objectTool(ctx, s, owned, target, method, unprotected));
                        }
                    }
                }
                for (Object[] w : wrapped) {
                    served.add(wrappedTool(ctx, s, owned, w[0], (Idempotent) w[1], unprotected));
                }
            } catch (RuntimeException refused) {
                new IdempotentMcpTools(served, owned).close();
                throw refused;
            }
            if (!unprotected.isEmpty()) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "idemkit: MCP tools {0} may have side effects (readOnlyHint is not true) but"
                                + " have no @Idempotent policy: a retried tools/call runs them"
                                + " again. Add @Idempotent (or pass a policy to wrap(spec,"
                                + " policy)), or declare readOnlyHint: true if they only read.",
                        unprotected);
            }
            return new IdempotentMcpTools(List.copyOf(served), owned);
        }

        private <T> IdempotentOperation.Builder<T> configure(
                IdempotentOperation.Builder<T> b, IdempotencyStore s) {
            b.store(s).retry(retry).objectMapper(effective).outsideKeys();
            for (IdempotencyListener l : listeners) {
                b.listener(l);
            }
            return b;
        }

        private Served objectTool(
                Context ctx,
                IdempotencyStore s,
                List<AutoCloseable> owned,
                Object target,
                Method method,
                List<String> unprotected) {
            ToolMethod tm = ToolMethod.of(target, method);
            // Repeats read back as JSON: a record another MCP face wrote (a whole CallToolResult)
            // is answered as it was.
            IdempotentOperation<Object> op =
                    configure(IdempotentOperation.builder(tm), s).replaysAsJson().build();
            owned.add(op);
            Idempotent policy = tm.policy();
            if (policy == null || policy.strategy() == KeyStrategy.NONE) {
                if (policy == null || policy.effect() != Effect.READ_ONLY) {
                    unprotected.add(tm.name());
                }
            }
            McpHints hints = method.getAnnotation(McpHints.class);
            ToolAnnotations declared =
                    hints == null
                            ? null
                            : new ToolAnnotations(
                                    hints.title().isEmpty() ? null : hints.title(),
                                    null,
                                    hints.destructive(),
                                    null,
                                    hints.openWorld(),
                                    null);
            io.modelcontextprotocol.spec.McpSchema.Tool tool =
                    io.modelcontextprotocol.spec.McpSchema.Tool.builder()
                            .name(tm.name())
                            .description(tm.description())
                            .inputSchema(schema(tm))
                            .annotations(annotations(policy, declared))
                            .build();
            String name = tm.name();
            Call call =
                    (scope, clientKey, json) ->
                            clientKey != null
                                    ? op.answerWithOutsideKey(
                                            scope.tenant(), scope.run(), clientKey, json)
                                    : op.answer(scope.tenant(), scope.run(), json);
            return served(
                    tool,
                    (transport, sessionId, request, sync, async) ->
                            ctx.serve(name, transport, sessionId, request, call, ctx::text));
        }

        @SuppressWarnings("unchecked")
        private Served wrappedTool(
                Context ctx,
                IdempotencyStore s,
                List<AutoCloseable> owned,
                Object spec,
                Idempotent policy,
                List<String> unprotected) {
            io.modelcontextprotocol.spec.McpSchema.Tool declared =
                    spec instanceof SyncToolSpecification
                            ? ((SyncToolSpecification) spec).tool()
                            : ((AsyncToolSpecification) spec).tool();
            if (policy == null) {
                // Left as it is; warned of unless it declares it only reads.
                ToolAnnotations a = declared.annotations();
                if (a == null || !Boolean.TRUE.equals(a.readOnlyHint())) {
                    unprotected.add(declared.name());
                }
                return passThrough(spec);
            }
            String name = declared.name();
            IdempotentOperation<JsonNode> op =
                    configure(IdempotentOperation.builder(name, JsonNode.class), s)
                            .policy(policy)
                            .build();
            owned.add(op);
            io.modelcontextprotocol.spec.McpSchema.Tool tool =
                    new io.modelcontextprotocol.spec.McpSchema.Tool(
                            declared.name(),
                            declared.title(),
                            declared.description(),
                            declared.inputSchema(),
                            declared.outputSchema(),
                            annotations(policy, declared.annotations()),
                            declared.meta(),
                            declared.icons());
            // A wrapped handler's result is recorded whole, as the Rust face records one.
            Render render = (value, replayed) -> ctx.recorded((JsonNode) value);
            return served(
                    tool,
                    (transport, sessionId, request, sync, async) -> {
                        IdempotentOperation.Body<JsonNode> body =
                                context -> {
                                    CallToolResult r = delegate(spec, request, sync, async);
                                    if (Boolean.TRUE.equals(r.isError())) {
                                        throw new ToolErrorResult(r);
                                    }
                                    return ctx.mapper.valueToTree(
                                            ctx.json.convertValue(r, MAP_REF));
                                };
                        Call call =
                                (scope, clientKey, json) ->
                                        clientKey != null
                                                ? op.answerWithOutsideKey(
                                                        scope.tenant(),
                                                        scope.run(),
                                                        clientKey,
                                                        json,
                                                        body)
                                                : op.answer(
                                                        scope.tenant(), scope.run(), json, body);
                        return ctx.serve(name, transport, sessionId, request, call, render);
                    });
        }
    }

    /** Runs a wrapped specification's own handler with the exchange its kind takes. */
    private static CallToolResult delegate(
            Object spec,
            CallToolRequest request,
            McpSyncServerExchange sync,
            McpAsyncServerExchange async) {
        if (spec instanceof SyncToolSpecification) {
            McpSyncServerExchange exchange = sync != null ? sync : new McpSyncServerExchange(async);
            return ((SyncToolSpecification) spec).callHandler().apply(exchange, request);
        }
        AsyncToolSpecification a = (AsyncToolSpecification) spec;
        if (async == null) {
            throw new IllegalStateException(
                    "`"
                            + a.tool().name()
                            + "` is an async tool specification: serve these tools with"
                            + " asyncSpecifications() on an async server");
        }
        return a.callHandler().apply(async, request).block();
    }

    /** A specification served as it is, on either kind of server. */
    private static Served passThrough(Object spec) {
        return new Served() {
            @Override
            public SyncToolSpecification sync() {
                if (spec instanceof SyncToolSpecification) {
                    return (SyncToolSpecification) spec;
                }
                throw new IllegalStateException(
                        "`"
                                + ((AsyncToolSpecification) spec).tool().name()
                                + "` is an async tool specification: serve these tools with"
                                + " asyncSpecifications() on an async server");
            }

            @Override
            public AsyncToolSpecification async() {
                if (spec instanceof AsyncToolSpecification) {
                    return (AsyncToolSpecification) spec;
                }
                SyncToolSpecification sync = (SyncToolSpecification) spec;
                // As the SDK's own sync-to-async bridge: the blocking handler off the event loop.
                return new AsyncToolSpecification(
                        sync.tool(),
                        (exchange, request) ->
                                Mono.fromCallable(
                                                () ->
                                                        sync.callHandler()
                                                                .apply(
                                                                        new McpSyncServerExchange(
                                                                                exchange),
                                                                        request))
                                        .subscribeOn(Schedulers.boundedElastic()));
            }
        };
    }

    /**
     * The mapper when none is given: idemkit's own settings (java.time and JDK 8 types, dates as
     * ISO-8601 text with their zone, unknown members ignored when reading).
     */
    private static ObjectMapper defaultMapper() {
        return com.fasterxml.jackson.databind.json.JsonMapper.builder()
                .addModule(new com.fasterxml.jackson.datatype.jdk8.Jdk8Module())
                .addModule(new com.fasterxml.jackson.datatype.jsr310.JavaTimeModule())
                .disable(
                        com.fasterxml.jackson.databind.DeserializationFeature
                                .FAIL_ON_UNKNOWN_PROPERTIES)
                .disable(
                        com.fasterxml.jackson.databind.DeserializationFeature
                                .ADJUST_DATES_TO_CONTEXT_TIME_ZONE)
                .disable(
                        com.fasterxml.jackson.databind.SerializationFeature
                                .WRITE_DATES_AS_TIMESTAMPS)
                .disable(
                        com.fasterxml.jackson.databind.SerializationFeature
                                .WRITE_DURATIONS_AS_TIMESTAMPS)
                .enable(
                        com.fasterxml.jackson.databind.SerializationFeature
                                .WRITE_DATES_WITH_ZONE_ID)
                .build();
    }

    /** A JSON schema of a tool method's parameters, for {@code tools/list}. */
    static Map<String, Object> schema(ToolMethod tool) {
        Map<String, Object> properties = new LinkedHashMap<>();
        List<String> required = new ArrayList<>();
        java.lang.reflect.Parameter[] declared = tool.method().getParameters();
        for (ToolMethod.Parameter p : tool.parameters()) {
            if (p.wholeInput()) {
                continue;
            }
            Map<String, Object> property = new LinkedHashMap<>();
            property.put("type", jsonType(p.type()));
            ToolParam param = declared[p.index()].getAnnotation(ToolParam.class);
            if (param != null && !param.description().isEmpty()) {
                property.put("description", param.description());
            }
            properties.put(p.name(), property);
            if (p.type() instanceof Class && ((Class<?>) p.type()).isPrimitive()) {
                required.add(p.name());
            }
        }
        Map<String, Object> schema = new LinkedHashMap<>();
        schema.put("type", "object");
        schema.put("properties", properties);
        if (!required.isEmpty()) {
            schema.put("required", required);
        }
        return schema;
    }

    private static String jsonType(Type type) {
        Class<?> raw =
                type instanceof Class
                        ? (Class<?>) type
                        : type instanceof ParameterizedType
                                ? (Class<?>) ((ParameterizedType) type).getRawType()
                                : Object.class;
        if (raw == String.class || raw == char.class || raw == Character.class || raw.isEnum()) {
            return "string";
        }
        if (raw == boolean.class || raw == Boolean.class) {
            return "boolean";
        }
        if (raw == int.class
                || raw == long.class
                || raw == short.class
                || raw == byte.class
                || raw == Integer.class
                || raw == Long.class
                || raw == Short.class
                || raw == Byte.class
                || raw == java.math.BigInteger.class) {
            return "integer";
        }
        if (Number.class.isAssignableFrom(raw) || raw == double.class || raw == float.class) {
            return "number";
        }
        if (raw.isArray() || Collection.class.isAssignableFrom(raw)) {
            return "array";
        }
        return "object";
    }
}
