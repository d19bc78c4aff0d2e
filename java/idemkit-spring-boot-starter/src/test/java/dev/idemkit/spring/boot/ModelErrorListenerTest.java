package dev.idemkit.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.Effect;
import dev.idemkit.Idempotent;
import dev.idemkit.IndeterminateOutcomeException;
import dev.idemkit.ModelErrorListener;
import dev.idemkit.springai.IdempotentToolCallbacks;
import dev.idemkit.springai.ScriptedChatModel;
import java.io.UncheckedIOException;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.tool.annotation.Tool;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * A Boot app whose EFFECTFUL tool times out after its request left: the call that ran tells the
 * model its own outcome is unknown, the repeat that it met a held one, and the app's {@link
 * ModelErrorListener} bean hears of both.
 */
class ModelErrorListenerTest {
    /** A card charge whose provider times out after the request left. */
    public static class Payments {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "charge_card", description = "Charges a card")
        @Idempotent(effect = Effect.EFFECTFUL)
        public String chargeCard(long cents) {
            runs.incrementAndGet();
            throw new UncheckedIOException(
                    new SocketTimeoutException("no answer from the payment provider"));
        }
    }

    /** The app's listener bean: what it was told, in order. */
    public static class Told implements ModelErrorListener {
        final List<String> texts = Collections.synchronizedList(new ArrayList<>());
        final List<Boolean> ran = Collections.synchronizedList(new ArrayList<>());

        @Override
        public void onModelError(String tool, RuntimeException error, String text) {
            texts.add(tool + ": " + text);
            ran.add(((IndeterminateOutcomeException) error).ranBody());
        }
    }

    @Test
    void the_call_that_ran_and_its_repeat_are_told_apart_and_the_apps_listener_hears_both() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(IdemkitAutoConfiguration.class))
                .withBean(Payments.class)
                .withBean(Told.class)
                .run(
                        context -> {
                            assertNull(context.getStartupFailure());
                            ScriptedChatModel model =
                                    new ScriptedChatModel(2, "charge_card", "{\"cents\":1250}");
                            String answer =
                                    ChatClient.create(model)
                                            .prompt()
                                            .user("Charge 12.50")
                                            .toolCallbacks(
                                                    context.getBean(IdempotentToolCallbacks.class)
                                                            .getToolCallbacks())
                                            .toolContext(
                                                    IdempotentToolCallbacks.toolContext(null, "c"))
                                            .call()
                                            .content();
                            String[] results = answer.split(" \\| ");
                            assertEquals(2, results.length, answer);
                            assertTrue(
                                    results[0].startsWith(
                                            "charge_card ran and failed, so its outcome is"
                                                    + " unknown"),
                                    answer);
                            assertTrue(
                                    results[1].startsWith("an identical earlier charge_card call"),
                                    answer);
                            Told told = context.getBean(Told.class);
                            assertEquals(
                                    List.of(
                                            "charge_card: " + results[0],
                                            "charge_card: " + results[1]),
                                    told.texts);
                            assertEquals(List.of(true, false), told.ran);
                            assertEquals(1, context.getBean(Payments.class).runs.get());
                            assertFalse(answer.matches("(?s).*[0-9a-f]{64}.*"), answer);
                        });
    }
}
