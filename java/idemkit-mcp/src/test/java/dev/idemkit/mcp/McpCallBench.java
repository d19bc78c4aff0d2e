package dev.idemkit.mcp;

import dev.idemkit.IdempotencyStore;
import dev.idemkit.Idempotent;
import dev.idemkit.InMemoryIdempotencyStore;
import dev.idemkit.RedisIdempotencyStore;
import dev.idemkit.Tool;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.server.McpAsyncServerExchange;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.TextContent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Not a test: what a protected {@code tools/call} costs over an unprotected one, in one JVM, on two
 * paths: the tool handlers as the SDK calls them, without a transport (idemkit's own cost), and the
 * whole call through the SDK's client and streamable HTTP (an embedded Tomcat on 127.0.0.1). Three
 * kinds of call are interleaved in blocks: an unprotected tool (a plain SDK specification idemkit
 * never sees: the baseline), a protected tool with new arguments each time (a claim, the body, the
 * completion) and a protected repeat (a replay); the bodies do the same work. On the memory store,
 * and on Redis when {@code IDEMKIT_REDIS_URL} is set.
 *
 * <pre>{@code
 * scripts/bench-java.sh --mcp [--rounds N] [--calls N]
 * }</pre>
 */
public final class McpCallBench {
    private McpCallBench() {}

    /** The protected tool. */
    public static class BenchTools {
        @Tool(name = "book_protected", description = "Books (protected)")
        @Idempotent
        public String bookProtected(String guest, int night) {
            return "booking-" + guest + "-" + night;
        }
    }

    /** The baseline: the same work as a plain SDK tool specification. */
    static SyncToolSpecification plain() {
        return new SyncToolSpecification(
                McpSchema.Tool.builder()
                        .name("book_plain")
                        .description("Books (unprotected)")
                        .inputSchema(Map.of("type", "object"))
                        .annotations(
                                new McpSchema.ToolAnnotations(null, true, null, null, null, null))
                        .build(),
                (exchange, request) ->
                        new CallToolResult(
                                List.of(
                                        new TextContent(
                                                "booking-"
                                                        + request.arguments().get("guest")
                                                        + "-"
                                                        + request.arguments().get("night"))),
                                false,
                                null,
                                null));
    }

    private interface Caller {
        CallToolResult call(CallToolRequest request);
    }

    private static int next;

    public static void main(String[] args) throws Exception {
        int rounds = 10;
        int calls = 300;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--rounds")) {
                rounds = Integer.parseInt(args[++i]);
            } else if (args[i].equals("--calls")) {
                calls = Integer.parseInt(args[++i]);
            }
        }
        Map<String, IdempotencyStore> stores = new LinkedHashMap<>();
        stores.put("memory", new InMemoryIdempotencyStore());
        String redis = System.getenv("IDEMKIT_REDIS_URL");
        if (redis != null && !redis.isEmpty()) {
            stores.put("redis", new RedisIdempotencyStore(redis, "idemkit-bench:"));
        } else {
            System.out.println("IDEMKIT_REDIS_URL is not set: memory store only");
        }
        System.out.printf(
                "%d rounds of each kind per path and store, in blocks (handler: %d calls a block,"
                        + " HTTP: %d)%n",
                rounds, calls * 10, calls);
        System.out.println(
                "path | store | kind | p50 µs | mean µs | p50 ratio to unprotected | p50 added µs");
        int status = 0;
        try {
            for (Map.Entry<String, IdempotencyStore> e : stores.entrySet()) {
                run(e.getKey(), e.getValue(), rounds, calls);
                e.getValue().close();
            }
        } catch (Throwable failed) {
            failed.printStackTrace();
            status = 1;
        }
        // Tomcat's threads would keep the JVM alive.
        System.exit(status);
    }

    private static void run(String name, IdempotencyStore store, int rounds, int calls)
            throws Exception {
        String tenant = "bench-" + UUID.randomUUID();
        try (IdempotentMcpTools tools =
                IdempotentMcpTools.builder()
                        .tools(new BenchTools())
                        .wrap(plain(), null)
                        .store(store)
                        .scope(McpScopeResolver.fixed(tenant, null))
                        .build()) {
            Map<String, SyncToolSpecification> specs = new LinkedHashMap<>();
            for (SyncToolSpecification spec : tools.syncSpecifications()) {
                specs.put(spec.tool().name(), spec);
            }
            McpSyncServerExchange exchange =
                    new McpSyncServerExchange(
                            new McpAsyncServerExchange(
                                    "bench", null, null, null, McpTransportContext.EMPTY));
            measure(
                    "handler",
                    name,
                    request -> specs.get(request.name()).callHandler().apply(exchange, request),
                    rounds,
                    calls * 10);
            try (McpTestSupport.HttpServer server = new McpTestSupport.HttpServer(tools);
                    McpSyncClient client = server.client(null)) {
                measure("HTTP", name, client::callTool, rounds, calls);
            }
        }
        store.forget(tenant);
    }

    private static void measure(String path, String name, Caller caller, int rounds, int calls) {
        String[] kinds = {"unprotected", "protected, new key", "protected, repeat"};
        List<List<Long>> samples = new ArrayList<>();
        for (int k = 0; k < kinds.length; k++) {
            samples.add(new ArrayList<>());
        }
        CallToolRequest repeat = call("book_protected", "repeat-" + path, 0);
        caller.call(repeat);
        // Warm-up: the same mix, not counted.
        for (int i = 0; i < 3 * calls; i++) {
            once(caller, i % 3, repeat, null);
        }
        for (int r = 0; r < rounds; r++) {
            // Each round starts with another kind, so that no kind always follows the same one.
            for (int b = 0; b < kinds.length; b++) {
                int k = (r + b) % kinds.length;
                for (int i = 0; i < calls; i++) {
                    once(caller, k, repeat, samples.get(k));
                }
            }
        }
        double base = p50(samples.get(0));
        for (int k = 0; k < kinds.length; k++) {
            double p50 = p50(samples.get(k));
            System.out.printf(
                    "%s | %s | %s | %.1f | %.1f | %.2f× | %+.1f%n",
                    path, name, kinds[k], p50, mean(samples.get(k)), p50 / base, p50 - base);
        }
    }

    private static void once(Caller caller, int kind, CallToolRequest repeat, List<Long> out) {
        CallToolRequest request;
        switch (kind) {
            case 0:
                request = call("book_plain", "g", next++);
                break;
            case 1:
                request = call("book_protected", "g", next++);
                break;
            default:
                request = repeat;
        }
        long start = System.nanoTime();
        CallToolResult result = caller.call(request);
        long took = System.nanoTime() - start;
        if (Boolean.TRUE.equals(result.isError())) {
            throw new IllegalStateException("a bench call failed: " + result);
        }
        if (out != null) {
            out.add(took);
        }
    }

    private static CallToolRequest call(String tool, String guest, int night) {
        return CallToolRequest.builder()
                .name(tool)
                .arguments(Map.of("guest", guest, "night", night))
                .build();
    }

    private static double p50(List<Long> nanos) {
        long[] sorted = nanos.stream().mapToLong(Long::longValue).toArray();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2] / 1000.0;
    }

    private static double mean(List<Long> nanos) {
        return nanos.stream().mapToLong(Long::longValue).average().orElse(0) / 1000.0;
    }
}
