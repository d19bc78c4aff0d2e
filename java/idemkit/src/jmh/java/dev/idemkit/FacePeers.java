package dev.idemkit;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.params.SetParams;

/**
 * The Java face against naive Java peers, per call, one calling thread: wall time, the process's
 * CPU time (summed over every thread from {@code /proc/self/task/*}{@code /schedstat}: the
 * runtime's workers and the JVM's own included) and context switches (the sum of {@code
 * voluntary_ctxt_switches} and {@code nonvoluntary_ctxt_switches} over {@code /proc/self/task/*}),
 * read before and after a fixed number of calls. Run by {@code scripts/bench-java.sh --face}, once
 * with the caller lanes on and once off ({@code IDEMKIT_CALLER_LANES=0}), alternately.
 *
 * <ul>
 *   <li>{@code redis_hit}: a repeat through {@link ToolDispatcher} on the native Redis store,
 *       against a Jedis {@code GET} of the key (canonical JSON + SHA-256, as the memory peer) and
 *       Jackson reading the result back;
 *   <li>{@code redis_executed}: a new input each call, against {@code GET} (a miss), the body, and
 *       {@code SET key json EX ttl} — NOT atomic: two concurrent first calls both run the body;
 *   <li>{@code memory_hit}: a repeat on the in-memory store, against canonical JSON + SHA-256 + a
 *       {@code ConcurrentHashMap}.
 * </ul>
 *
 * <p>The peer and idemkit of a case run interleaved, a block of calls each in turn. Prints one
 * {@code RESULT} line per case and implementation and round: {@code p50_us} (Redis cases; each
 * call timed), {@code mean_us}, {@code cpu_us} and {@code ctx} per call.
 */
public final class FacePeers {
    private FacePeers() {}

    static final ObjectMapper JSON = new ObjectMapper();

    /** One call of a case; returns something so that the work is not dropped. */
    interface Call {
        Object call(long i) throws Exception;
    }

