package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * One store instance behind several Java dispatchers and Rust code in the same process: Rust
 * reaches the store through {@link NativeIdempotencyStore#nativeHandle()} and the public {@code
 * idemkit_jni::executor_of} (via the test-only {@link NativeTestSupport#rustCall}), and every side
 * deduplicates against the others in the in-memory store.
 */
class SharedStoreTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static class SharedTools {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "shared_book")
        @Idempotent
        public String sharedBook(@ToolParam(name = "flight") String flight) {
            runs.incrementAndGet();
            return "java:" + flight;
        }
    }

    private static JsonNode rust(
            InMemoryIdempotencyStore store,
            String tenant,
            String run,
            String input,
            String resultJson)
            throws Exception {
        return JSON.readTree(
                NativeTestSupport.rustCall(store, "shared_book", tenant, run, input, resultJson));
    }

    @Test
    void java_first_then_rust_on_the_same_store_is_deduplicated() throws Exception {
        try (InMemoryIdempotencyStore store = new InMemoryIdempotencyStore()) {
            SharedTools tools = new SharedTools();
            ToolDispatcher one =
                    ToolDispatcher.builder()
                            .tools(tools)
                            .store(store)
                            .tenant("acme")
                            .run("r1")
                            .build();
            ToolDispatcher two =
                    ToolDispatcher.builder()
                            .tools(tools)
                            .store(store)
                            .tenant("acme")
                            .run("r1")
                            .build();

            assertEquals(
                    "java:BA117", one.call("shared_book", Map.of("flight", "BA117"), String.class));
            // A second dispatcher on the same store instance: deduplicated.
            assertEquals(
                    "java:BA117", two.call("shared_book", Map.of("flight", "BA117"), String.class));
            assertEquals(1, tools.runs.get());

            JsonNode answer = rust(store, "acme", "r1", "{\"flight\":\"BA117\"}", "\"rust:BA117\"");
            assertEquals(0, answer.get("ran").asInt(), answer.toString());
            assertEquals("java:BA117", answer.get("result").asText());
            assertEquals(1, tools.runs.get());
            // Rust's call counted in the store's (shared) event counts: two repeats deduplicated.
            assertEquals(2L, store.eventCounts().get("deduplicated"));
            assertEquals(1L, store.eventCounts().get("acquired"));

            // Another tenant or run is another key: Rust's body runs there.
            assertEquals(
                    1,
                    rust(store, "acme", "r2", "{\"flight\":\"BA117\"}", "\"rust\"")
                            .get("ran")
                            .asInt());
            assertEquals(
                    1,
                    rust(store, "globex", "r1", "{\"flight\":\"BA117\"}", "\"rust\"")
                            .get("ran")
                            .asInt());
        }
    }

    @Test
    void rust_first_then_java_gets_the_rust_made_result_without_running() throws Exception {
        try (InMemoryIdempotencyStore store = new InMemoryIdempotencyStore()) {
            SharedTools tools = new SharedTools();
            ToolDispatcher java =
                    ToolDispatcher.builder()
                            .tools(tools)
                            .store(store)
                            .tenant("acme")
                            .run("r1")
                            .build();

            JsonNode first = rust(store, "acme", "r1", "{\"flight\":\"LH400\"}", "\"rust:LH400\"");
            assertEquals(1, first.get("ran").asInt());
            assertEquals("rust:LH400", first.get("result").asText());
            // Rust again: its own repeat is deduplicated too.
            assertEquals(
                    0,
                    rust(store, "acme", "r1", "{\"flight\":\"LH400\"}", "\"other\"")
                            .get("ran")
                            .asInt());

            assertEquals(
                    "rust:LH400", java.call("shared_book", "{\"flight\":\"LH400\"}", String.class));
            assertEquals(0, tools.runs.get());
        }
    }

    @Test
    void handle_0_and_a_closed_store_are_refused() {
        NativeLibrary.load();
        NullPointerException none =
                assertThrows(
                        NullPointerException.class,
                        () -> NativeTestSupport.rustCall(0L, "shared_book", null, null, "{}", "1"));
        assertTrue(none.getMessage().contains("idempotency store"), none.getMessage());

        InMemoryIdempotencyStore store = new InMemoryIdempotencyStore();
        long handle = store.nativeHandle();
        assertTrue(handle != 0);
        assertEquals(handle, store.nativeHandle());
        store.close();
        assertTrue(store.isClosed());
        IllegalStateException closed =
                assertThrows(IllegalStateException.class, store::nativeHandle);
        assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
        assertThrows(
                IllegalStateException.class,
                () -> NativeTestSupport.rustCall(store, "shared_book", null, null, "{}", "1"));
    }
}
