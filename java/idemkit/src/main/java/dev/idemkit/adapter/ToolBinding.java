package dev.idemkit.adapter;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idemkit.IdempotencyListener;
import dev.idemkit.IdempotencyStore;
import dev.idemkit.Idempotent;
import dev.idemkit.IdempotentOperation;
import dev.idemkit.InMemoryIdempotencyStore;
import dev.idemkit.ToolMethod;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;

/**
 * The binding of tool objects' {@code @Idempotent} methods to {@link IdempotentOperation}s, for
 * adapter authors: one store (the one given, or an in-memory one it owns), one operation per bound
 * tool, one name per tool, and the refusals every adapter words alike. {@link #close()} frees the
 * operations and an owned store; an adapter closes it when its build is refused part way too.
 */
public final class ToolBinding implements AutoCloseable {
    private final String framework;
    private final System.Logger log;
    private final IdempotencyStore store;
    private final InMemoryIdempotencyStore owned;
    private final ObjectMapper mapper;
    private final List<IdempotencyListener> listeners;
    private final List<IdempotentOperation<Object>> operations = new CopyOnWriteArrayList<>();
    private final Set<String> names = new HashSet<>();

    private ToolBinding(
            String framework,
            System.Logger log,
            IdempotencyStore store,
            InMemoryIdempotencyStore owned,
            ObjectMapper mapper,
            List<IdempotencyListener> listeners) {
        this.framework = framework;
        this.log = log;
        this.store = store;
        this.owned = owned;
        this.mapper = mapper;
        this.listeners = listeners;
    }

    /**
     * A binding over {@code store}, or over a new in-memory store it owns.
     *
     * @param framework the adapter's name for messages (e.g. {@code "idemkit-langchain4j"})
     * @param logAs the class whose logger tells of a failing listener (the adapter's)
     * @param store the store, or {@code null} for a new in-memory one
     * @param mapper the mapper, or {@code null} for idemkit's
     * @param listeners the event listeners of the bound operations
     * @return the binding
     */
    public static ToolBinding open(
            String framework,
            Class<?> logAs,
            IdempotencyStore store,
            ObjectMapper mapper,
            List<IdempotencyListener> listeners) {
        InMemoryIdempotencyStore created = store == null ? new InMemoryIdempotencyStore() : null;
        return new ToolBinding(
                Objects.requireNonNull(framework, "framework"),
                System.getLogger(logAs.getName()),
                store != null ? store : created,
                created,
                mapper,
                List.copyOf(listeners));
    }

    /**
     * The adapter's name, as messages start.
     *
     * @return the name
     */
    public String framework() {
        return framework;
    }

    /**
     * The adapter's logger.
     *
     * @return the logger
     */
    public System.Logger log() {
        return log;
    }

    /**
     * The store the records live in.
     *
     * @return the store given, or the in-memory store created
     */
    public IdempotencyStore store() {
        return store;
    }

    /**
     * Binds an idempotent tool: its operation, with the binding's listeners, freed by {@link
     * #close()}.
     *
     * @param tool the tool ({@link ToolMethod#isIdempotent()})
     * @return the operation
     * @throws IllegalArgumentException a policy the core refuses
     */
    public IdempotentOperation<Object> bind(ToolMethod tool) {
        IdempotentOperation<Object> operation = operation(tool, listeners);
        operations.add(operation);
        return operation;
    }

    /**
     * An operation for {@code tool} over this binding's store and mapper that the caller owns (e.g.
     * one made for a single framework call) and closes.
     *
     * @param tool the tool
     * @param operationListeners its listeners
     * @return the operation
     */
    public IdempotentOperation<Object> operation(
            ToolMethod tool, List<IdempotencyListener> operationListeners) {
        IdempotentOperation.Builder<Object> builder =
                IdempotentOperation.builder(tool).store(store);
        if (mapper != null) {
            builder.objectMapper(mapper);
        }
        for (IdempotencyListener l : operationListeners) {
            builder.listener(l);
        }
        return builder.build();
    }

    /**
     * Whether a tool of that name is bound here.
     *
     * @param name the tool's name
     * @return whether {@link #bind} made its operation
     */
    public boolean isBound(String name) {
        for (IdempotentOperation<Object> op : operations) {
            if (op.name().equals(name)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Takes a tool's name; one name is one tool.
     *
     * @param name the tool's name
     * @throws IllegalArgumentException when a tool already has it
     */
    public void claimName(String name) {
        if (!names.add(name)) {
            throw new IllegalArgumentException(
                    framework
                            + ": two tools are named `"
                            + name
                            + "`; give one another name with @Tool(name = ...)");
        }
    }

    /**
     * The refusal of an object with no tool methods.
     *
     * @param type the object's class
     * @param annotation the framework's tool annotation, as the message names it
     * @return the exception to throw
     */
    public IllegalArgumentException noTools(Class<?> type, String annotation) {
        return new IllegalArgumentException(
                framework + ": " + type.getName() + " has no method annotated with " + annotation);
    }

    /**
     * The refusal of a parameter an idempotent tool cannot take.
     *
     * @param tool the tool
     * @param parameter the parameter
     * @param what what the parameter is (e.g. {@code "a ToolContext"})
     * @param instead what to take instead
     * @return the exception to throw
     */
    public IllegalArgumentException refusedParameter(
            ToolMethod tool, Parameter parameter, String what, String instead) {
        return new IllegalArgumentException(
                framework
                        + ": tool `"
                        + tool.name()
                        + "` ("
                        + tool.method().getDeclaringClass().getName()
                        + "."
                        + tool.method().getName()
                        + "): parameter `"
                        + parameter.getName()
                        + "` is "
                        + what
                        + ", which an @Idempotent tool cannot take; "
                        + instead);
    }

    /**
     * Whether a tool method has a policy where {@link ToolMethod} looks: the method, its class, the
     * object's class.
     *
     * @param type the object's class (a proxy's target class)
     * @param method the method
     * @return whether it carries {@code @Idempotent}
     */
    public static boolean isIdempotent(Class<?> type, Method method) {
        return method.isAnnotationPresent(Idempotent.class)
                || method.getDeclaringClass().isAnnotationPresent(Idempotent.class)
                || type.isAnnotationPresent(Idempotent.class);
    }

    /**
     * The input members of the {@code IdempotencyContext} parameters, which idemkit fills in and
     * the published schema leaves out.
     *
     * @param tool the tool
     * @param memberName the member a parameter publishes, or {@code null} for its name
     * @return the members
     */
    public static Set<String> contextMembers(
            ToolMethod tool, Function<Parameter, String> memberName) {
        Parameter[] declared = tool.method().getParameters();
        Set<String> context = new HashSet<>();
        for (int i = 0; i < declared.length; i++) {
            if (tool.isContextParameter(i)) {
                String named = memberName.apply(declared[i]);
                context.add(named != null ? named : declared[i].getName());
            }
        }
        return context;
    }

    /**
     * Frees the bound operations (calls in flight finish first), then an owned store. Safe to call
     * twice.
     */
    @Override
    public void close() {
        List<IdempotentOperation<Object>> bound = new ArrayList<>(operations);
        operations.clear();
        for (IdempotentOperation<Object> op : bound) {
            op.close();
        }
        if (owned != null) {
            owned.close();
        }
    }
}
