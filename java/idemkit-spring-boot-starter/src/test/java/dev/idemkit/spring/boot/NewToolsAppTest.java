package dev.idemkit.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.example.newtools.NewToolsApp;
import dev.idemkit.springai.IdempotentToolCallingManager;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.model.tool.ToolCallingManager;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/**
 * The starter wraps the app's ToolCallingManager: {@code .tools(new Flights())} (no bean, no proxy)
 * asked for book_flight four times in one response, on two turns, books once.
 */
@SpringBootTest(classes = NewToolsApp.class)
class NewToolsAppTest {
    @Autowired ChatModel model;
    @Autowired ToolCallingManager manager;

    @Test
    void a_new_made_tool_object_books_once_through_the_wrapped_manager() {
        assertTrue(manager instanceof IdempotentToolCallingManager, manager.toString());
        String once = "\"BK-BA117-1\" | \"BK-BA117-1\" | \"BK-BA117-1\" | \"BK-BA117-1\"";
        assertEquals(once, NewToolsApp.ask(model, "conversation-7"));
        assertEquals(once, NewToolsApp.ask(model, "conversation-7"));
        assertEquals(1, NewToolsApp.BOOKED.get(), "eight identical calls, one body run");
    }
}
