package dev.idemkit;

/**
 * The input of a call does not bind to the tool's parameters: it is not a JSON object, names a
 * member that is no parameter, lacks a primitive argument, or holds a value that does not convert
 * to its parameter's type without loss ({@code 12.5} for a {@code long}). The body did not run and
 * nothing was recorded (the claim is released, so a corrected call runs).
 *
 * <p>It is an {@link IllegalArgumentException}, as it always was, but of its own type: catch it
 * before {@code IllegalArgumentException} to tell a caller's bad input from a tool body's own
 * validation, which comes out unchanged.
 */
public class InvalidToolInputException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    /** The tool whose input did not bind. */
    private final String tool;

    /** The argument that did not bind, or {@code null} when the input as a whole did not. */
    private final String argument;

    /**
     * idemkit raises it; public so that code which wraps or translates idemkit's errors can make
     * one.
     *
     * @param message what is wrong, naming the tool and the argument, and the fix
     * @param tool the tool or action name, or {@code null}
     * @param argument the argument (parameter) at fault, or {@code null} for the input as a whole
     * @param cause the converter's reason, or {@code null}
     */
    public InvalidToolInputException(
            String message, String tool, String argument, Throwable cause) {
        super(message, cause);
        this.tool = tool;
        this.argument = argument;
    }

    /**
     * The tool or action whose input was refused.
     *
     * @return its name, or {@code null}
     */
    public String tool() {
        return tool;
    }

    /**
     * The argument at fault.
     *
     * @return the parameter's name, or {@code null} when the input as a whole is refused
     */
    public String argument() {
        return argument;
    }

    /**
     * The text for a model whose call did not bind (agent framework adapters send it as the tool's
     * error result, so the model can correct the call): what is wrong, naming the tool and the
     * argument, that nothing ran, and the fix.
     *
     * @return the message, and that the call may be sent again with corrected arguments
     */
    public String modelMessage() {
        return getMessage()
                + "; it was not run (call it again with the arguments its schema lists, of the"
                + " types it gives)";
    }
}
