package dev.idemkit.springai;

import dev.idemkit.IdempotencyException;
import dev.idemkit.InvalidToolInputException;
import dev.idemkit.adapter.ToolCall;
import java.lang.reflect.Type;
import org.springframework.ai.chat.model.ToolContext;
import org.springframework.ai.tool.ToolCallback;
import org.springframework.ai.tool.definition.ToolDefinition;
import org.springframework.ai.tool.execution.ToolCallResultConverter;
import org.springframework.ai.tool.execution.ToolExecutionException;
import org.springframework.ai.tool.metadata.ToolMetadata;

/**
 * A Spring AI {@code @Tool} method carrying {@code @Idempotent}, as a {@link ToolCallback}: Spring
 * AI's definition (without {@code IdempotencyContext} parameters), metadata and result converter
 * around an {@link dev.idemkit.IdempotentOperation}, which binds the model's arguments and runs the
 * method at most once per key. Tenant and run come from the call's {@link ToolContext}. Made by
 * {@link IdempotentToolCallbacks}.
 *
 * <p>Every failure is Spring AI's {@link ToolExecutionException}, as its own method callbacks throw
 * them: an idemkit refusal with an {@link IdempotentToolRefusedException} cause (short text, no
 * key), arguments that do not bind with an idemkit {@code InvalidToolInputException} cause whose
 * message is its {@code modelMessage()} (nothing ran; the original is its cause), a tool's own
 * exception as it is. Each idemkit error handed over so is told to the builder's {@code
 * ModelErrorListener}s.
 */
public final class IdempotentToolCallback implements ToolCallback, ToolCall.Errors {
    private final ToolDefinition definition;
    private final ToolMetadata metadata;
    private final ToolCall<ToolContext> call;
    private final ToolCallResultConverter converter;
    private final Type returnType;

    IdempotentToolCallback(
            ToolDefinition definition,
            ToolMetadata metadata,
            ToolCall<ToolContext> call,
            ToolCallResultConverter converter,
            Type returnType) {
        this.definition = definition;
        this.metadata = metadata;
        this.call = call;
        this.converter = converter;
        this.returnType = returnType;
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
        return converter.convert(call.call(toolInput, toolContext, this), returnType);
    }

    /** idemkit's refusal, its short text as the message, as Spring AI's tool error. */
    @Override
    public RuntimeException refused(IdempotencyException refusal) {
        return new ToolExecutionException(definition, new IdempotentToolRefusedException(refusal));
    }

    /** Arguments that did not bind: the model's text as the message, the original its cause. */
    @Override
    public RuntimeException invalid(InvalidToolInputException invalid) {
        return new ToolExecutionException(
                definition,
                new InvalidToolInputException(
                        invalid.modelMessage(), invalid.tool(), invalid.argument(), invalid));
    }

    @Override
    public RuntimeException failed(Throwable cause) {
        return new ToolExecutionException(definition, cause);
    }

    @Override
    public String toString() {
        return "IdempotentToolCallback{" + definition.name() + "}";
    }
}
