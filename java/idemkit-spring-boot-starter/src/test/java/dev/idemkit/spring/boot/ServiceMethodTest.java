package dev.idemkit.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.idemkit.Idempotent;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** A plain service's {@code @Idempotent} method, called twice through the bean: charged once. */
class ServiceMethodTest {
    public static class PaymentService {
        private final AtomicInteger charges = new AtomicInteger();

        @Idempotent
        public String charge(String order, long cents) {
            return "ch-" + order + "-" + cents + "-" + charges.incrementAndGet();
        }

        public int charges() {
            return charges.get();
        }
    }

    @Test
    void the_same_charge_twice_through_the_bean_charges_once() {
        new ApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(
                                IdemkitAutoConfiguration.class,
                                IdemkitMethodAutoConfiguration.class))
                .withBean(PaymentService.class)
                .run(
                        context -> {
                            PaymentService payments = context.getBean(PaymentService.class);
                            assertEquals("ch-o-1-500-1", payments.charge("o-1", 500));
                            assertEquals("ch-o-1-500-1", payments.charge("o-1", 500));
                            assertEquals("ch-o-2-500-2", payments.charge("o-2", 500));
                            assertEquals(2, payments.charges());
                        });
    }
}
