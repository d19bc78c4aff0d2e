package dev.idemkit.langchain4j;

import dev.idemkit.IdempotencyException;
import dev.idemkit.InvalidToolInputException;
import dev.langchain4j.exception.ToolExecutionException;

/**
 * idemkit's refusal of a tool call, or arguments that did not bind, as LangChain4j's {@link
 * ToolExecutionException}: its message is the short text the model reads ({@link
 * IdempotencyException#modelMessage()} or {@link InvalidToolInputException#modelMessage()}: what
 * happened and whether the tool ran, without the key), and {@link #refusal()} or {@link
 * #invalidInput()} is idemkit's exception with the full text, for a {@code
 * ToolExecutionErrorHandler} or a log.
 *
 * <p>idemkit's exception is not the {@linkplain #getCause() cause}: LangChain4j hands an error
 * handler the cause of the exception a tool executor throws, and its default handler sends that
 * message to the model.
 */
public class IdempotentToolException extends ToolExecutionException {
    private static final long serialVersionUID = 1L;

    /** idemkit's exception; transient like any exception state that is not serializable. */
    private final transient IdempotencyException refusal;

    /** Arguments that did not bind; transient likewise. */
    private final transient InvalidToolInputException invalidInput;

    /**
     * The refusal as LangChain4j's tool error.
     *
     * @param refusal idemkit's exception
     */
    public IdempotentToolException(IdempotencyException refusal) {
        super(refusal.modelMessage(), null, null);
        this.refusal = refusal;
        this.invalidInput = null;
    }

    /**
     * Arguments that did not bind, as LangChain4j's tool error (the model may correct them).
     *
     * @param invalidInput idemkit's exception
     */
    public IdempotentToolException(InvalidToolInputException invalidInput) {
        super(invalidInput.modelMessage(), null, null);
        this.refusal = null;
        this.invalidInput = invalidInput;
    }

    /**
     * idemkit's exception: its kind, tool, key and full message.
     *
     * @return the refusal, or {@code null} for arguments that did not bind
     */
    public IdempotencyException refusal() {
        return refusal;
    }

    /**
     * The arguments that did not bind: the tool, the argument and the full message.
     *
     * @return the exception, or {@code null} for a refusal
     */
    public InvalidToolInputException invalidInput() {
        return invalidInput;
    }
}
