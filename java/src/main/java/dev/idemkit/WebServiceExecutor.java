package dev.idemkit;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.io.IOException;
import java.lang.ref.Reference;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Calls {@link WebService} actions by name under their {@link Idempotent} policies, through the
 * same core protocol as {@link ToolDispatcher}: a repeated call with the same input (or the same
 * explicit key) sends its request at most once while its record is kept, and every repeat gets the
 * remembered result or a typed {@link IdempotencyException}. {@code POST}, {@code PUT},
 * {@code PATCH} and {@code DELETE} carry the call's key as {@code Idempotency-Key}, so the service
 * can deduplicate on its side too.
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
 * {@link IdempotencyTimeoutException}, and the claim stays in progress (SPEC §3).
 * 5xx responses and transport errors are retried within the call (same key) per {@link
 * Builder#retry}; 4xx are not. Thread-safe; views with another tenant or run come from
 * {@link #withTenant} and {@link #withRun}.
 */
public final class WebServiceExecutor {
    private static final System.Logger LOG = System.getLogger("dev.idemkit");
    /** The header every key-carrying request gets. */
    public static final String IDEMPOTENCY_KEY = "Idempotency-Key";
    /** How long past the deadline a response body may still be arriving before the exchange is cut. */
    private static final long BODY_GRACE_MS = 50;
    private static final long MAX_BACKOFF_MS = 30_000;

    /**
     * Reads inputs (exact numbers, duplicate members refused) and writes request bodies (doubles as
     * their shortest round-trip decimal). Arguments are JSON-native values, so no user mapper.
     */
    private static final JsonMapper WIRE = JsonMapper.builder()
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(StreamWriteFeature.USE_FAST_DOUBLE_WRITER)
            .configure(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES, false)
            .nodeFactory(JsonNodeFactory.withExactBigDecimals(true))
            .build();

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

    /** Transport retries of one logical call (same key): how many requests at most, and the first pause. */
    private static final class Retry {
        final int maxAttempts;
        final long backoffMs;

        Retry(int maxAttempts, long backoffMs) {
            this.maxAttempts = maxAttempts;
            this.backoffMs = backoffMs;
        }

        long pauseBefore(int attempt) {
            long pause = backoffMs;
            for (int i = 2; i < attempt && pause < MAX_BACKOFF_MS; i++) {
                pause *= 2;
            }
            return Math.min(pause, MAX_BACKOFF_MS);
        }
    }

    /** The actions, the store and the HTTP settings shared by every view. */
    private static final class Registry {
        final Map<String, RegisteredAction> actions = new ConcurrentHashMap<>();
        final NativeIdempotencyStore store;
        final HttpClient client;
        final String baseUri;
        final Map<String, List<String>> headers;
        final Retry retry;
        final KeyHeaderForm keyHeaderForm;
        final ObjectMapper mapper;
        final boolean setsContentType;

        Registry(NativeIdempotencyStore store, HttpClient client, String baseUri, Map<String, List<String>> headers,
                Retry retry, KeyHeaderForm keyHeaderForm, ObjectMapper mapper) {
            this.store = store;
            this.client = client;
            this.baseUri = baseUri;
            this.headers = headers;
            this.retry = retry;
            this.keyHeaderForm = keyHeaderForm;
            this.mapper = mapper;
            this.setsContentType = headers.keySet().stream().anyMatch("Content-Type"::equalsIgnoreCase);
        }
    }

    /** Destroys native tools once their registry is unreachable. */
    private static final class ActionHandles implements Runnable {
        private final long[] handles;

        ActionHandles(long[] handles) {
            this.handles = handles;
        }

        @Override
        public void run() {
            for (long h : handles) {
                NativeBridge.toolDestroy(h);
            }
        }
    }

    private final Registry registry;
    private final String tenant;
    private final String run;
    private final NativeContext context;

    /** An executor on its own {@link InMemoryIdempotencyStore}, with a default {@link HttpClient}; absolute endpoints only. */
    public WebServiceExecutor() {
        this(builder().registry(), null, null);
    }

    /** An executor on {@code store}, with a default {@link HttpClient}; absolute endpoints only. */
    public WebServiceExecutor(IdempotencyStore store) {
        this(builder().store(Objects.requireNonNull(store, "store")).registry(), null, null);
    }

    private WebServiceExecutor(Registry registry, String tenant, String run) {
        this.registry = registry;
        this.tenant = tenant;
        this.run = run;
        this.context = new NativeContext(tenant, run);
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * Registers the {@link WebService} methods of each role (its class, superclasses and
     * interfaces). All or nothing: when one action is refused, none of the call's are registered.
     *
     * @throws IllegalStateException {@code EXPLICIT} on a role that is not an {@link IdempotencyKeySupplier},
     *     a parameter whose name is unknown
     * @throws IllegalArgumentException a policy the core refuses (TTL or lease ≤ 0, unknown
     *     keyArguments, timeoutMs ≥ lease), an endpoint that is not a URL, a placeholder that names
     *     no parameter, a PATH parameter without a placeholder, a body on GET/HEAD, a duplicate name
     */
    public WebServiceExecutor register(Object... roles) {
        Registry r = registry;
        synchronized (r) {
            if (r.store.isClosed()) {
                throw new IllegalStateException("the store " + r.store.describe() + " is closed");
            }
            Map<String, RegisteredAction> added = new LinkedHashMap<>();
            List<Long> handles = new ArrayList<>();
            try {
                for (Object role : roles) {
                    Objects.requireNonNull(role, "role");
                    for (Method method : webServiceMethods(role.getClass())) {
                        RegisteredAction action = RegisteredAction.of(role, method, r.baseUri, r.mapper);
                        handles.add(action.nativeTool.handle);
                        if (r.actions.containsKey(action.name) || added.putIfAbsent(action.name, action) != null) {
                            throw new IllegalArgumentException("two web-service actions are named `" + action.name
                                    + "`; action names are key scopes and must be unique");
                        }
                    }
                }
            } catch (RuntimeException refused) {
                for (long h : handles) {
                    NativeBridge.toolDestroy(h);
                }
                throw refused;
            }
            r.actions.putAll(added);
            NativeIdempotencyStore.CLEANER.register(r, new ActionHandles(handles.stream().mapToLong(Long::longValue)
                    .toArray()));
        }
        return this;
    }

    /** The {@link WebService} methods of a class, its superclasses and interfaces (an override hides its original). */
    private static List<Method> webServiceMethods(Class<?> type) {
        List<Method> found = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        Deque<Class<?>> pending = new ArrayDeque<>();
        Set<Class<?>> visited = new HashSet<>();
        pending.add(type);
        while (!pending.isEmpty()) {
            Class<?> c = pending.removeFirst();
            if (c == Object.class || !visited.add(c)) {
                continue;
            }
            for (Method m : c.getDeclaredMethods()) {
                if (m.isBridge() || m.isSynthetic() || Modifier.isStatic(m.getModifiers())) {
                    continue;
                }
                String signature = m.getName() + java.util.Arrays.toString(m.getParameterTypes());
                if (seen.add(signature) && m.isAnnotationPresent(WebService.class)) {
                    found.add(m);
                }
            }
            if (c.getSuperclass() != null) {
                pending.add(c.getSuperclass());
            }
            Collections.addAll(pending, c.getInterfaces());
        }
        return found;
    }

    /** The same actions, store and HTTP settings for another tenant ({@code null}: none; {@code ""} is a tenant). */
    public WebServiceExecutor withTenant(String tenant) {
        return new WebServiceExecutor(registry, checkText("tenant", tenant), run);
    }

    /** The same actions, store and HTTP settings in another run: a new run is a new key. */
    public WebServiceExecutor withRun(String run) {
        return new WebServiceExecutor(registry, tenant, checkText("run", run));
    }

    public String tenant() {
        return tenant;
    }

    public String run() {
        return run;
    }

    public IdempotencyStore store() {
        return registry.store;
    }

    /** The registered action names. */
    public Set<String> actionNames() {
        return Collections.unmodifiableSet(registry.actions.keySet());
    }

    /**
     * Calls an action with its input as a map of JSON-native values (SPEC §7); answers the response
     * body read as the method's declared return type, or the remembered result.
     *
     * @throws WebServiceException a non-2xx response, or no response (after the allowed retries)
     * @throws IdempotencyTimeoutException the exchange was cut at {@code timeoutMs}: the outcome is
     *     unknown and the claim stays in progress until its lease ends or an operator resolves it
     * @throws InvalidKeyException a value in the input is not JSON-native, or the key is refused
     * @throws IllegalArgumentException no such action, or the input does not fit its parameters
     */
    public Object invoke(String action, Map<String, Object> input) {
        return invokeForResponse(action, input).value();
    }

    /** {@link #invoke(String, Map)} with the input as JSON text (what a model sends), hashed exactly as given. */
    public Object invoke(String action, String jsonInput) {
        return invokeForResponse(action, jsonInput).value();
    }

    /** {@link #invoke(String, Map)}, the value as {@code type}. */
    public <T> T invoke(String action, Map<String, Object> input, Class<T> type) {
        return as(invoke(action, input), type);
    }

    /** {@link #invoke(String, String)}, the value as {@code type}. */
    public <T> T invoke(String action, String jsonInput, Class<T> type) {
        return as(invoke(action, jsonInput), type);
    }

    /** {@link #invoke(String, Map)}, with whether the answer was replayed, its status and its key. */
    public WebServiceResponse<Object> invokeForResponse(String action, Map<String, Object> input) {
        RegisteredAction a = lookup(action);
        Map<String, Object> in = input == null ? Collections.emptyMap() : input;
        // Refuses non-JSON values naming the member, for every strategy (SPEC §7).
        JsonInput json = JsonInput.ofValue(in, a.name);
        JsonNode tree = tree(in, 0);
        return call(a, tree, in, a.strategy == KeyStrategy.HASH_INPUT ? json : null);
    }

    /**
     * A map of JSON-native values (already checked by {@link JsonInput#ofValue}) as a tree, numbers
     * exact: doubles and floats as their shortest round-trip decimal (Jackson's own conversion
     * would widen {@code 0.1f} to {@code 0.10000000149011612}).
     */
    private static JsonNode tree(Object value, int depth) {
        com.fasterxml.jackson.databind.node.JsonNodeFactory nodes = WIRE.getNodeFactory();
        if (depth > 64) {
            throw new IllegalArgumentException("the input is nested deeper than 64 arrays/objects");
        }
        if (value == null) {
            return nodes.nullNode();
        } else if (value instanceof String) {
            return nodes.textNode((String) value);
        } else if (value instanceof Boolean) {
            return nodes.booleanNode((Boolean) value);
        } else if (value instanceof Double || value instanceof Float) {
            double d = ((Number) value).doubleValue();
            if (!Double.isFinite(d)) {
                return nodes.numberNode(d);
            }
            String shortest = value instanceof Float ? ShortestDecimal.of((Float) value) : ShortestDecimal.of(d);
            return nodes.numberNode(new java.math.BigDecimal(shortest));
        } else if (value instanceof java.math.BigDecimal) {
            return nodes.numberNode((java.math.BigDecimal) value);
        } else if (value instanceof java.math.BigInteger) {
            return nodes.numberNode((java.math.BigInteger) value);
        } else if (value instanceof Number) {
            return nodes.numberNode(((Number) value).longValue());
        } else if (value instanceof List) {
            com.fasterxml.jackson.databind.node.ArrayNode array = nodes.arrayNode();
            for (Object item : (List<?>) value) {
                array.add(tree(item, depth + 1));
            }
            return array;
        } else {
            com.fasterxml.jackson.databind.node.ObjectNode object = nodes.objectNode();
            for (Map.Entry<?, ?> member : ((Map<?, ?>) value).entrySet()) {
                object.set((String) member.getKey(), tree(member.getValue(), depth + 1));
            }
            return object;
        }
    }

    /** {@link #invoke(String, String)}, with whether the answer was replayed, its status and its key. */
    public WebServiceResponse<Object> invokeForResponse(String action, String jsonInput) {
        RegisteredAction a = lookup(action);
        Objects.requireNonNull(jsonInput, "jsonInput");
        JsonNode tree;
        try {
            tree = WIRE.readTree(jsonInput);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("the input of `" + a.name + "` is not valid JSON: "
                    + e.getOriginalMessage(), e);
        }
        if (tree == null || tree.isMissingNode()) {
            throw new IllegalArgumentException("the input of `" + a.name + "` is empty; send a JSON object");
        }
        Map<String, Object> asMap = null;
        if (a.strategy == KeyStrategy.EXPLICIT && tree.isObject()) {
            asMap = WIRE.convertValue(tree, new TypeReference<Map<String, Object>>() { });
        }
        return call(a, tree, asMap, a.strategy == KeyStrategy.HASH_INPUT ? JsonInput.ofText(jsonInput) : null);
    }

    /** {@link #invokeForResponse(String, Map)}, the value as {@code type}. */
    public <T> WebServiceResponse<T> invokeForResponse(String action, Map<String, Object> input, Class<T> type) {
        WebServiceResponse<Object> r = invokeForResponse(action, input);
        return r.withValue(as(r.value(), type));
    }

    /** {@link #invokeForResponse(String, String)}, the value as {@code type}. */
    public <T> WebServiceResponse<T> invokeForResponse(String action, String jsonInput, Class<T> type) {
        WebServiceResponse<Object> r = invokeForResponse(action, jsonInput);
        return r.withValue(as(r.value(), type));
    }

    @SuppressWarnings("unchecked")
    private <T> T as(Object value, Class<T> type) {
        if (value == null) {
            return null;
        }
        if (type.isInstance(value)) {
            return type.cast(value);
        }
        return (T) registry.mapper.convertValue(value, type);
    }

    @SuppressWarnings("unchecked")
    private WebServiceResponse<Object> call(RegisteredAction a, JsonNode tree, Map<String, Object> asMap,
            JsonInput hashed) {
        long started = System.nanoTime();
        // The request is built (and the input checked) before anything is claimed.
        RegisteredAction.Request request = a.request(tree);
        JsonInput json = hashed;
        String supplied = null;
        if (a.strategy == KeyStrategy.EXPLICIT) {
            supplied = a.supplier.idempotencyKeyFor(Collections.unmodifiableMap(asMap));
            if (supplied == null) {
                throw new InvalidKeyException("invalid idempotency key for `" + a.name + "`: explicit key: the supplier"
                        + " returned null; supply a key with at least one visible character", a.name, null);
            }
            json = JsonInput.ofString(supplied);
        }
        Registry r = registry;
        try {
            return (WebServiceResponse<Object>) IdempotentInvoker.invoke(r.store, a.nativeTool, context, json, supplied,
                    callContext -> exchange(r, a, request, callContext, started), a.codec);
        } finally {
            Reference.reachabilityFence(r);
            Reference.reachabilityFence(this);
        }
    }

    /** Sends the request (with transport retries under one key); the body of the idempotent call. */
    private static WebServiceResponse<Object> exchange(Registry r, RegisteredAction a, RegisteredAction.Request request,
            IdempotencyContext context, long started) {
        String key = context.key();
        HttpRequest.Builder builder = HttpRequest.newBuilder(request.uri);
        for (Map.Entry<String, List<String>> header : r.headers.entrySet()) {
            for (String value : header.getValue()) {
                builder.header(header.getKey(), value);
            }
        }
        boolean sendsKey = key != null && a.method.carriesIdempotencyKey();
        if (sendsKey) {
            builder.header(IDEMPOTENCY_KEY, r.keyHeaderForm == KeyHeaderForm.STRUCTURED_STRING ? "\"" + key + "\"" : key);
        }
        if (request.body != null) {
            if (!r.setsContentType) {
                builder.header("Content-Type", "application/json");
            }
            builder.method(a.method.name(), HttpRequest.BodyPublishers.ofByteArray(request.body));
        } else {
            builder.method(a.method.name(), HttpRequest.BodyPublishers.noBody());
        }
        // Repeating a POST or PATCH that carries no key could repeat its effect: only one attempt.
        int maxAttempts = sendsKey || a.method.idempotentByDefinition() ? r.retry.maxAttempts : 1;
        long deadline = a.timeoutMs > 0 ? started + TimeUnit.MILLISECONDS.toNanos(a.timeoutMs) : Long.MAX_VALUE;
        String uri = request.uri.toString();
        for (int attempt = 1;; attempt++) {
            long remaining = deadline == Long.MAX_VALUE ? Long.MAX_VALUE
                    : TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (remaining <= 0) {
                WebServiceException late = failure(a, uri, 0, "", key, attempt - 1, "did not start its request within"
                        + " timeoutMs = " + a.timeoutMs, new HttpTimeoutException("deadline passed"));
                if (attempt == 1) {
                    // Nothing was sent: release the claim as for a body that never ran.
                    throw new IdempotentInvoker.NotRun(late);
                }
                throw late;
            }
            if (remaining != Long.MAX_VALUE) {
                builder.timeout(Duration.ofMillis(remaining));
            }
            HttpResponse<byte[]> response;
            try {
                response = send(r.client, builder.build(), remaining);
            } catch (IOException transport) {
                // Cut at the call's deadline: the request may have reached the service, so the
                // outcome is unknown. SPEC §3: the claim stays in progress (neither recorded nor
                // released) and reads as abandoned once its lease ends. (A connect timeout of the
                // client's own, with time left, is a transport error like any other.)
                boolean timedOut = transport instanceof HttpTimeoutException && deadline != Long.MAX_VALUE
                        && deadline - System.nanoTime() <= TimeUnit.MILLISECONDS.toNanos(5);
                if (timedOut) {
                    throw new IdempotentInvoker.OutcomeUnknown(cutAtDeadline(a, uri, key, attempt, transport));
                }
                String what = "got no response (" + transport + ")";
                if (attempt < maxAttempts && pause(r.retry.pauseBefore(attempt + 1), deadline)) {
                    LOG.log(System.Logger.Level.DEBUG, "idemkit: `{0}` {1}; retrying under key {2}", a.name, what, key);
                    continue;
                }
                throw failure(a, uri, 0, "", key, attempt, what, transport);
            } catch (InterruptedException interrupted) {
                Thread.currentThread().interrupt();
                throw failure(a, uri, 0, "", key, attempt, "was interrupted while waiting for its response",
                        interrupted);
            }
            int status = response.statusCode();
            String charset = charset(response);
            if (status >= 200 && status < 300) {
                Object value;
                try {
                    value = a.read(response.body(), charset);
                } catch (IOException unreadable) {
                    String body = new String(response.body(), StandardCharsets.UTF_8);
                    throw failure(a, uri, status, body, key, attempt, "answered " + status + " with a body that does"
                            + " not read as " + a.returnType.toCanonical() + " (" + unreadable.getMessage() + ")",
                            unreadable);
                }
                return WebServiceResponse.fresh(value, status, response.headers(), attempt, context);
            }
            String body = new String(response.body(), RegisteredAction.charsetOr(charset));
            if (status >= 500 && attempt < maxAttempts && pause(r.retry.pauseBefore(attempt + 1), deadline)) {
                LOG.log(System.Logger.Level.DEBUG, "idemkit: `{0}` answered {1}; retrying under key {2}", a.name, status,
                        key);
                continue;
            }
            throw failure(a, uri, status, body, key, attempt, "answered " + status, null);
        }
    }

    /** An exchange cut at the deadline: its outcome is unknown and its claim stays in progress. */
    private static IdempotencyTimeoutException cutAtDeadline(RegisteredAction a, String uri, String key, int attempts,
            IOException cause) {
        boolean claims = a.strategy == KeyStrategy.HASH_INPUT || a.strategy == KeyStrategy.EXPLICIT;
        String unknown = !claims ? (key == null ? "" : " under key " + key)
                + "; the outcome is unknown (the request may have reached the service)"
                : " under key " + key + "; the outcome is unknown (the request may have reached the service), so"
                        + " the claim stays in progress until its lease (leaseSeconds) ends or an operator resolves it"
                        + " with `idemkit resolve`: a retry waits for it, then gets IndeterminateOutcomeException";
        return new IdempotencyTimeoutException(a.method + " " + uri + " (`" + a.name + "`) got no response within"
                + " timeoutMs = " + a.timeoutMs + (attempts > 1 ? " (attempt " + attempts + ")" : "") + unknown,
                a.name, key, cause);
    }

    private static WebServiceException failure(RegisteredAction a, String uri, int status, String body, String key,
            int attempts, String what, Throwable cause) {
        StringBuilder message = new StringBuilder().append(a.method).append(' ').append(uri).append(" (`")
                .append(a.name).append("`) ").append(what);
        if (attempts > 1) {
            message.append(" after ").append(attempts).append(" attempts");
        }
        if (key != null) {
            message.append(" under key ").append(key);
        }
        if (!body.isEmpty()) {
            message.append(": ").append(WebServiceException.quote(body));
        }
        return new WebServiceException(message.toString(), a.name, a.method, uri, status, body, key, attempts, cause);
    }

    /** One exchange, bounded by the deadline (the headers by {@code HttpRequest.timeout}, the body by the wait). */
    private static HttpResponse<byte[]> send(HttpClient client, HttpRequest request, long remainingMs)
            throws IOException, InterruptedException {
        CompletableFuture<HttpResponse<byte[]>> pending = client.sendAsync(request,
                HttpResponse.BodyHandlers.ofByteArray());
        try {
            return remainingMs == Long.MAX_VALUE ? pending.get() : pending.get(remainingMs + BODY_GRACE_MS,
                    TimeUnit.MILLISECONDS);
        } catch (TimeoutException slow) {
            pending.cancel(true);
            throw new HttpTimeoutException("the response did not arrive within the deadline");
        } catch (InterruptedException interrupted) {
            pending.cancel(true);
            throw interrupted;
        } catch (ExecutionException failed) {
            Throwable cause = failed.getCause();
            if (cause instanceof IOException) {
                throw (IOException) cause;
            }
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            if (cause instanceof Error) {
                throw (Error) cause;
            }
            throw new IOException(cause);
        }
    }

    /** Sleeps before a retry; false (and no sleep) when the pause would end past the deadline. */
    private static boolean pause(long ms, long deadline) {
        if (deadline != Long.MAX_VALUE && System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms) >= deadline) {
            return false;
        }
        if (ms <= 0) {
            return true;
        }
        try {
            Thread.sleep(ms);
            return true;
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static String charset(HttpResponse<?> response) {
        String type = response.headers().firstValue("Content-Type").orElse("");
        for (String part : type.split(";")) {
            String p = part.trim();
            if (p.toLowerCase(Locale.ROOT).startsWith("charset=")) {
                return p.substring("charset=".length()).replace("\"", "").trim();
            }
        }
        return null;
    }

    /** The request body: the JSON object of the body parameters as passed (doubles shortest). */
    static byte[] bodyBytes(JsonNode members) {
        try {
            return WIRE.writeValueAsBytes(members);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("the input does not write as JSON: " + e.getOriginalMessage(), e);
        }
    }

    /** A nested value as JSON text (for a query parameter holding an object). */
    static String jsonText(JsonNode value) {
        return new String(bodyBytes(value), StandardCharsets.UTF_8);
    }

    private RegisteredAction lookup(String action) {
        RegisteredAction registered = registry.actions.get(action);
        if (registered == null) {
            throw new IllegalArgumentException("no web-service action named `" + action + "`; the actions are "
                    + registry.actions.keySet());
        }
        return registered;
    }

    /** Tenant and run are key material: a lone surrogate is refused when they are set. */
    private static String checkText(String what, String value) {
        if (value == null) {
            return null;
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < value.length() && Character.isLowSurrogate(value.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException(what + " contains a lone surrogate \\u"
                        + Integer.toHexString(c) + " at index " + i + "; use whole characters");
            }
        }
        return value;
    }

    /** Builds a {@link WebServiceExecutor}; {@link #build()} registers and validates every action. */
    public static final class Builder {
        private final List<Object> roles = new ArrayList<>();
        private final Map<String, List<String>> headers = new LinkedHashMap<>();
        private IdempotencyStore store;
        private HttpClient client;
        private String baseUri;
        private int maxAttempts = 1;
        private long backoffMs = 0;
        private KeyHeaderForm keyHeaderForm = KeyHeaderForm.BARE;
        private String tenant;
        private String run;
        private ObjectMapper mapper;

        private Builder() {
        }

        /** Objects whose {@link WebService} methods are registered. */
        public Builder roles(Object... objects) {
            for (Object o : objects) {
                roles.add(Objects.requireNonNull(o, "role"));
            }
            return this;
        }

        /** Where records live; default a new {@link InMemoryIdempotencyStore}. Share it with a {@link ToolDispatcher} to share records. */
        public Builder store(IdempotencyStore store) {
            this.store = store;
            return this;
        }

        /** The client that sends requests (timeouts per request come from {@link WebService#timeoutMs()}); default {@link HttpClient#newHttpClient()}. */
        public Builder httpClient(HttpClient client) {
            this.client = client;
            return this;
        }

        /** What relative endpoints ({@code /v1/charges}) are resolved against: {@code https://api.example.com}. */
        public Builder baseUri(String baseUri) {
            this.baseUri = baseUri;
            return this;
        }

        /** {@link #baseUri(String)} from a URI. */
        public Builder baseUri(URI baseUri) {
            return baseUri(baseUri.toString());
        }

        /**
         * A header every request carries (e.g. {@code Authorization}); may be given more than once.
         * A {@code Content-Type} given here replaces the {@code application/json} of BODY requests.
         */
        public Builder header(String name, String value) {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(value, "value");
            if (name.equalsIgnoreCase(IDEMPOTENCY_KEY)) {
                throw new IllegalArgumentException("Idempotency-Key is set by the executor from each call's key;"
                        + " it cannot be a default header");
            }
            // HttpRequest refuses restricted or malformed headers (Host, Content-Length, ...): refuse them now.
            HttpRequest.newBuilder().header(name, value);
            headers.computeIfAbsent(name, n -> new ArrayList<>()).add(value);
            return this;
        }

        /**
         * Retries a 5xx response or a transport error within one logical call, under the same key:
         * at most {@code maxAttempts} requests, pausing {@code backoff}, then twice as long each
         * time (at most 30 s), never past the call's deadline. 4xx responses are never retried,
         * nor is a {@code POST}/{@code PATCH} that carries no key ({@code NONE}). Default: 1 (no
         * retries).
         */
        public Builder retry(int maxAttempts, Duration backoff) {
            if (maxAttempts < 1) {
                throw new IllegalArgumentException("retry maxAttempts must be >= 1; it was " + maxAttempts
                        + " (1 = no retries)");
            }
            if (backoff == null || backoff.isNegative()) {
                throw new IllegalArgumentException("retry backoff must be zero or positive; it was " + backoff);
            }
            this.maxAttempts = maxAttempts;
            this.backoffMs = backoff.toMillis();
            return this;
        }

        /** How the {@code Idempotency-Key} header holds the key; default {@link KeyHeaderForm#BARE}. */
        public Builder keyHeaderForm(KeyHeaderForm form) {
            this.keyHeaderForm = Objects.requireNonNull(form, "form");
            return this;
        }

        public Builder tenant(String tenant) {
            this.tenant = checkText("tenant", tenant);
            return this;
        }

        public Builder run(String run) {
            this.run = checkText("run", run);
            return this;
        }

        /**
         * The mapper that reads response bodies and remembered results, used as it is (default: one
         * with the java.time and JDK 8 modules, dates as ISO-8601 text, unknown members ignored).
         */
        public Builder objectMapper(ObjectMapper mapper) {
            this.mapper = mapper;
            return this;
        }

        private Registry registry() {
            NativeIdempotencyStore s;
            if (store == null) {
                s = new InMemoryIdempotencyStore();
            } else if (store instanceof NativeIdempotencyStore) {
                s = (NativeIdempotencyStore) store;
            } else {
                throw new IllegalArgumentException("store " + store.getClass().getName() + " is not run by the idemkit"
                        + " core; use InMemoryIdempotencyStore, RedisIdempotencyStore or PostgresIdempotencyStore");
            }
            if (s.isClosed()) {
                throw new IllegalStateException("the store " + s.describe() + " is closed");
            }
            if (baseUri != null) {
                URI parsed;
                try {
                    parsed = new URI(baseUri);
                } catch (java.net.URISyntaxException e) {
                    throw new IllegalArgumentException("baseUri `" + baseUri + "` is not a URI: " + e.getMessage(), e);
                }
                if (!parsed.isAbsolute() || parsed.getHost() == null || parsed.getRawQuery() != null) {
                    throw new IllegalArgumentException("baseUri `" + baseUri + "` must be an absolute http(s) URL"
                            + " without a query, like https://api.example.com/v1");
                }
            }
            ObjectMapper m = mapper != null ? mapper : ResultTypes.defaultMapper();
            Map<String, List<String>> fixed = new LinkedHashMap<>();
            headers.forEach((name, values) -> fixed.put(name, List.copyOf(values)));
            return new Registry(s, client != null ? client : HttpClient.newHttpClient(), baseUri,
                    Collections.unmodifiableMap(fixed), new Retry(maxAttempts, backoffMs), keyHeaderForm, m);
        }

        /** Builds the executor and registers every role's actions (refusals as for {@link WebServiceExecutor#register}). */
        public WebServiceExecutor build() {
            WebServiceExecutor executor = new WebServiceExecutor(registry(), tenant, run);
            if (!roles.isEmpty()) {
                executor.register(roles.toArray());
            }
            return executor;
        }
    }
}
