package dev.idemkit.springai;

import dev.idemkit.IdempotencyException;
import dev.idemkit.IdempotentOperation;
import dev.idemkit.InvalidToolInputException;
import dev.idemkit.ModelErrorListener;
import java.lang.reflect.Type;
import java.lang.reflect.UndeclaredThrowableException;
import java.util.List;
import java.util.function.Function;
import org.springframework.ai.chat.model.ToolContext;
import org.springframework.ai.tool.ToolCallback;
import org.springframework.ai.tool.definition.ToolDefinition;
import org.springframework.ai.tool.execution.ToolCallResultConverter;
import org.springframework.ai.tool.execution.ToolExecutionException;
import org.springframework.ai.tool.metadata.ToolMetadata;

/**
 * A Spring AI {@code @Tool} method carrying {@code @Idempotent}, as a {@link ToolCallback}: Spring
 * AI's definition (without {@code IdempotencyContext} parameters), metadata and result converter
 * around an {@link IdempotentOperation}, which binds the model's arguments and runs the method at
 * most once per key. Tenant and run come from the call's {@link ToolContext}. Made by {@link
 * IdempotentToolCallbacks}.
 *
 * <p>Every failure is Spring AI's {@link ToolExecutionException}, as its own method callbacks throw
 * them: an idemkit refusal with an {@link IdempotentToolRefusedException} cause (short text, no
 * key), arguments that do not bind with an idemkit {@code InvalidToolInputException} cause whose
 * message is its {@code modelMessage()} (nothing ran; the original is its cause), a tool's own
 * exception as it is. Each idemkit error handed over so is told to the builder's {@code
 * ModelErrorListener}s.
 */
public final class IdempotentToolCallback implements ToolCallback {
    private static final System.Logger LOG =
            System.getLogger(IdempotentToolCallback.class.getName());

    private final ToolDefinition definition;
    private final ToolMetadata metadata;
    private final IdempotentOperation<Object> operation;
    private final ToolCallResultConverter converter;
    private final Type returnType;
    private final Function<ToolContext, String> tenant;
    private final Function<ToolContext, String> run;
    private final List<ModelErrorListener> modelErrorListeners;

    IdempotentToolCallback(
            ToolDefinition definition,
            ToolMetadata metadata,
            IdempotentOperation<Object> operation,
            ToolCallResultConverter converter,
            Type returnType,
            Function<ToolContext, String> tenant,
            Function<ToolContext, String> run,
            List<ModelErrorListener> modelErrorListeners) {
        this.definition = definition;
        this.metadata = metadata;
        this.operation = operation;
        this.converter = converter;
        this.returnType = returnType;
        this.tenant = tenant;
        this.run = run;
        this.modelErrorListeners = modelErrorListeners;
    }

    @Override
    public ToolDefinition getToolDefinition() {
        return definition;
    }

    @Override
    public ToolMetadata getToolMetadata() {
        return metadata;
    }

    @Override
    public String call(String toolInput) {
        return call(toolInput, null);
    }

    @Override
    public String call(String toolInput, ToolContext toolContext) {
        String input = toolInput == null || toolInput.isBlank() ? "{}" : toolInput;
        Object result;
        try {
            result = operation.call(tenant.apply(toolContext), run.apply(toolContext), input);
        } catch (IdempotencyException refused) {
            IdempotentToolRefusedException text = new IdempotentToolRefusedException(refused);
            told(refused, text.getMessage());
            throw new ToolExecutionException(definition, text);
        } catch (InvalidToolInputException invalid) {
            InvalidToolInputException text =
                    new InvalidToolInputException(
                            invalid.modelMessage(), invalid.tool(), invalid.argument(), invalid);
            told(invalid, text.getMessage());
            throw new ToolExecutionException(definition, text);
        } catch (UndeclaredThrowableException checked) {
            throw new ToolExecutionException(definition, checked.getCause());
        } catch (RuntimeException failed) {
            throw new ToolExecutionException(definition, failed);
        }
        return converter.convert(result, returnType);
    }

    /** Tells the listeners that {@code error} goes to Spring AI as the tool's error text. */
    private void told(RuntimeException error, String text) {
        for (ModelErrorListener l : modelErrorListeners) {
            try {
                l.onModelError(definition.name(), error, text);
            } catch (RuntimeException failed) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "idemkit-spring-ai: a ModelErrorListener failed on `"
                                + definition.name()
                                + "`",
                        failed);
            }
        }
    }

    @Override
    public String toString() {
        return "IdempotentToolCallback{" + definition.name() + "}";
    }
}
