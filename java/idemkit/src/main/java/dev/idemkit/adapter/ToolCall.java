package dev.idemkit.adapter;

import dev.idemkit.IdempotencyException;
import dev.idemkit.IdempotentOperation;
import dev.idemkit.InvalidToolInputException;
import dev.idemkit.ModelErrorListener;
import java.lang.reflect.UndeclaredThrowableException;
import java.util.List;
import java.util.function.Function;

/**
 * One bound tool as a framework calls it, for adapter authors: reads tenant and run from the
 * framework's call context, runs the operation, and hands what went wrong to the framework's {@link
 * Errors} translation, telling the {@link ModelErrorListener}s of each idemkit error the model
 * reads. It decides nothing itself: hits, refusals and deadlines are the executor's.
 *
 * @param <C> the framework's call context
 */
public final class ToolCall<C> {
    private final ToolBinding binding;
    private final IdempotentOperation<Object> operation;
    private final Function<C, String> tenant;
    private final Function<C, String> run;
    private final List<ModelErrorListener> modelErrorListeners;

    ToolCall(
            ToolBinding binding,
            IdempotentOperation<Object> operation,
            Function<C, String> tenant,
            Function<C, String> run,
            List<ModelErrorListener> modelErrorListeners) {
        this.binding = binding;
        this.operation = operation;
        this.tenant = tenant;
        this.run = run;
        this.modelErrorListeners = modelErrorListeners;
    }

    /** How a framework throws idemkit's errors and a tool's own. */
    public interface Errors {
        /**
         * idemkit's refusal or held outcome, as the framework's tool error the model reads.
         *
         * @param refusal idemkit's exception; its {@code modelMessage()} is the model's text
         * @return the exception to throw
         */
        RuntimeException refused(IdempotencyException refusal);

        /**
         * Arguments that did not bind (nothing ran), as the framework's tool error.
         *
         * @param invalid idemkit's exception; its {@code modelMessage()} is the model's text
         * @return the exception to throw
         */
        RuntimeException invalid(InvalidToolInputException invalid);

        /**
         * The tool's own exception (a checked one unwrapped), as the framework's.
         *
         * @param cause what the tool threw
         * @return the exception to throw
         */
        RuntimeException failed(Throwable cause);
    }

    /**
     * The tool's name.
     *
     * @return the name
     */
    public String name() {
        return operation.name();
    }

    /**
     * Runs the call.
     *
     * @param arguments the model's arguments as JSON ({@code null} or blank: none)
     * @param context the framework's call context, or {@code null}
     * @param errors the framework's translation
     * @return the tool's result, or the remembered one
     */
    public Object call(String arguments, C context, Errors errors) {
        String input = arguments == null || arguments.isBlank() ? "{}" : arguments;
        try {
            return operation.call(tenant.apply(context), run.apply(context), input);
        } catch (IdempotencyException refused) {
            told(refused, refused.modelMessage());
            throw errors.refused(refused);
        } catch (InvalidToolInputException invalid) {
            told(invalid, invalid.modelMessage());
            throw errors.invalid(invalid);
        } catch (UndeclaredThrowableException checked) {
            throw errors.failed(checked.getCause());
        } catch (RuntimeException failed) {
            throw errors.failed(failed);
        }
    }

    /** Tells the listeners that {@code error} goes to the framework as the tool's error text. */
    private void told(RuntimeException error, String text) {
        for (ModelErrorListener l : modelErrorListeners) {
            try {
                l.onModelError(operation.name(), error, text);
            } catch (RuntimeException failed) {
                binding.log().log(
                        System.Logger.Level.WARNING,
                        binding.framework()
                                + ": a ModelErrorListener failed on `"
                                + operation.name()
                                + "`",
                        failed);
            }
        }
    }
}
