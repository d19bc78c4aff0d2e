package dev.idemkit.adapter;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idemkit.IdempotencyListener;
import dev.idemkit.IdempotencyStore;
import dev.idemkit.ModelErrorListener;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;

/**
 * The options every adapter's builder takes, for adapter authors: the tool objects, the store,
 * tenant and run of a call (read from the framework's call context {@code C}), the mapper and the
 * listeners. A framework's builder extends it and adds how its tools are found and translated.
 *
 * @param <B> the framework's builder (what the options return)
 * @param <C> the framework's call context (LangChain4j's {@code InvocationContext}, Spring AI's
 *     {@code ToolContext})
 */
public abstract class ToolAdapterBuilder<B extends ToolAdapterBuilder<B, C>, C> {
    private final List<Object> objects = new ArrayList<>();
    private final List<IdempotencyListener> listeners = new ArrayList<>();
    private final List<ModelErrorListener> modelErrorListeners = new ArrayList<>();
    private IdempotencyStore store;
    private Function<C, String> tenant;
    private Function<C, String> run;
    private ObjectMapper mapper;

    /**
     * A builder with these defaults.
     *
     * @param tenant the default tenant of a call
     * @param run the default run of a call
     */
    protected ToolAdapterBuilder(Function<C, String> tenant, Function<C, String> run) {
        this.tenant = Objects.requireNonNull(tenant, "tenant");
        this.run = Objects.requireNonNull(run, "run");
    }

    /**
     * This builder as its framework's type.
     *
     * @return {@code this}
     */
    protected abstract B self();

    /**
     * Copies the options (not the objects) of {@code from} into this builder.
     *
     * @param from the builder to copy
     * @return this builder
     */
    protected final B copyOptions(ToolAdapterBuilder<B, C> from) {
        listeners.addAll(from.listeners);
        modelErrorListeners.addAll(from.modelErrorListeners);
        store = from.store;
        tenant = from.tenant;
        run = from.run;
        mapper = from.mapper;
        return self();
    }

    /**
     * Adds tool objects.
     *
     * @param what the parameter's name, for the null check's message
     * @param toolObjects the objects
     * @return this builder
     */
    protected final B addObjects(String what, Object... toolObjects) {
        for (Object o : toolObjects) {
            objects.add(Objects.requireNonNull(o, what));
        }
        return self();
    }

    /**
     * Where records live (Redis or PostgreSQL to deduplicate across processes); default a new
     * in-memory store owned by what is built.
     *
     * @param store the store; it stays the caller's to close, after what is built
     * @return this builder
     */
    public B store(IdempotencyStore store) {
        this.store = store;
        return self();
    }

    /**
     * One tenant for every call.
     *
     * @param tenant the tenant, or {@code null} for none
     * @return this builder
     */
    public B tenant(String tenant) {
        this.tenant = context -> tenant;
        return self();
    }

    /**
     * The tenant of each call, from its call context (LangChain4j's {@code InvocationContext},
     * Spring AI's {@code ToolContext}); the adapter's class documents its default.
     *
     * @param tenant returns the tenant, or {@code null} for none
     * @return this builder
     */
    public B tenant(Function<C, String> tenant) {
        this.tenant = Objects.requireNonNull(tenant, "tenant");
        return self();
    }

    /**
     * The run of each call (one conversation, whose repeats are deduplicated), from its call
     * context (LangChain4j: the memory id; Spring AI: the conversation id entry, by default);
     * {@code context -> null} makes calls repeat across conversations.
     *
     * @param run returns the run, or {@code null} for none
     * @return this builder
     */
    public B run(Function<C, String> run) {
        this.run = Objects.requireNonNull(run, "run");
        return self();
    }

    /**
     * The mapper for arguments and results (default: idemkit's).
     *
     * @param mapper the mapper
     * @return this builder
     */
    public B objectMapper(ObjectMapper mapper) {
        this.mapper = mapper;
        return self();
    }

    /**
     * Calls {@code listener} with the events of the idempotent tools' calls (e.g. {@code
     * IdempotencyMetrics} from idemkit-micrometer).
     *
     * @param listener the listener
     * @return this builder
     */
    public B listener(IdempotencyListener listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
        return self();
    }

    /**
     * Calls {@code listener} each time an idempotent tool hands the framework idemkit's error (a
     * refusal, a held outcome, arguments that do not bind) as the tool's error text, which the
     * framework sends to the model instead of throwing.
     *
     * @param listener the listener
     * @return this builder
     */
    public B modelErrorListener(ModelErrorListener listener) {
        modelErrorListeners.add(Objects.requireNonNull(listener, "listener"));
        return self();
    }

    /**
     * The tool objects, in the order given.
     *
     * @return the objects; unmodifiable
     */
    protected final List<Object> objects() {
        return Collections.unmodifiableList(objects);
    }

    /**
     * The store given, or {@code null} (then {@link ToolBinding#open} creates one).
     *
     * @return the store or {@code null}
     */
    protected final IdempotencyStore store() {
        return store;
    }

    /**
     * The mapper given, or {@code null} for idemkit's.
     *
     * @return the mapper or {@code null}
     */
    protected final ObjectMapper mapper() {
        return mapper;
    }

    /**
     * The event listeners.
     *
     * @return a copy
     */
    protected final List<IdempotencyListener> listeners() {
        return List.copyOf(listeners);
    }

    /**
     * A binding over this builder's store, mapper and listeners.
     *
     * @param framework the adapter's name for messages (e.g. {@code "idemkit-spring-ai"})
     * @param logAs the class whose logger tells of a failing listener (the adapter's)
     * @return the binding; the caller closes it when what it builds is closed, or on a refusal
     */
    protected final ToolBinding openBinding(String framework, Class<?> logAs) {
        return ToolBinding.open(framework, logAs, store, mapper, listeners());
    }

    /**
     * The call of one bound tool, with this builder's tenant, run and model-error listeners.
     *
     * @param binding the binding the operation belongs to (for its framework name)
     * @param operation the tool's operation
     * @return the call
     */
    protected final ToolCall<C> call(
            ToolBinding binding, dev.idemkit.IdempotentOperation<Object> operation) {
        return new ToolCall<>(binding, operation, tenant, run, List.copyOf(modelErrorListeners));
    }
}
