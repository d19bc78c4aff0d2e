package dev.idemkit;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;

/**
 * A method as idemkit sees a tool, whichever framework declared it: its name, description, input
 * parameters (what a model fills in; an {@link IdempotencyContext} parameter is not one) and {@link
 * Idempotent} policy (the method's, else its class's). Adapters for agent frameworks read it to
 * publish the tool and build an {@link IdempotentOperation} from it, which binds a call's JSON
 * input to the parameters and runs the method at most once per key.
 *
 * <pre>{@code
 * Method m = Flights.class.getMethod("bookFlight", String.class, String.class);
 * ToolMethod tool = ToolMethod.of(flights, m, "book_flight", "Books a seat");
 * tool.parameters();   // [flight: String, seat: String]
 * tool.policy();       // the method's (or class's) @Idempotent, or null
 * }</pre>
 *
 * <p>Immutable and safe to share. Reading the metadata validates nothing beyond parameter names;
 * the policy is validated by the core when an operation is built from it.
 */
public final class ToolMethod {
    /**
     * One input parameter: the member of the JSON input it is read from, and its declared type.
     *
     * @param name the input member: its {@link ToolParam} name, else the parameter's own name
     * @param type the declared type, generics included
     * @param index the parameter's position in the method's signature
     * @param wholeInput whether it is a {@link ToolInput} parameter, which receives the whole input
     */
    public record Parameter(String name, Type type, int index, boolean wholeInput) {}

    private final Object target;
    private final Method method;
    private final String name;
    private final String description;
    private final long timeoutMs;
    private final IdempotencyHint hint;
    private final Idempotent policy;
    private final List<Parameter> parameters;
    private final String[] memberNames;

    private ToolMethod(
            Object target,
            Method method,
            String name,
            String description,
            long timeoutMs,
            IdempotencyHint hint,
            Function<java.lang.reflect.Parameter, String> naming) {
        this.target = Objects.requireNonNull(target, "target");
        this.method = Objects.requireNonNull(method, "method");
        if (!method.getDeclaringClass().isInstance(target)) {
            throw new IllegalArgumentException(
                    "ToolMethod: "
                            + target.getClass().getName()
                            + " has no method "
                            + method
                            + "; pass the object the method runs on");
        }
        this.name = name == null || name.isEmpty() ? method.getName() : name;
        this.description = description == null ? "" : description;
        this.timeoutMs = timeoutMs;
        this.hint = hint;
        this.policy = Registrar.policy(target, method, method.getAnnotation(Idempotent.class));
        String where =
                "tool `"
                        + this.name
                        + "` ("
                        + method.getDeclaringClass().getName()
                        + "."
                        + method.getName()
                        + ")";
        List<Parameter> found = new ArrayList<>();
        java.lang.reflect.Parameter[] declared = method.getParameters();
        String[] members = new String[declared.length];
        Type[] generic = method.getGenericParameterTypes();
        for (int i = 0; i < declared.length; i++) {
            java.lang.reflect.Parameter p = declared[i];
            if (p.getType() == IdempotencyContext.class) {
                continue;
            }
            Type type = generic.length == declared.length ? generic[i] : p.getParameterizedType();
            boolean whole = p.isAnnotationPresent(ToolInput.class);
            String member = null;
            if (!whole) {
                String given = naming == null ? null : naming.apply(p);
                if (given != null && !given.isEmpty()) {
                    members[i] = given;
                    member = given;
                } else {
                    member = Registrar.parameterName(where, p, i);
                }
            }
            found.add(new Parameter(member, type, i, whole));
        }
        this.parameters = Collections.unmodifiableList(found);
        this.memberNames = members;
    }

    /**
     * A method annotated with idemkit's {@link Tool}: its name, description, hint and timeout come
     * from the annotation.
     *
     * @param target the object the method runs on
     * @param method a {@link Tool} method of {@code target}'s class
     * @return the tool
     * @throws IllegalArgumentException the method has no {@link Tool}
     */
    public static ToolMethod of(Object target, Method method) {
        Tool tool = method.getAnnotation(Tool.class);
        if (tool == null) {
            throw new IllegalArgumentException(
                    method
                            + " has no @dev.idemkit.Tool; use ToolMethod.of(target, method, name,"
                            + " description) for a method another framework declares");
        }
        return new ToolMethod(
                target,
                method,
                tool.name(),
                tool.description(),
                tool.timeoutMs(),
                tool.idempotencyHint(),
                null);
    }

