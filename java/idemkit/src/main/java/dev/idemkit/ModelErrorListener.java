package dev.idemkit;

/**
 * Told when an agent framework adapter (idemkit-langchain4j, idemkit-spring-ai and its Boot
 * starter) hands the framework idemkit's error as the tool's error text for the model, instead of
 * letting it reach the application: a refused repeat, a held or unknown outcome, arguments that do
 * not bind. The application hears of it here (to log, count or alert), since the model's turn goes
 * on.
 *
 * <p>Called on the thread of the tool call, after the error is decided and before the framework
 * gets the text. An exception it throws is logged and otherwise ignored: it never changes what the
 * model reads.
 */
@FunctionalInterface
public interface ModelErrorListener {
    /**
     * An error became the tool's error text for the model.
     *
     * @param tool the tool's name
     * @param error idemkit's exception ({@link IdempotencyException} or {@link
     *     InvalidToolInputException}), with the key and full message for a log
     * @param text what the model reads (short, without the key)
     */
    void onModelError(String tool, RuntimeException error, String text);
}
