package dev.idemkit.langchain4j;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A chat model without a network, as a model that repeats itself behaves: a user message {@code
 * "TOOL ARGUMENTS"} (e.g. {@code book_flight {"flight":"BA117"}}) is answered with {@code repeats}
 * identical calls of that tool in one response; the tool results are answered with their texts
 * joined by {@code " | "}, the model's final answer. Thread-safe and stateless but for counters.
 */
public final class ScriptedModel implements ChatModel {
    private final int repeats;
    private final String tool;
    private final String arguments;
    private final AtomicInteger ids = new AtomicInteger();

    /** The tool results the model read, in order, across all conversations. */
    public final List<ToolExecutionResultMessage> results =
            Collections.synchronizedList(new ArrayList<>());

    /**
     * @param repeats how many identical calls each request for a tool makes
     */
    public ScriptedModel(int repeats) {
        this(repeats, null, null);
    }

    /**
     * A model that answers any user message with {@code repeats} calls of {@code tool}.
     *
     * @param repeats how many identical calls each user message gets
     * @param tool the tool it calls
     * @param arguments the arguments it sends, a JSON object's text
     */
    public ScriptedModel(int repeats, String tool, String arguments) {
        this.repeats = repeats;
        this.tool = tool;
        this.arguments = arguments;
    }

    @Override
    public ChatResponse doChat(ChatRequest request) {
        List<ChatMessage> messages = request.messages();
        ChatMessage last = messages.get(messages.size() - 1);
        if (last instanceof UserMessage) {
            String text = ((UserMessage) last).singleText();
            int space = text.indexOf(' ');
            String tool =
                    this.tool != null ? this.tool : space < 0 ? text : text.substring(0, space);
            String arguments =
                    this.arguments != null
                            ? this.arguments
                            : space < 0 ? "{}" : text.substring(space + 1);
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
        // The newest run of tool results. Concurrent chats of one conversation share its memory,
        // so another chat's message may already follow this one's results.
        int end = messages.size();
        while (end > 0 && !(messages.get(end - 1) instanceof ToolExecutionResultMessage)) {
            end--;
        }
        int first = end;
        while (first > 0 && messages.get(first - 1) instanceof ToolExecutionResultMessage) {
            first--;
        }
        List<String> texts = new ArrayList<>();
        for (ChatMessage m : messages.subList(first, end)) {
            results.add((ToolExecutionResultMessage) m);
            texts.add(((ToolExecutionResultMessage) m).text());
        }
        return ChatResponse.builder().aiMessage(AiMessage.from(String.join(" | ", texts))).build();
    }
}
