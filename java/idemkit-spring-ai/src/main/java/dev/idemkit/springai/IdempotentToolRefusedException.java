package dev.idemkit.springai;

import dev.idemkit.IdempotencyException;

/**
 * idemkit's refusal of a tool call, as the cause of Spring AI's {@code ToolExecutionException}: its
 * message is the short text the model reads ({@link IdempotencyException#modelMessage()}: what
 * happened and whether the tool ran, never the key), and its cause is idemkit's exception with the
 * full text, for logs and a {@code ToolExecutionExceptionProcessor}.
 */
public class IdempotentToolRefusedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * The refusal, with its short text as the message.
     *
     * @param refusal idemkit's exception
     */
    public IdempotentToolRefusedException(IdempotencyException refusal) {
        super(refusal.modelMessage(), refusal);
    }

    /**
     * idemkit's exception: its kind, tool, key and full message.
     *
     * @return the refusal
     */
    public IdempotencyException refusal() {
        return (IdempotencyException) getCause();
    }
}
