package dev.idemkit.spring.aiservice3;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.langchain4j.IdempotentTools;
import dev.idemkit.spring.boot3.ScriptedLangChain4jModel;
import dev.langchain4j.service.AiServices;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * LangChain4j's Spring Boot {@code @AiService} with an {@code @Idempotent} {@code @Tool} bean: four
 * identical calls in one response, on two turns, book once with no idemkit wiring of the app's own;
 * with the starter's LangChain4j defaults turned off the app does not start, naming the tool and
 * the fix.
 */
class AiServiceTest {
    @AfterEach
    void no_defaults_left() {
        IdempotentTools.clearDefaults();
    }

    private static ConfigurableApplicationContext start(String... properties) {
        return new SpringApplicationBuilder(AiServiceApp.class)
                .properties(properties)
                .properties("spring.main.banner-mode=off")
                .run();
    }

    @Test
    void an_ai_service_tool_bean_runs_its_body_once_for_eight_identical_calls() {
        try (ConfigurableApplicationContext app = start()) {
            AiServiceApp.Agent agent = app.getBean(AiServiceApp.Agent.class);
            AiServiceApp.Desk desk = app.getBean(AiServiceApp.Desk.class);
            String once = "BK-BA404-1";
            for (int turn = 0; turn < 2; turn++) {
                assertEquals(String.join(" | ", once, once, once, once), agent.chat("book BA404"));
            }
            assertEquals(1, desk.runs(), "four identical calls on two turns, one body run");
        }
    }

    private static AiServiceApp.Agent handBuilt(AiServiceApp.Desk desk) {
        return AiServices.builder(AiServiceApp.Agent.class)
                .chatModel(new ScriptedLangChain4jModel(1, "book", "{\"flight\":\"BA405\"}"))
                .tools(desk)
                .build();
    }

    @Test
    void a_hand_built_service_is_protected_while_the_context_is_open_and_refused_after() {
        AiServiceApp.Desk desk = new AiServiceApp.Desk();
        try (ConfigurableApplicationContext app = start()) {
            AiServiceApp.Agent agent = handBuilt(desk);
            assertEquals("BK-BA405-1", agent.chat("x"));
            assertEquals("BK-BA405-1", agent.chat("x"));
            assertEquals(1, desk.runs(), "the context's store keeps the record");
        }
        IllegalStateException refused =
                assertThrows(IllegalStateException.class, () -> handBuilt(desk));
        assertTrue(
                refused.getMessage().contains("IdempotentTools.defaults(store)"),
                refused.getMessage());
        assertEquals(1, desk.runs());
    }

    @Test
    void without_the_starters_defaults_the_ai_service_is_refused_naming_the_tool_and_the_fix() {
        try (ConfigurableApplicationContext app = start("idemkit.langchain4j=false")) {
            // The starter builds an @AiService when it is first asked for (its factory bean is
            // lazy): that is where it is refused, before any tool call.
            Exception refused =
                    assertThrows(Exception.class, () -> app.getBean(AiServiceApp.Agent.class));
            Throwable cause = refused;
            while (cause.getCause() != null && !(cause instanceof IllegalStateException)) {
                cause = cause.getCause();
            }
            String message = cause.getMessage();
            assertTrue(message.contains("tool `book`"), message);
            assertTrue(message.contains("IdempotentTools.defaults(store)"), message);
            assertEquals(0, app.getBean(AiServiceApp.Desk.class).runs(), "nothing ran");
        }
    }
}
