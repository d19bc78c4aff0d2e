package dev.idemkit.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import dev.idemkit.Idempotent;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.context.WebApplicationContext;

/**
 * A plain Spring MVC app with the starter: a {@code @RestController} calls an {@code @Idempotent}
 * service; the same request twice charges once, and the second response carries the first result.
 */
@SpringBootTest(
        classes = ControllerTest.App.class,
        webEnvironment = SpringBootTest.WebEnvironment.MOCK)
class ControllerTest {
    public static class Payments {
        private final AtomicInteger charges = new AtomicInteger();

        @Idempotent
        public String charge(String order, long cents) {
            return "ch-" + order + "-" + cents + "-" + charges.incrementAndGet();
        }

        /** The body runs so far (a method: the bean is a proxy). */
        public int charges() {
            return charges.get();
        }
    }

    @RestController
    public static class Checkout {
        private final Payments payments;

        Checkout(Payments payments) {
            this.payments = payments;
        }

        @PostMapping("/checkout")
        public String checkout(@RequestParam String order, @RequestParam long cents) {
            return payments.charge(order, cents);
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class App {
        @Bean
        Payments payments() {
            return new Payments();
        }

        @Bean
        Checkout checkout(Payments payments) {
            return new Checkout(payments);
        }
    }

    @Autowired WebApplicationContext context;
    @Autowired Payments payments;

    @Test
    void the_same_request_twice_charges_once_and_answers_the_same_result() throws Exception {
        MockMvc mvc = MockMvcBuilders.webAppContextSetup(context).build();
        int before = payments.charges();
        for (int i = 0; i < 2; i++) {
            mvc.perform(post("/checkout").param("order", "o-42").param("cents", "500"))
                    .andExpect(status().isOk())
                    .andExpect(content().string("ch-o-42-500-" + (before + 1)));
        }
        assertEquals(before + 1, payments.charges(), "two identical requests, one charge");
    }
}
