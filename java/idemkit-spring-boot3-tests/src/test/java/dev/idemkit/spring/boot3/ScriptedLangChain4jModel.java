package dev.idemkit.spring.boot3;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A LangChain4j chat model without a network: a user message is answered with {@code repeats}
 * identical calls of one tool in one response, the tool results with their texts joined by {@code "
 * | "}. Thread-safe.
 */
final class ScriptedLangChain4jModel implements ChatModel {
    private final int repeats;
    private final String tool;
    private final String arguments;
    private final AtomicInteger ids = new AtomicInteger();

    ScriptedLangChain4jModel(int repeats, String tool, String arguments) {
        this.repeats = repeats;
        this.tool = tool;
        this.arguments = arguments;
    }

    @Override
    public ChatResponse doChat(ChatRequest request) {
        List<ChatMessage> messages = request.messages();
        if (messages.get(messages.size() - 1) instanceof UserMessage) {
            List<ToolExecutionRequest> calls = new ArrayList<>();
            for (int i = 0; i < repeats; i++) {
                calls.add(
                        ToolExecutionRequest.builder()
                                .id("call-" + ids.incrementAndGet())
                                .name(tool)
                                .arguments(arguments)
                                .build());
            }
            return ChatResponse.builder().aiMessage(AiMessage.from(calls)).build();
        }
        int first = messages.size();
        while (first > 0 && messages.get(first - 1) instanceof ToolExecutionResultMessage) {
            first--;
        }
        List<String> texts = new ArrayList<>();
        for (ChatMessage m : messages.subList(first, messages.size())) {
            texts.add(((ToolExecutionResultMessage) m).text());
        }
        return ChatResponse.builder().aiMessage(AiMessage.from(String.join(" | ", texts))).build();
    }
}
