package dev.idemkit.spring.boot3;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.IdempotencyStore;
import dev.idemkit.Idempotent;
import dev.idemkit.langchain4j.IdempotentTools;
import dev.idemkit.spring.boot.IdemkitAutoConfiguration;
import dev.idemkit.spring.boot.IdemkitMethodAutoConfiguration;
import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.memory.chat.MessageWindowChatMemory;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.MemoryId;
import dev.langchain4j.service.UserMessage;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.aop.support.AopUtils;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * What protects a LangChain4j {@code @Tool} bean in a Spring Boot 3.5 app, as
 * langchain4j-spring-boot-starter's {@code @AiService} wires it (the bean, from the context, given
 * to {@code AiServices...tools(bean)}): the starter proxies the bean, and idemkit-langchain4j's
 * {@code AiServices} hook sees the build. Four identical calls in one response, on two turns.
 */
class LangChain4jBeanToolsTest {
    interface Agent {
        String chat(String message);
    }

    /** One conversation per memory id: LangChain4j's run of a call. */
    interface Conversations {
        String chat(@MemoryId String conversation, @UserMessage String message);
    }

    public static class Desk {
        private final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "book", value = "Books a seat")
        @Idempotent
        public String book(String flight) {
            return "BK-" + flight + "-" + runs.incrementAndGet();
        }

        public int runs() {
            return runs.get();
        }
    }

    private final ApplicationContextRunner app =
            new ApplicationContextRunner()
                    .withConfiguration(
                            AutoConfigurations.of(
                                    IdemkitAutoConfiguration.class,
                                    IdemkitMethodAutoConfiguration.class))
                    .withBean(Desk.class);

    @AfterEach
    void forget_the_defaults() {
        IdempotentTools.clearDefaults();
    }

    private static Agent agent(Object tools) {
        return AiServices.builder(Agent.class)
                .chatModel(new ScriptedLangChain4jModel(4, "book", "{\"flight\":\"BA401\"}"))
                .tools(tools)
                .build();
    }

    @Test
    void a_proxied_tool_bean_given_to_ai_services_runs_the_body_once() {
        app.run(
                context -> {
                    Desk desk = context.getBean(Desk.class);
                    assertTrue(AopUtils.isAopProxy(desk), "the starter proxies the @Tool bean");
                    IdempotentTools.defaults(context.getBean(IdempotencyStore.class));
                    Agent agent = agent(desk);
                    String once = "BK-BA401-1";
                    for (int turn = 0; turn < 2; turn++) {
                        assertEquals(String.join(" | ", once, once, once, once), agent.chat("x"));
                    }
                    assertEquals(1, desk.runs(), "eight identical calls, one body run");
                });
    }

    @Test
    void without_defaults_the_build_is_refused_and_nothing_runs() {
        app.run(
                context -> {
                    Desk desk = context.getBean(Desk.class);
                    IllegalStateException refused =
                            assertThrows(IllegalStateException.class, () -> agent(desk));
                    assertTrue(refused.getMessage().contains("tool `book`"), refused.getMessage());
                    assertTrue(
                            refused.getMessage().contains("IdempotentTools.defaults(store)"),
                            refused.getMessage());
                    assertEquals(0, desk.runs());
                });
    }

    @Test
    void a_proxied_tool_bean_keeps_the_run_of_each_conversation_when_run_concurrently() {
        app.run(
                context -> {
                    Desk desk = context.getBean(Desk.class);
                    IdempotentTools.defaults(context.getBean(IdempotencyStore.class));
                    Conversations agent =
                            AiServices.builder(Conversations.class)
                                    .chatModel(
                                            new ScriptedLangChain4jModel(
                                                    4, "book", "{\"flight\":\"BA402\"}"))
                                    .chatMemoryProvider(
                                            id -> MessageWindowChatMemory.withMaxMessages(50))
                                    .tools(desk)
                                    .executeToolsConcurrently()
                                    .build();
                    String a = "BK-BA402-1";
                    assertEquals(String.join(" | ", a, a, a, a), agent.chat("conv-a", "x"));
                    assertEquals(String.join(" | ", a, a, a, a), agent.chat("conv-a", "x"));
                    String b = "BK-BA402-2";
                    assertEquals(String.join(" | ", b, b, b, b), agent.chat("conv-b", "x"));
                    assertEquals(
                            2,
                            desk.runs(),
                            "once per conversation (the run is the memory id), as for a plain"
                                    + " object");
                });
    }
}