    /**
     * A method declared as a tool by another framework (LangChain4j's or Spring AI's
     * {@code @Tool}): the adapter gives the name and description the framework publishes.
     *
     * @param target the object the method runs on
     * @param method the method
     * @param name the tool's name, the scope of its keys ({@code null} or empty: the method's name)
     * @param description what the tool does, or {@code null}
     * @return the tool
     */
    public static ToolMethod of(Object target, Method method, String name, String description) {
        return new ToolMethod(target, method, name, description, 0, IdempotencyHint.DEFAULT, null);
    }

    /**
     * As {@link #of(Object, Method, String, String)}, with the input member each parameter is read
     * from as the framework names it (LangChain4j's {@code @P(name = ...)}, Spring AI's
     * {@code @ToolParam}): {@code memberName} returns the name, or {@code null} for the default
     * (idemkit's {@link ToolParam} name, else the parameter's own name).
     *
     * @param target the object the method runs on
     * @param method the method
     * @param name the tool's name ({@code null} or empty: the method's name)
     * @param description what the tool does, or {@code null}
     * @param memberName the input member of a parameter, or {@code null} for the default
     * @return the tool
     */
    public static ToolMethod of(
            Object target,
            Method method,
            String name,
            String description,
            Function<java.lang.reflect.Parameter, String> memberName) {
        Objects.requireNonNull(memberName, "memberName");
        return new ToolMethod(
                target, method, name, description, 0, IdempotencyHint.DEFAULT, memberName);
    }

    /**
     * The object the method runs on.
     *
     * @return the target
     */
    public Object target() {
        return target;
    }

    /**
     * The method.
     *
     * @return the method
     */
    public Method method() {
        return method;
    }

    /**
     * The tool's name, the scope of its keys.
     *
     * @return the name
     */
    public String name() {
        return name;
    }

    /**
     * What the tool does.
     *
     * @return the description, or {@code ""}
     */
    public String description() {
        return description;
    }

    /**
     * The tool's deadline ({@link Tool#timeoutMs()}; 0 for a method another framework declares).
     *
     * @return milliseconds, or 0 for none
     */
    public long timeoutMs() {
        return timeoutMs;
    }

    /**
     * The policy: the method's {@link Idempotent}, else its declaring class's, else the target
     * class's.
     *
     * @return the policy, or {@code null} when there is none (strategy {@link KeyStrategy#NONE})
     */
    public Idempotent policy() {
        return policy;
    }

    /**
     * Whether the tool has a policy (an {@link Idempotent} on the method or its class); an adapter
     * leaves a tool without one to its framework.
     *
     * @return {@code true} when {@link #policy()} is not null
     */
    public boolean isIdempotent() {
        return policy != null;
    }

    /**
     * The key strategy of the policy.
     *
     * @return the strategy; {@link KeyStrategy#NONE} without a policy
     */
    public KeyStrategy strategy() {
        return Registrar.strategy(policy);
    }

    /**
     * The input parameters, in declaration order: what a model fills in. {@link IdempotencyContext}
     * parameters are not among them (idemkit fills them in), so an adapter leaves them out of the
     * tool's schema.
     *
     * @return the parameters; unmodifiable
     */
    public List<Parameter> parameters() {
        return parameters;
    }

    /**
     * Whether parameter {@code index} of the method is an {@link IdempotencyContext}, which idemkit
     * fills in and a schema must not show.
     *
     * @param index a position in the method's signature
     * @return {@code true} for an {@link IdempotencyContext} parameter
     */
    public boolean isContextParameter(int index) {
        return method.getParameterTypes()[index] == IdempotencyContext.class;
    }

    /**
     * Whether the method returns nothing ({@code void} or {@code Void}).
     *
     * @return {@code true} for a void method
     */
    public boolean isVoid() {
        return method.getReturnType() == void.class || method.getReturnType() == Void.class;
    }

    /** The input member of each parameter the adapter named ({@code null}: the default). */
    String[] memberNames() {
        return memberNames.clone();
    }

    /** The {@link Tool} annotation the registration reads, with {@code t} as its timeout. */
    Tool asTool(long t) {
        String n = name;
        String d = description;
        IdempotencyHint h = hint;
        return new Tool() {
            @Override
            public Class<? extends Annotation> annotationType() {
                return Tool.class;
            }

            @Override
            public String name() {
                return n;
            }

            @Override
            public String description() {
                return d;
            }

            @Override
            public IdempotencyHint idempotencyHint() {
                return h;
            }

            @Override
            public long timeoutMs() {
                return t;
            }
        };
    }

    @Override
    public String toString() {
        return "tool " + name + " " + parameters;
    }
}
