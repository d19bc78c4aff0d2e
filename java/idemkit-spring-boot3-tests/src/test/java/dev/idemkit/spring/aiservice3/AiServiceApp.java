package dev.idemkit.spring.aiservice3;

import dev.idemkit.Idempotent;
import dev.idemkit.spring.boot3.ScriptedLangChain4jModel;
import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.service.spring.AiService;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.stereotype.Component;

/**
 * A Spring Boot 3.5 app as langchain4j-spring-boot-starter's docs write one: a chat model bean, a
 * {@code @Tool} bean, and an {@code @AiService} interface the starter builds with every tool bean
 * (its automatic wiring). The model asks for {@code book} four times per user message. Nothing of
 * idemkit's is wired by hand: idemkit-spring-boot-starter and idemkit-langchain4j are on the class
 * path.
 */
@SpringBootApplication(proxyBeanMethods = false)
public class AiServiceApp {
    /** The travel agent: the starter implements it. */
    @AiService
    public interface Agent {
        /**
         * One user message.
         *
         * @param message what the user says
         * @return the model's answer: the tool results joined
         */
        String chat(String message);
    }

    /** The tool bean: each body run counts. */
    @Component
    public static class Desk {
        private final AtomicInteger runs = new AtomicInteger();

        /**
         * Books a seat.
         *
         * @param flight the flight
         * @return the booking reference
         */
        @Tool(name = "book", value = "Books a seat")
        @Idempotent
        public String book(String flight) {
            return "BK-" + flight + "-" + runs.incrementAndGet();
        }

        /**
         * The body runs so far.
         *
         * @return how many
         */
        public int runs() {
            return runs.get();
        }
    }

    /**
     * The app's chat model: four identical calls of {@code book} per user message.
     *
     * @return the model
     */
    @Bean
    ChatModel chatModel() {
        return new ScriptedLangChain4jModel(4, "book", "{\"flight\":\"BA404\"}");
    }
}
