package dev.idemkit.spring.boot;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.Idempotent;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** A final {@code @Idempotent} method: the proxy cannot reach it, and startup says so by name. */
class UnreachableMethodTest {
    public static class Payments {
        @Idempotent
        public final String charge(String order) {
            return "charged " + order;
        }
    }

    @Test
    void a_final_method_is_named_in_a_startup_warning_with_the_fix() {
        try (CapturedLog log = new CapturedLog("dev.idemkit")) {
            new ApplicationContextRunner()
                    .withConfiguration(
                            AutoConfigurations.of(
                                    IdemkitAutoConfiguration.class,
                                    IdemkitMethodAutoConfiguration.class))
                    .withBean(Payments.class)
                    .run(context -> assertTrue(context.isRunning()));
            assertTrue(
                    log.lines().stream()
                            .anyMatch(
                                    l ->
                                            l.startsWith("WARN")
                                                    && l.contains(
                                                            Payments.class.getName() + ".charge")
                                                    && l.contains("NOT applied")
                                                    && l.contains("remove `final`")),
                    log.lines().toString());
        }
    }
}
