package dev.idemkit.langchain4j;

import dev.idemkit.IdempotencyException;
import dev.langchain4j.exception.ToolExecutionException;

/**
 * idemkit's refusal of a tool call, as LangChain4j's {@link ToolExecutionException}: its message is
 * the short text the model reads ({@link IdempotencyException#modelMessage()}: what happened and
 * whether the tool ran, without the key), and {@link #refusal()} is idemkit's exception with the
 * full text, for a {@code ToolExecutionErrorHandler} or a log.
 *
 * <p>The refusal is not the {@linkplain #getCause() cause}: LangChain4j hands an error handler the
 * cause of the exception a tool executor throws, and its default handler sends that message to the
 * model.
 */
public class IdempotentToolException extends ToolExecutionException {
    private static final long serialVersionUID = 1L;

    /** idemkit's exception; transient like any exception state that is not serializable. */
    private final transient IdempotencyException refusal;

    /**
     * The refusal as LangChain4j's tool error.
     *
     * @param refusal idemkit's exception
     */
    public IdempotentToolException(IdempotencyException refusal) {
        super(refusal.modelMessage(), null, null);
        this.refusal = refusal;
    }

    /**
     * idemkit's exception: its kind, tool, key and full message.
     *
     * @return the refusal
     */
    public IdempotencyException refusal() {
        return refusal;
    }
}
