package dev.idemkit;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The Java face's cost: an in-memory cache hit and an executed call through the dispatcher,
 * against plain Java in the same run (the tool method called directly, and a ConcurrentHashMap +
 * SHA-256 dedupe written in Java), plus the parts of the JNI path on their own.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class DispatchBenchmark {
    /** The tool: a small booking, as an agent would call it. */
    public static class Tools {
        @Tool(name = "book")
        @Idempotent
        public Booking book(String flight, String passenger, int seats) {
            return new Booking("BK-" + flight, passenger, seats);
        }
    }

    public static class Booking {
        public String id;
        public String passenger;
        public int seats;

        public Booking() {
        }

        Booking(String id, String passenger, int seats) {
            this.id = id;
            this.passenger = passenger;
            this.seats = seats;
        }
    }

    /** The pure-Java baseline: canonical JSON (sorted members), SHA-256, a ConcurrentHashMap. */
    static final class JavaDedupe {
        final ConcurrentHashMap<String, Object> results = new ConcurrentHashMap<>();
        static final ObjectMapper MAPPER = new ObjectMapper();
        static final ThreadLocal<MessageDigest> SHA = ThreadLocal.withInitial(() -> {
            try {
                return MessageDigest.getInstance("SHA-256");
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });

        /** Canonical JSON (sorted members), SHA-256, hex: the naive peers' key (also FacePeers'). */
        static String key(String tool, Map<String, Object> input) throws Exception {
            byte[] canonical = MAPPER.writeValueAsBytes(new Object[] {"v1", null, null, tool, "input", new TreeMap<>(input)});
            byte[] digest = SHA.get().digest(canonical);
            char[] hex = new char[64];
            for (int i = 0; i < 32; i++) {
                hex[2 * i] = Character.forDigit((digest[i] >> 4) & 0xF, 16);
                hex[2 * i + 1] = Character.forDigit(digest[i] & 0xF, 16);
            }
            return new String(hex);
        }

        Object call(Tools tools, Map<String, Object> input) throws Exception {
            String key = key("book", input);
            Object hit = results.get(key);
            if (hit != null) {
                return hit;
            }
            return results.computeIfAbsent(key, k -> tools.book((String) input.get("flight"),
                    (String) input.get("passenger"), (Integer) input.get("seats")));
        }
    }

    Tools tools;
    InMemoryIdempotencyStore store;
    ToolDispatcher dispatcher;
    JavaDedupe dedupe;
    Map<String, Object> input;
    final AtomicLong counter = new AtomicLong();

    // Parts of the JNI path.
    long storeHandle;
    long toolHandle;
    NativeContext context;
    JsonInput encoded;
    byte[] replayBytes;
    ObjectReader reader;

    @Setup(Level.Iteration)
    public void setUp() throws Exception {
        tools = new Tools();
        store = new InMemoryIdempotencyStore();
        dispatcher = ToolDispatcher.builder().tools(tools).store(store).tenant("acme").build();
        dedupe = new JavaDedupe();
        input = Map.of("flight", "BA117", "passenger", "Ana Lima", "seats", 2);
        dispatcher.call("book", input);
        dedupe.call(tools, input);

        storeHandle = store.handle.acquire();
        toolHandle = NativeBridge.toolNew("book", "HASH_INPUT", 3600, "RETURN_CACHED", false, new String[0], 300, 0, null, "IDEMPOTENT", new String[0], new String[0], null, null, false, false);
        encoded = JsonInput.ofValue(input, "book");
        context = new NativeContext("acme", null);
        // The dispatcher's call above recorded this key (same scope, tenant and input): a replay.
        byte[] answer = NativeBridge.begin(storeHandle, toolHandle, context.handle, encoded.bytes, encoded.length,
                100);
        if (NativeBridge.step(answer) != NativeBridge.STEP_REPLAY) {
            throw new IllegalStateException("expected a replay");
        }
        replayBytes = java.util.Arrays.copyOfRange(answer, NativeBridge.resultOffset(answer), answer.length);
        reader = new ObjectMapper().readerFor(Booking.class);
    }

    @TearDown(Level.Iteration)
    public void tearDown() {
        NativeBridge.toolDestroy(toolHandle);
        store.handle.release();
        store.close();
    }

    private Map<String, Object> fresh() {
        return Map.of("flight", "BA" + counter.incrementAndGet(), "passenger", "Ana Lima", "seats", 2);
    }

    // --- the comparison ------------------------------------------------------------------------

    @Benchmark
    public Object direct_call() {
        return tools.book((String) input.get("flight"), (String) input.get("passenger"), (Integer) input.get("seats"));
    }

    @Benchmark
    public Object java_dedupe_hit() throws Exception {
        return dedupe.call(tools, input);
    }

    @Benchmark
    public Object idemkit_hit() {
        return dispatcher.call("book", input);
    }

    @Benchmark
    public Object java_dedupe_executed() throws Exception {
        return dedupe.call(tools, fresh());
    }

    @Benchmark
    public Object idemkit_executed() {
        return dispatcher.call("book", fresh());
    }

    // --- where the time of a hit goes -----------------------------------------------------------

    /** Map → ASCII JSON bytes (Java). */
    @Benchmark
    public Object part_encode_input() {
        return JsonInput.ofValue(input, "book");
    }

    /** One JNI crossing through the boundary wrapper, doing nothing. */
    @Benchmark
    public void part_jni_crossing() {
        NativeBridge.attemptDestroy(0);
    }

    /** begin: JNI + key derivation (parse, NFC, SHA-256) + memory-store claim + replay bytes back. */
    @Benchmark
    public Object part_native_begin_hit() {
        return NativeBridge.begin(storeHandle, toolHandle, context.handle, encoded.bytes, encoded.length, 100);
    }

    private static final byte[] SCOPE = "\"book\"".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final byte[] TENANT = "\"acme\"".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    /** The core's key derivation alone (JNI + parse, NFC, SHA-256; no store), as IdempotencyKeys calls it. */
    @Benchmark
    public Object part_native_derive_key() {
        return NativeBridge.deriveKey(SCOPE, TENANT, null, null, encoded.bytes, encoded.length, false);
    }

    /** The remembered result's JSON → the declared type (Jackson). */
    @Benchmark
    public Object part_decode_result() throws Exception {
        return reader.readValue(replayBytes);
    }

    /** The Java baseline's key alone: canonical JSON + SHA-256. */
    @Benchmark
    public Object part_java_sha256_key() throws Exception {
        return dedupe.key("book", input);
    }
}
