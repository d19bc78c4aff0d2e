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

    /** The tool or action name, or {@code null}. */
    private final String tool;

    /** The argument (parameter) at fault, or {@code null} for the input as a whole. */
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
}
