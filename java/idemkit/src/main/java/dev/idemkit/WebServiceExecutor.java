package dev.idemkit;

import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.ref.Reference;
import java.lang.reflect.Method;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Calls {@link WebService} actions by name under their {@link Idempotent} policies, through the
 * same core protocol as {@link ToolDispatcher}: a repeated call with the same input (or the same
 * explicit key) sends its request at most once while its record is kept, and every repeat gets the
 * remembered result or a typed {@link IdempotencyException}. {@code POST}, {@code PUT}, {@code
 * PATCH} and {@code DELETE} carry the call's key as {@code Idempotency-Key}, so the service can
 * deduplicate on its side too.
 *
 * <pre>{@code
 * WebServiceExecutor payments = WebServiceExecutor.builder()
 *     .store(store)
 *     .baseUri("https://api.example.com")
 *     .retry(3, Duration.ofMillis(200))
 *     .roles(new PaymentsApi())
 *     .build();
 * WebServiceResponse<Charge> r = payments.invokeForResponse("create_charge",
 *     Map.of("amount", 1200, "currency", "eur"), Charge.class);
 * }</pre>
 *
 * <p>A non-2xx response, or no response before the deadline, is the action's failure: {@link
 * WebServiceException}. An exchange cut at the action's {@code timeoutMs} has an unknown outcome:
 * {@link IdempotencyTimeoutException}, and the claim stays in progress (SPEC §3). Whether a failed
 * request is sent again within the call is the core's decision (SPEC v1.1 rule 12, see {@link
 * Builder#retry} and {@link WebService#honorsIdempotencyKey()}): a request that never reached the
 * server may be; one that reached it only when the action declares that its upstream honours the
 * key. Views with another tenant or run come from {@link #withTenant} and {@link #withRun}. {@link
 * #close()} frees the native tools (and a store and HTTP client the builder created).
 *
 * <p><b>Thread safety.</b> An executor and its views are safe to share: any number of threads may
 * invoke actions at once, and {@link #register} may run alongside them (registrations are
 * serialized; an action is callable once its registration returns). Concurrent calls with the same
 * key are settled by the store's atomic claim: one sends the request, the others wait for its
 * outcome or get a typed exception. {@link #close()} may race with calls: the calls in flight
 * finish first. The {@link Builder} is not thread-safe: build on one thread, then share the
 * executor.
 */
public final class WebServiceExecutor implements AutoCloseable {
    /** The header every key-carrying request gets. */
    public static final String IDEMPOTENCY_KEY = HttpExchange.KEY_HEADER;

    /**
     * How deep an input may nest when its key is not derived from it: what the JSON text reader
     * allows.
     */
    private static final int MAX_MAP_DEPTH = StreamReadConstraints.defaults().getMaxNestingDepth();

    /** How the {@code Idempotency-Key} header holds the key. */
    public enum KeyHeaderForm {
        /** {@code Idempotency-Key: 9f86d0...} (what Stripe and most services read). */
        BARE,
        /**
         * {@code Idempotency-Key: "9f86d0..."}: an RFC 8941 structured-field string, as the IETF
         * draft (draft-ietf-httpapi-idempotency-key-header) specifies.
         */
        STRUCTURED_STRING
    }

    /** The actions, the store and the HTTP settings shared by every view. */
    private static final class Registry {
        final Map<String, RegisteredAction> actions = new ConcurrentHashMap<>();
        final Registrar registrar;
        final HttpExchange http;
        final String baseUri;
        final ObjectMapper mapper;
        final RetryPolicy retry;
        final KeyHeaderForm keyHeaderForm;

        Registry(
                Registrar registrar,
                HttpExchange http,
                String baseUri,
                ObjectMapper mapper,
                RetryPolicy retry,
                KeyHeaderForm keyHeaderForm) {
            this.registrar = registrar;
            this.http = http;
            this.baseUri = baseUri;
            this.mapper = mapper;
            this.retry = retry;
            this.keyHeaderForm = keyHeaderForm;
        }
    }

    /**
     * The key header form each store has sent to each host, to warn when two executors on one store
     * send one host two forms: the server compares the header's text, so {@code k} and {@code "k"}
     * are two keys to it.
     */
    private static final Map<IdempotencyStore, Map<String, KeyHeaderForm>> HEADER_FORMS =
            new java.util.WeakHashMap<>();

    private static final System.Logger LOG = System.getLogger("dev.idemkit");

    /** Notes the header form an action sends its host, warning once about a second form. */
    private static void noteHeaderForm(
            IdempotencyStore store, String host, KeyHeaderForm form, String action) {
        KeyHeaderForm before;
        synchronized (HEADER_FORMS) {
            Map<String, KeyHeaderForm> hosts =
                    HEADER_FORMS.computeIfAbsent(store, s -> new java.util.HashMap<>());
            before = hosts.putIfAbsent(host, form);
            // Warned once per host and form: the first form stays the one compared with.
            if (before == null
                    || before == form
                    || hosts.putIfAbsent(host + "\u0000" + form, form) != null) {
                return;
            }
        }
        LOG.log(
                System.Logger.Level.WARNING,
                "idemkit: action `{0}` sends its Idempotency-Key to {1} as {2}, but another executor on"
                        + " the same store sends that host the key as {3}. The server compares the header''s"
                        + " text, so the two forms are two keys to it and one logical call made through both"
                        + " executors can act twice upstream; use one keyHeaderForm per host",
                action,
                host,
                form,
                before);
    }

    private final Registry registry;
    private final String tenant;
    private final String run;
    private final NativeContext context;

    /**
     * An executor on its own {@link InMemoryIdempotencyStore}, with a default {@link HttpClient};
     * absolute endpoints only.
     */
    public WebServiceExecutor() {
        this(builder().registry(), null, null);
    }

    /**
     * An executor on {@code store}, with a default {@link HttpClient}; absolute endpoints only.
     *
     * @param store where records live; it stays the caller's to close, after the executor
     */
    public WebServiceExecutor(IdempotencyStore store) {
        this(builder().store(Objects.requireNonNull(store, "store")).registry(), null, null);
    }

    private WebServiceExecutor(Registry registry, String tenant, String run) {
        this.registry = registry;
        this.tenant = tenant;
        this.run = run;
        this.context = new NativeContext(tenant, run);
    }

    /**
     * Starts an executor: add roles and, optionally, a store, base URI, headers, retries, tenant,
     * run and mapper.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Registers the {@link WebService} methods of each role (its class, superclasses and
     * interfaces; an override annotated {@link WebService} replaces its original, one that is not
     * keeps the original's annotations). All or nothing: when one action is refused, none of the
     * call's are registered.
     *
     * @param roles instances whose class (or its superclasses and interfaces) has {@link
     *     WebService} methods; each method's parameters fill its request
     * @return this executor
     * @throws IllegalStateException {@code EXPLICIT} on a role that is not an {@link
     *     IdempotencyKeySupplier}, a parameter whose name is unknown, a closed executor
     * @throws IllegalArgumentException a policy the core refuses (TTL or lease ≤ 0, unknown
     *     keyArguments, timeoutMs ≥ lease), an endpoint that is not a URL, a placeholder that names
     *     no parameter, a PATH parameter without a placeholder, a body on GET/HEAD, a duplicate
     *     name
     */
    public WebServiceExecutor register(Object... roles) {
        Registry r = registry;
        synchronized (r) {
            r.registrar.requireOpen();
            Map<String, RegisteredAction> added = new LinkedHashMap<>();
            List<Long> handles = new ArrayList<>();
            try {
                for (Object role : roles) {
                    Objects.requireNonNull(role, "role");
                    for (Method method :
                            Registrar.annotatedMethods(role.getClass(), WebService.class)) {
                        RegisteredAction action =
                                RegisteredAction.of(
                                        role,
                                        method,
                                        r.baseUri,
                                        r.mapper,
                                        r.http.contentType(),
                                        r.retry);
                        handles.add(action.nativeTool.handle);
                        if (r.actions.containsKey(action.name)
                                || added.putIfAbsent(action.name, action) != null) {
                            throw new IllegalArgumentException(
                                    "two web-service actions are named `"
                                            + action.name
                                            + "`; action names are key scopes and must be unique");
                        }
                    }
                }
            } catch (RuntimeException refused) {
                Registrar.destroy(handles.stream().mapToLong(Long::longValue).toArray());
                throw refused;
            }
            r.registrar.adopt(handles.stream().mapToLong(Long::longValue).toArray());
            r.actions.putAll(added);
            for (RegisteredAction action : added.values()) {
                String host = action.host();
                if (host != null
                        && action.method.carriesIdempotencyKey()
                        && action.strategy != KeyStrategy.NONE) {
                    noteHeaderForm(r.registrar.store, host, r.keyHeaderForm, action.name);
                }
            }
        }
        return this;
    }

    /**
     * The same actions, store and HTTP settings for another tenant ({@code null}: none; {@code ""}
     * is a tenant).
     *
     * @param tenant the tenant that scopes every key of the view's calls
     * @return a view sharing this executor's actions, store, HTTP settings and run; closing either
     *     closes both
     */
    public WebServiceExecutor withTenant(String tenant) {
        return new WebServiceExecutor(registry, Registrar.checkText("tenant", tenant), run);
    }

    /**
     * The same actions, store and HTTP settings in another run: a new run is a new key.
     *
     * @param run the run that scopes every key of the view's calls ({@code null}: no run)
     * @return a view sharing this executor's actions, store, HTTP settings and tenant; closing
     *     either closes both
     */
    public WebServiceExecutor withRun(String run) {
        return new WebServiceExecutor(registry, tenant, Registrar.checkText("run", run));
    }

    /**
     * The tenant this executor's keys are scoped to.
     *
     * @return the tenant, or {@code null} for none
     */
    public String tenant() {
        return tenant;
    }

    /**
     * The run this executor's keys are scoped to.
     *
     * @return the run, or {@code null} for none
     */
    public String run() {
        return run;
    }

    /**
     * The store the records live in (the one given to {@link Builder#store}, or the in-memory store
     * the builder created).
     *
     * @return the store, shared by every view of this executor
     */
    public IdempotencyStore store() {
        return registry.registrar.store;
    }

    /**
     * The registered action names.
     *
     * @return a read-only view of the names, which shows later registrations too
     */
    public Set<String> actionNames() {
        return Collections.unmodifiableSet(registry.actions.keySet());
    }

    /**
     * Calls an action with its input as a map of JSON-native values (SPEC §7); answers the response
     * body read as the method's declared return type, or the remembered result.
     *
     * @param action the action's name ({@link WebService#name()})
     * @param input the arguments by parameter name; {@code null} is an empty input
     * @return the response body as the method's return type, or the remembered result of an earlier
     *     call with the same key
     * @throws WebServiceException a non-2xx response, or no response (after the allowed retries)
     * @throws IdempotencyTimeoutException the exchange was cut at {@code timeoutMs}: the outcome is
     *     unknown and the claim stays in progress until its lease ends or an operator resolves it
     * @throws InvalidKeyException a value in the input is not JSON-native, or the key is refused
     * @throws IllegalArgumentException no such action, or the input does not fit its parameters
     */
    public Object invoke(String action, Map<String, Object> input) {
        return invokeForResponse(action, input).value();
    }

    /**
     * {@link #invoke(String, Map)} with the input as JSON text (what a model sends), hashed exactly
     * as given.
     *
     * @param action the action's name ({@link WebService#name()})
     * @param jsonInput a JSON object of the arguments by parameter name
     * @return the response body as the method's return type, or the remembered result of an earlier
     *     call with the same key
     */
    public Object invoke(String action, String jsonInput) {
        return invokeForResponse(action, jsonInput).value();
    }

    /**
     * {@link #invoke(String, Map)}, the value as {@code type}.
     *
     * @param <T> the value type
     * @param action the action's name
     * @param input the arguments by parameter name
     * @param type the class to read the value as (converted by the executor's mapper)
     * @return the value as {@code type}
     */
    public <T> T invoke(String action, Map<String, Object> input, Class<T> type) {
        return as(invoke(action, input), type);
    }

    /**
     * {@link #invoke(String, String)}, the value as {@code type}.
     *
     * @param <T> the value type
     * @param action the action's name
     * @param jsonInput a JSON object of the arguments by parameter name
     * @param type the class to read the value as (converted by the executor's mapper)
     * @return the value as {@code type}
     */
    public <T> T invoke(String action, String jsonInput, Class<T> type) {
        return as(invoke(action, jsonInput), type);
    }

    /**
     * {@link #invoke(String, Map)}, with whether the answer was replayed, its status and its key.
     *
     * @param action the action's name
     * @param input the arguments by parameter name; {@code null} is an empty input
     * @return the value with its HTTP status, key and whether it was replayed from the store
     */
    public WebServiceResponse<Object> invokeForResponse(String action, Map<String, Object> input) {
        RegisteredAction a = lookup(action);
        Map<String, Object> in = input == null ? Collections.emptyMap() : input;
        // Refuses non-JSON values naming the member, for every strategy (SPEC §7).
        JsonInput json = JsonInput.ofValue(in, a.name);
        boolean hashed = a.strategy == KeyStrategy.HASH_INPUT;
        // How deep an input may nest is the core's to say, when it derives the key (before anything
        // is sent); an input whose key is not derived from it nests as deep as JSON text may.
        if (!hashed && JsonWire.depth(in, MAX_MAP_DEPTH) > MAX_MAP_DEPTH) {
            throw new IllegalArgumentException(
                    "the input of `"
                            + a.name
                            + "` is nested deeper than "
                            + MAX_MAP_DEPTH
                            + " arrays/objects, the most JSON text may (is a map or list inside itself?)");
        }
        boolean fingerprinted = hashed || a.strategy == KeyStrategy.EXPLICIT;
        return call(a, JsonWire.tree(in, MAX_MAP_DEPTH), in, fingerprinted ? json : null);
    }

    /**
     * {@link #invoke(String, String)}, with whether the answer was replayed, its status and its
     * key.
     *
     * @param action the action's name
     * @param jsonInput a JSON object of the arguments by parameter name
     * @return the value with its HTTP status, key and whether it was replayed from the store
     */
    public WebServiceResponse<Object> invokeForResponse(String action, String jsonInput) {
        RegisteredAction a = lookup(action);
        Objects.requireNonNull(jsonInput, "jsonInput");
        JsonNode tree = JsonWire.read(a.name, jsonInput);
        Map<String, Object> asMap =
                a.strategy == KeyStrategy.EXPLICIT && tree.isObject() ? JsonWire.map(tree) : null;
        return call(
                a,
                tree,
                asMap,
                a.strategy == KeyStrategy.HASH_INPUT || a.strategy == KeyStrategy.EXPLICIT
                        ? JsonInput.ofText(jsonInput)
                        : null);
    }

    /**
     * {@link #invokeForResponse(String, Map)}, the value as {@code type}.
     *
     * @param <T> the value type
     * @param action the action's name
     * @param input the arguments by parameter name
     * @param type the class to read the value as (converted by the executor's mapper)
     * @return the response, its value as {@code type}
     */
    public <T> WebServiceResponse<T> invokeForResponse(
            String action, Map<String, Object> input, Class<T> type) {
        WebServiceResponse<Object> r = invokeForResponse(action, input);
        return r.withValue(as(r.value(), type));
    }

    /**
     * {@link #invokeForResponse(String, String)}, the value as {@code type}.
     *
     * @param <T> the value type
     * @param action the action's name
     * @param jsonInput a JSON object of the arguments by parameter name
     * @param type the class to read the value as (converted by the executor's mapper)
     * @return the response, its value as {@code type}
     */
    public <T> WebServiceResponse<T> invokeForResponse(
            String action, String jsonInput, Class<T> type) {
        WebServiceResponse<Object> r = invokeForResponse(action, jsonInput);
        return r.withValue(as(r.value(), type));
    }

    private <T> T as(Object value, Class<T> type) {
        return ResultTypes.as(registry.mapper, value, type);
    }

    @SuppressWarnings("unchecked")
    /**
     * Claims, sends and records one call of {@code a}.
     *
     * @param input the whole input as JSON for HASH_INPUT (keyed on) and EXPLICIT (its fingerprint
     *     is kept, SPEC v1.1 rule 9); null otherwise
     */
    private WebServiceResponse<Object> call(
            RegisteredAction a, JsonNode tree, Map<String, Object> asMap, JsonInput input) {
        long started = System.nanoTime();
        // The request is built (and the input checked) before anything is claimed.
        RequestTemplate.Request request = a.request(tree);
        JsonInput json = input;
        JsonInput payload = null;
        String supplied = null;
        if (a.strategy == KeyStrategy.EXPLICIT) {
            supplied = Registrar.suppliedKey(a.name, a.supplier, asMap);
            json = JsonInput.ofString(supplied);
            payload = input;
        }
        Registry r = registry;
        // Requests sent so far: the core runs the body again when it resends (SPEC v1.1 rule 12).
        int[] sent = {0};
        r.registrar.enter();
        try {
            return (WebServiceResponse<Object>)
                    IdempotentInvoker.invoke(
                            r.registrar.store,
                            a.nativeTool,
                            context,
                            json,
                            payload,
                            supplied,
                            callContext -> r.http.send(a, request, callContext, started, ++sent[0]),
                            a.codec);
        } finally {
            r.registrar.exit();
            Reference.reachabilityFence(r);
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Closes the executor and every view of it: later calls throw {@link IllegalStateException};
     * calls in flight finish first, then the native tools are freed, and the store and HTTP client
     * too if the builder created them (a store or client given to the builder is the caller's to
     * close). Atomic and safe to call twice.
     */
    @Override
    public void close() {
        registry.registrar.close();
    }

    /**
     * Whether {@link #close()} was called (on this executor or any view of it).
     *
     * @return {@code true} once closed
     */
    public boolean isClosed() {
        return registry.registrar.isClosed();
    }

    private RegisteredAction lookup(String action) {
        RegisteredAction registered = registry.actions.get(action);
        if (registered == null) {
            throw new IllegalArgumentException(
                    "no web-service action named `"
                            + action
                            + "`; the actions are "
                            + registry.actions.keySet());
        }
        return registered;
    }

    /**
     * Builds a {@link WebServiceExecutor}; {@link #build()} registers and validates every action.
     */
    public static final class Builder {
        private final List<Object> roles = new ArrayList<>();
        private final Map<String, List<String>> headers = new LinkedHashMap<>();
        private IdempotencyStore store;
        private HttpClient client;
        private String baseUri;
        private RetryPolicy retry;
        private KeyHeaderForm keyHeaderForm = KeyHeaderForm.BARE;
        private String tenant;
        private String run;
        private ObjectMapper mapper;

        private Builder() {}

        /**
         * Objects whose {@link WebService} methods are registered by {@link #build()}.
         *
         * @param objects instances whose class (or its superclasses and interfaces) has {@link
         *     WebService} methods
         * @return this builder
         */
        public Builder roles(Object... objects) {
            for (Object o : objects) {
                roles.add(Objects.requireNonNull(o, "role"));
            }
            return this;
        }

        /**
         * Where records live; default a new {@link InMemoryIdempotencyStore} owned by the executor.
         * Share it with a {@link ToolDispatcher} to share records; it stays open when the executor
         * is closed.
         *
         * @param store the store; it stays the caller's to close, after the executor
         * @return this builder
         */
        public Builder store(IdempotencyStore store) {
            this.store = store;
            return this;
        }

        /**
         * The client that sends requests (timeouts per request come from {@link
         * WebService#timeoutMs()}); default an HTTP/1.1 client (no {@code Upgrade: h2c} offer),
         * owned by the executor. A client given here is used as it is (its HTTP version too) and
         * never closed by it.
         *
         * @param client the client, shared as it is
         * @return this builder
         */
        public Builder httpClient(HttpClient client) {
            this.client = client;
            return this;
        }

        /**
         * What relative endpoints ({@code /v1/charges}) are resolved against: {@code
         * https://api.example.com}.
         *
         * @param baseUri an absolute http(s) URL without a query
         * @return this builder
         */
        public Builder baseUri(String baseUri) {
            this.baseUri = baseUri;
            return this;
        }

        /**
         * {@link #baseUri(String)} from a URI.
         *
         * @param baseUri an absolute http(s) URL without a query
         * @return this builder
         */
        public Builder baseUri(URI baseUri) {
            return baseUri(baseUri.toString());
        }

        /**
         * A header every request carries (e.g. {@code Authorization}); may be given more than once.
         * A {@code Content-Type} given here replaces the {@code application/json} of BODY requests.
         *
         * @param name the header name; not {@code Idempotency-Key} nor one {@link HttpRequest}
         *     restricts ({@code Host}, {@code Content-Length}, ...)
         * @param value the header value
         * @return this builder
         */
        public Builder header(String name, String value) {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(value, "value");
            if (name.equalsIgnoreCase(IDEMPOTENCY_KEY)) {
                throw new IllegalArgumentException(
                        "Idempotency-Key is set by the executor from each call's key;"
                                + " it cannot be a default header");
            }
            // HttpRequest refuses restricted or malformed headers (Host, Content-Length, ...):
            // refuse them now.
            HttpRequest.newBuilder().header(name, value);
            headers.computeIfAbsent(name, n -> new ArrayList<>()).add(value);
            return this;
        }

        /**
         * Lets the core send an action's request again within one logical call, under the same key
         * and claim: at most {@code maxAttempts} requests, pausing about {@code backoff}, doubling
         * (at most 30 s), never past the call's deadline. What may be sent again is the core's
         * decision (SPEC v1.1 rule 12): a request that never reached the server (nothing was
         * written: connection refused); and, only for actions declaring {@link
         * WebService#honorsIdempotencyKey()}, one that reached it and got no answer, a 5xx or a
         * 409. A request that reached a server that does not declare it is never sent again: its
         * outcome is unknown ({@link Effect#EFFECTFUL} holds it as indeterminate, {@link
         * Effect#IDEMPOTENT} releases it). A key-honouring action asks again after a 409 up to 8
         * times (100 ms doubling to 2 s), or as often as this allows if more, within its deadline.
         * Default: 1 (no resends but those after a 409).
         *
         * @param maxAttempts how many requests one call may send, at least 1
         * @param backoff the first pause between attempts, zero or positive
         * @return this builder
         */
        public Builder retry(int maxAttempts, Duration backoff) {
            if (maxAttempts < 1) {
                throw new IllegalArgumentException(
                        "retry maxAttempts must be >= 1; it was "
                                + maxAttempts
                                + " (1 = no retries)");
            }
            if (backoff == null || backoff.isNegative()) {
                throw new IllegalArgumentException(
                        "retry backoff must be zero or positive; it was " + backoff);
            }
            Duration cap = Duration.ofSeconds(30);
            return retry(
                    RetryPolicy.attempts(maxAttempts)
                            .withBackoff(backoff, backoff.compareTo(cap) > 0 ? backoff : cap));
        }

        /**
         * {@link #retry(int, Duration)} with a {@link RetryPolicy} (its {@code retryOn} types
         * narrow which failures are sent again).
         *
         * @param policy how many requests one call may send and the pauses between them
         * @return this builder
         */
        public Builder retry(RetryPolicy policy) {
            this.retry = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /**
         * How the {@code Idempotency-Key} header holds the key; default {@link KeyHeaderForm#BARE}.
         *
         * @param form the header's form
         * @return this builder
         */
        public Builder keyHeaderForm(KeyHeaderForm form) {
            this.keyHeaderForm = Objects.requireNonNull(form, "form");
            return this;
        }

        /**
         * The tenant every key is scoped to: two tenants never share a record (default none).
         *
         * @param tenant the tenant; {@code ""} is a tenant, {@code null} is none
         * @return this builder
         */
        public Builder tenant(String tenant) {
            this.tenant = Registrar.checkText("tenant", tenant);
            return this;
        }

        /**
         * The run every key is scoped to, e.g. one agent session: a new run is a new key (default
         * none).
         *
         * @param run the run, or {@code null} for none
         * @return this builder
         */
        public Builder run(String run) {
            this.run = Registrar.checkText("run", run);
            return this;
        }

        /**
         * The mapper that reads response bodies and remembered results, used as it is (default: one
         * with the java.time and JDK 8 modules, dates as ISO-8601 text, unknown members ignored).
         *
         * @param mapper the mapper; not copied, so do not reconfigure it afterwards
         * @return this builder
         */
        public Builder objectMapper(ObjectMapper mapper) {
            this.mapper = mapper;
            return this;
        }

        private Registry registry() {
            if (baseUri != null) {
                URI parsed;
                try {
                    parsed = new URI(baseUri);
                } catch (java.net.URISyntaxException e) {
                    throw new IllegalArgumentException(
                            "baseUri `" + baseUri + "` is not a URI: " + e.getMessage(), e);
                }
                if (!parsed.isAbsolute()
                        || parsed.getHost() == null
                        || parsed.getRawQuery() != null) {
                    throw new IllegalArgumentException(
                            "baseUri `"
                                    + baseUri
                                    + "` must be an absolute http(s) URL"
                                    + " without a query, like https://api.example.com/v1");
                }
            }
            ObjectMapper m = mapper != null ? mapper : ResultTypes.defaultMapper();
            Map<String, List<String>> fixed = new LinkedHashMap<>();
            headers.forEach((name, values) -> fixed.put(name, List.copyOf(values)));
            HttpExchange http =
                    new HttpExchange(
                            client != null
                                    ? client
                                    // HTTP/1.1: the JDK's default client offers every POST an
                                    // `Upgrade: h2c`, which some servers and proxies mishandle.
                                    : HttpClient.newBuilder()
                                            .version(HttpClient.Version.HTTP_1_1)
                                            .build(),
                            client == null,
                            Collections.unmodifiableMap(fixed),
                            keyHeaderForm == KeyHeaderForm.STRUCTURED_STRING);
            Registrar registrar = new Registrar(store, "the web-service executor", http::close);
            return new Registry(registrar, http, baseUri, m, retry, keyHeaderForm);
        }

        /**
         * Builds the executor and registers every role's actions (refusals as for {@link
         * WebServiceExecutor#register}).
         *
         * @return the executor, open until {@link WebServiceExecutor#close()}
         */
        public WebServiceExecutor build() {
            WebServiceExecutor executor = new WebServiceExecutor(registry(), tenant, run);
            if (!roles.isEmpty()) {
                try {
                    executor.register(roles.toArray());
                } catch (RuntimeException refused) {
                    executor.close();
                    throw refused;
                }
            }
            return executor;
        }
    }
}