    static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    /**
     * CPU time (ns) of every live thread of this process so far: the first field of {@code
     * /proc/self/task/<tid>/schedstat}. The process CPU time of the management bean counts in clock
     * ticks (10 ms) here, too coarse for a run of a second; it is printed alongside as a check
     * ({@code cpu_ticks_us}), since it also counts threads that ended.
     */
    static long threadsCpuNanos() throws IOException {
        long sum = 0;
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
            for (Path task : tasks) {
                try {
                    String line = Files.readString(task.resolve("schedstat"));
                    sum += Long.parseLong(line.substring(0, line.indexOf(' ')));
                } catch (IOException threadEnded) {
                    // A thread that ended between the listing and the read.
                }
            }
        }
        return sum;
    }

    /** Context switches of every thread of this process so far. */
    static long contextSwitches() throws IOException {
        long sum = 0;
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
            for (Path task : tasks) {
                try {
                    for (String line : Files.readAllLines(task.resolve("status"))) {
                        if (line.startsWith("voluntary_ctxt_switches:")
                                || line.startsWith("nonvoluntary_ctxt_switches:")) {
                            sum += Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
                        }
                    }
                } catch (IOException threadEnded) {
                    // A thread that ended between the listing and the read.
                }
            }
        }
        return sum;
    }

    /** Where each call's result goes (a plain field: the calls cannot be dropped, and no hash is made). */
    static Object last;

    /**
     * {@code --stores}: the stores written in Java against the native ones on the same servers
     * (as {@link StoreBenchmark}), one calling thread, with the per-call counters: {@code
     * store_hit} and {@code store_executed}, impl {@code redis}, {@code jedis}, {@code postgres},
     * {@code jdbc}, and {@code memory} against {@code spi} (the bridge alone, {@link
     * MapStoreOperations}); each round runs native, Java, native, Java of one server before the
     * next. An executed PostgreSQL call commits twice (two fsyncs): it runs {@code calls / 10}
     * times; a hit on the two stores without a server {@code 10 × calls} times.
     */
    static void stores(String lanes, int calls, int rounds) throws Exception {
        String[] names = {"redis", "jedis", "postgres", "jdbc", "memory", "spi"};
        StoreBenchmark[] benches = new StoreBenchmark[names.length];
        try {
            for (int i = 0; i < names.length; i++) {
                benches[i] = new StoreBenchmark();
                benches[i].store = names[i];
                benches[i].setUp();
            }
            for (StoreBenchmark b : benches) {
                boolean local = b.store.equals("memory") || b.store.equals("spi");
                int n = b.store.startsWith("p") || b.store.equals("jdbc") ? calls / 10 : calls;
                for (int i = 0; i < (local ? 10 * calls : calls); i++) {
                    last = b.hit();
                }
                for (int i = 0; i < n; i++) {
                    last = b.executed();
                }
            }
            for (int round = 1; round <= rounds; round++) {
                for (int pair = 0; pair < names.length; pair += 2) {
                    StoreBenchmark nativeStore = benches[pair];
                    StoreBenchmark javaStore = benches[pair + 1];
                    // Executed calls keep their records: the local stores' would fill the heap.
                    int n = pair == 2 ? calls / 10 : calls;
                    int hits = pair == 4 ? 10 * calls : calls;
                    for (int twice = 0; twice < 2; twice++) {
                        measure(lanes, round + "." + (twice + 1), "store_hit", nativeStore.store, hits, true, i -> nativeStore.hit());
                        measure(lanes, round + "." + (twice + 1), "store_hit", javaStore.store, hits, true, i -> javaStore.hit());
                    }
                    for (int twice = 0; twice < 2; twice++) {
                        measure(lanes, round + "." + (twice + 1), "store_executed", nativeStore.store, n, true, i -> nativeStore.executed());
                        measure(lanes, round + "." + (twice + 1), "store_executed", javaStore.store, n, true, i -> javaStore.executed());
                    }
                }
            }
        } finally {
            for (StoreBenchmark b : benches) {
                if (b != null && b.dispatcher != null) {
                    b.tearDown();
                }
            }
        }
    }

    static void measure(String lanes, Object round, String name, String impl, int calls, boolean timeEach, Call call)
            throws Exception {
        long[] each = timeEach ? new long[calls] : null;
        long ctx0 = contextSwitches();
        long ticks0 = OS.getProcessCpuTime();
        long cpu0 = threadsCpuNanos();
        long t0 = System.nanoTime();
        if (timeEach) {
            for (int i = 0; i < calls; i++) {
                long s = System.nanoTime();
                last = call.call(i);
                each[i] = System.nanoTime() - s;
            }
        } else {
            for (int i = 0; i < calls; i++) {
                last = call.call(i);
            }
        }
        long t1 = System.nanoTime();
        long cpu1 = threadsCpuNanos();
        long ticks1 = OS.getProcessCpuTime();
        long ctx1 = contextSwitches();
        String p50 = "-";
        if (timeEach) {
            Arrays.sort(each);
            p50 = String.format("%.1f", each[calls / 2] / 1000.0);
        }
        System.out.printf(
                "RESULT lanes=%s round=%s case=%s impl=%s calls=%d p50_us=%s mean_us=%.3f cpu_us=%.3f"
                        + " cpu_ticks_us=%.3f ctx=%.3f%n",
                lanes,
                round,
                name,
                impl,
                calls,
                p50,
                (t1 - t0) / 1000.0 / calls,
                (cpu1 - cpu0) / 1000.0 / calls,
                (ticks1 - ticks0) / 1000.0 / calls,
                (double) (ctx1 - ctx0) / calls);
    }

    /**
     * The peer and idemkit of one case interleaved in blocks of {@code block} calls (peer, idemkit,
     * peer, ...), each block's wall time, CPU and context switches added to its implementation's:
     * a burst of load on the shared machine lands on both, not on whichever ran at the time.
     */
    static void interleaved(String lanes, int round, String name, int calls, int block, boolean timeEach, Call peer, Call idemkit)
            throws Exception {
        String[] impls = {"peer", "idemkit"};
        Call[] of = {peer, idemkit};
        long[][] each = {timeEach ? new long[calls] : null, timeEach ? new long[calls] : null};
        long[] wall = new long[2];
        long[] cpu = new long[2];
        long[] ctx = new long[2];
        for (int start = 0; start < calls; start += block) {
            int end = Math.min(calls, start + block);
            for (int k = 0; k < 2; k++) {
                Call call = of[k];
                long ctx0 = contextSwitches();
                long cpu0 = threadsCpuNanos();
                long t0 = System.nanoTime();
                if (timeEach) {
                    for (int i = start; i < end; i++) {
                        long t = System.nanoTime();
                        last = call.call(i);
                        each[k][i] = System.nanoTime() - t;
                    }
                } else {
                    for (int i = start; i < end; i++) {
                        last = call.call(i);
                    }
                }
                wall[k] += System.nanoTime() - t0;
                cpu[k] += threadsCpuNanos() - cpu0;
                ctx[k] += contextSwitches() - ctx0;
            }
        }
        for (int k = 0; k < 2; k++) {
            String p50 = "-";
            if (timeEach) {
                Arrays.sort(each[k]);
                p50 = String.format("%.1f", each[k][calls / 2] / 1000.0);
            }
            System.out.printf(
                    "RESULT lanes=%s round=%d case=%s impl=%s calls=%d p50_us=%s mean_us=%.3f cpu_us=%.3f ctx=%.3f%n",
                    lanes,
                    round,
                    name,
                    impls[k],
                    calls,
                    p50,
                    wall[k] / 1000.0 / calls,
                    cpu[k] / 1000.0 / calls,
                    (double) ctx[k] / calls);
        }
    }

    public static void main(String[] args) throws Exception {
        int calls = 20_000;
        int memoryCalls = 300_000;
        int rounds = 2;
        boolean stores = false;
        String only = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--stores":
                    stores = true;
                    break;
                case "--only":
                    only = args[++i];
                    break;
                case "--calls":
                    calls = Integer.parseInt(args[++i]);
                    break;
                case "--memory-calls":
                    memoryCalls = Integer.parseInt(args[++i]);
                    break;
                case "--rounds":
                    rounds = Integer.parseInt(args[++i]);
                    break;
                default:
                    throw new IllegalArgumentException(
                            "FacePeers: unknown argument "
                                    + args[i]
                                    + "; use --calls N, --memory-calls N, --rounds N, --stores, --only CASE_IMPL");
            }
        }
        String lanesEnv = System.getenv("IDEMKIT_CALLER_LANES");
        String lanes = lanesEnv == null || lanesEnv.isEmpty() ? "default" : lanesEnv;
        if (stores) {
            stores(lanes, calls, rounds);
            return;
        }
        String url = StoreBenchmark.env("IDEMKIT_REDIS_URL");
        String run = Long.toHexString(ThreadLocalRandom.current().nextLong());
        String tenant = "bench-face-" + run;
        String peerPrefix = StoreBenchmark.PREFIX + "peer-" + run + ":";

        StoreBenchmark.Tools tools = new StoreBenchmark.Tools();
        Map<String, Object> input = Map.of("flight", "BA117", "passenger", "Ana Lima", "seats", 2);

        try (RedisIdempotencyStore redisStore = new RedisIdempotencyStore(url, StoreBenchmark.PREFIX);
                InMemoryIdempotencyStore memoryStore = new InMemoryIdempotencyStore();
                RedisClient jedis = RedisClient.create(URI.create(url))) {
            ToolDispatcher redis =
                    ToolDispatcher.builder().tools(tools).store(redisStore).tenant(tenant).build();
            ToolDispatcher memory =
                    ToolDispatcher.builder().tools(tools).store(memoryStore).tenant(tenant).build();
            java.util.concurrent.ConcurrentHashMap<String, Object> map =
                    new java.util.concurrent.ConcurrentHashMap<>();

            // The peers: the same key material as idemkit's, the result read back with Jackson.
            String hitKey = peerPrefix + DispatchBenchmark.JavaDedupe.key("book", input);
            Call idemkitRedisHit = i -> redis.call("book", input);
            Call peerRedisHit =
                    i -> {
                        String json = jedis.get(hitKey);
                        return JSON.readValue(json, DispatchBenchmark.Booking.class);
                    };
            long[] fresh = {0};
            Call idemkitRedisExecuted =
                    i -> redis.call("book", Map.of("flight", "BA" + fresh[0]++, "passenger", "Ana Lima", "seats", 2));
            Call peerRedisExecuted =
                    i -> {
                        Map<String, Object> in =
                                Map.of("flight", "BA" + fresh[0]++, "passenger", "Ana Lima", "seats", 2);
                        String k = peerPrefix + DispatchBenchmark.JavaDedupe.key("book", in);
                        String json = jedis.get(k);
                        if (json != null) {
                            return JSON.readValue(json, DispatchBenchmark.Booking.class);
                        }
                        Object result =
                                tools.book((String) in.get("flight"), (String) in.get("passenger"), (Integer) in.get("seats"));
                        jedis.set(k, JSON.writeValueAsString(result), SetParams.setParams().ex(600));
                        return result;
                    };
            Call idemkitMemoryHit = i -> memory.call("book", input);
            Call peerMemoryHit =
                    i -> {
                        String k = DispatchBenchmark.JavaDedupe.key("book", input);
                        Object hit = map.get(k);
                        if (hit != null) {
                            return hit;
                        }
                        return map.computeIfAbsent(
                                k,
                                x -> tools.book((String) input.get("flight"), (String) input.get("passenger"), (Integer) input.get("seats")));
                    };
            peerRedisExecuted.call(0);
            jedis.set(hitKey, JSON.writeValueAsString(tools.book("BA117", "Ana Lima", 2)), SetParams.setParams().ex(600));

            // Warm-up: every case, long enough for the JIT, measured nowhere.
            for (Call c :
                    new Call[] {
                        idemkitRedisHit, peerRedisHit, idemkitRedisExecuted, peerRedisExecuted, idemkitMemoryHit, peerMemoryHit
                    }) {
                int n = c == idemkitMemoryHit || c == peerMemoryHit ? memoryCalls : calls;
                for (int i = 0; i < n; i++) {
                    last = c.call(i);
                }
            }
            if (only != null) {
                // One case alone (e.g. redis_hit_idemkit), for a profiler or strace: no counters.
                Map<String, Call> cases =
                        Map.of(
                                "redis_hit_peer", peerRedisHit,
                                "redis_hit_idemkit", idemkitRedisHit,
                                "redis_executed_peer", peerRedisExecuted,
                                "redis_executed_idemkit", idemkitRedisExecuted,
                                "memory_hit_peer", peerMemoryHit,
                                "memory_hit_idemkit", idemkitMemoryHit);
                Call c = cases.get(only);
                if (c == null) {
                    throw new IllegalArgumentException("FacePeers: --only takes one of " + new TreeMap<>(cases).keySet());
                }
                System.out.println("READY " + only);
                for (int i = 0; i < (only.startsWith("memory") ? memoryCalls : calls); i++) {
                    last = c.call(i);
                }
                System.out.println("DONE " + only);
                rounds = 0;
            }
            // Each round: peer and idemkit of one case interleaved, 500 Redis calls (10,000 memory
            // calls) at a time, so that both see the same moments of the machine.
            for (int round = 1; round <= rounds; round++) {
                interleaved(lanes, round, "redis_hit", calls, 500, true, peerRedisHit, idemkitRedisHit);
                interleaved(lanes, round, "redis_executed", calls, 500, true, peerRedisExecuted, idemkitRedisExecuted);
                interleaved(lanes, round, "memory_hit", memoryCalls, 10_000, false, peerMemoryHit, idemkitMemoryHit);
            }
            redisStore.forget(tenant);
            // The peer's keys expire in 10 minutes; drop them now.
            String[] peerKeys = jedis.keys(peerPrefix + "*").toArray(new String[0]);
            for (int i = 0; i < peerKeys.length; i += 1000) {
                jedis.del(Arrays.copyOfRange(peerKeys, i, Math.min(peerKeys.length, i + 1000)));
            }
            redis.close();
            memory.close();
        }
    }
}
