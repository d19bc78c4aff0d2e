package dev.idemkit.spring.boot3;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.Message;
import org.springframework.ai.chat.messages.ToolResponseMessage;
import org.springframework.ai.chat.messages.UserMessage;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.model.Generation;
import org.springframework.ai.chat.prompt.ChatOptions;
import org.springframework.ai.chat.prompt.Prompt;
import org.springframework.ai.model.tool.ToolCallingChatOptions;
import org.springframework.ai.model.tool.ToolCallingManager;
import org.springframework.ai.model.tool.ToolExecutionResult;

/**
 * A Spring AI 1.1 chat model without a network that runs tools as Spring AI's models do (through a
 * {@link ToolCallingManager}, with the prompt's tool callbacks and context): a user message is
 * answered with {@code repeats} identical calls of one tool, the tool results with their texts
 * joined by {@code " | "}. Thread-safe.
 */
final class ScriptedChatModel implements ChatModel {
    private final int repeats;
    private final String tool;
    private final String arguments;
    private final ToolCallingManager tools;
    private final AtomicInteger ids = new AtomicInteger();

    ScriptedChatModel(int repeats, String tool, String arguments) {
        this(repeats, tool, arguments, ToolCallingManager.builder().build());
    }

    ScriptedChatModel(int repeats, String tool, String arguments, ToolCallingManager tools) {
        this.repeats = repeats;
        this.tool = tool;
        this.arguments = arguments;
        this.tools = tools;
    }

    @Override
    public ChatOptions getDefaultOptions() {
        return ToolCallingChatOptions.builder().build();
    }

    @Override
    public ChatResponse call(Prompt prompt) {
        Prompt current = prompt;
        while (true) {
            List<Message> messages = current.getInstructions();
            Message last = messages.get(messages.size() - 1);
            if (last instanceof ToolResponseMessage) {
                List<String> texts = new ArrayList<>();
                for (ToolResponseMessage.ToolResponse r :
                        ((ToolResponseMessage) last).getResponses()) {
                    texts.add(r.responseData());
                }
                return answer(new AssistantMessage(String.join(" | ", texts)));
            }
            if (!(last instanceof UserMessage)) {
                throw new IllegalStateException("the scripted model cannot answer " + last);
            }
            List<AssistantMessage.ToolCall> calls = new ArrayList<>();
            for (int i = 0; i < repeats; i++) {
                calls.add(
                        new AssistantMessage.ToolCall(
                                "call-" + ids.incrementAndGet(), "function", tool, arguments));
            }
            ChatResponse asked = answer(AssistantMessage.builder().toolCalls(calls).build());
            ToolExecutionResult result = tools.executeToolCalls(current, asked);
            current = new Prompt(result.conversationHistory(), current.getOptions());
        }
    }

    private static ChatResponse answer(AssistantMessage message) {
        return new ChatResponse(List.of(new Generation(message)));
    }
}
