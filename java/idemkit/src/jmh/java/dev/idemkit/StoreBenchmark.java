package dev.idemkit;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.net.URI;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import redis.clients.jedis.RedisClient;

/**
 * The stores written in Java (Jedis, JDBC) against the native stores on the same servers, through
 * {@link ToolDispatcher}: a repeat (one remembered input) and an executed call (a new input each
 * call), one caller. {@code store}: {@code redis} (native, by URL), {@code jedis} (the Jedis store
 * over a {@code RedisClient}), {@code postgres} (native, by URL), {@code jdbc} (the JDBC store over
 * a HikariCP pool on PgJDBC); and with no server, {@code memory} (the native in-memory store)
 * against {@code spi} (a {@code ConcurrentHashMap} store written in Java, {@link
 * MapStoreOperations}): what the bridge to a Java store costs by itself. The servers are {@code IDEMKIT_REDIS_URL} and {@code
 * IDEMKIT_POSTGRES_URL}; the records go to the prefix {@code idemkit-bench:} and the table {@code
 * idemkit_bench_records}, tenant {@code bench-<random>}, forgotten at the end of each trial.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms512m", "-Xmx512m"})
// The Java stores run more Java (Jedis or PgJDBC, Jackson for the bridge) than the native ones:
// with 2 × 2 s of warm-up on the loaded 2 cores, their code was not compiled yet (a Jedis hit read
// 1.8-2.0× the native one; after 4 × 5 s, 1.00×).
@Warmup(iterations = 4, time = 5)
@Measurement(iterations = 3, time = 3)
public class StoreBenchmark {
    static final String PREFIX = "idemkit-bench:";
    static final String TABLE = "idemkit_bench_records";

    /** The tool, as in {@link DispatchBenchmark}, with a short TTL (the records are forgotten anyway). */
    public static class Tools {
        @Tool(name = "book")
        @Idempotent(ttlSeconds = 600)
        public DispatchBenchmark.Booking book(String flight, String passenger, int seats) {
            return new DispatchBenchmark.Booking("BK-" + flight, passenger, seats);
        }

        /**
         * The same tool with a deadline: on a store written in Java each store operation then runs
         * off the caller's thread, bounded by the time left (SPEC v1.2 §9 rule 3).
         */
        @Tool(name = "book_bounded", timeoutMs = 5000)
        @Idempotent(ttlSeconds = 600)
        public DispatchBenchmark.Booking bookBounded(String flight, String passenger, int seats) {
            return book(flight, passenger, seats);
        }
    }

    @Param({"redis", "jedis", "postgres", "jdbc", "memory", "spi"})
    public String store;

    /** {@code none}: the tool {@code book}; {@code 5000ms}: {@code book_bounded}, its deadline. */
    @Param({"none", "5000ms"})
    public String deadline;

    String tool;

    IdempotencyStore opened;
    RedisClient jedis;
    HikariDataSource pool;
    ToolDispatcher dispatcher;
    String tenant;
    Map<String, Object> input;
    String run;
    long counter;

    static String env(String name) {
        String v = System.getenv(name);
        if (v == null || v.isEmpty()) {
            throw new IllegalStateException(
                    "StoreBenchmark: "
                            + name
                            + " is not set; run eval \"$(scripts/services.sh env)\" first (or set it to"
                            + " a server of your own)");
        }
        return v;
    }

    /** A HikariCP pool on PgJDBC for a {@code postgres://user[:password]@host[:port]/db} URL. */
    static HikariDataSource hikari(String url, int size) {
        URI u = URI.create(url);
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(
                "jdbc:postgresql://"
                        + u.getHost()
                        + ":"
                        + (u.getPort() < 0 ? 5432 : u.getPort())
                        + u.getPath());
        String info = u.getUserInfo();
        if (info != null) {
            int colon = info.indexOf(':');
            config.setUsername(colon < 0 ? info : info.substring(0, colon));
            if (colon >= 0) {
                config.setPassword(info.substring(colon + 1));
            }
        }
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(size);
        config.setPoolName("idemkit-bench");
        return new HikariDataSource(config);
    }

    @Setup(Level.Trial)
    public void setUp() {
        switch (store) {
            case "redis":
                opened = new RedisIdempotencyStore(env("IDEMKIT_REDIS_URL"), PREFIX);
                break;
            case "jedis":
                jedis = RedisClient.create(URI.create(env("IDEMKIT_REDIS_URL")));
                opened = new dev.idemkit.jedis.RedisIdempotencyStore(jedis, PREFIX);
                break;
            case "postgres":
                opened =
                        new PostgresIdempotencyStore(env("IDEMKIT_POSTGRES_URL"), TABLE)
                                .createTableIfMissing();
                break;
            case "jdbc":
                pool = hikari(env("IDEMKIT_POSTGRES_URL"), 4);
                opened = new PostgresIdempotencyStore(pool, TABLE).createTableIfMissing();
                break;
            case "memory":
                opened = new InMemoryIdempotencyStore();
                break;
            case "spi":
                opened = IdempotencyStore.of(new MapStoreOperations());
                break;
            default:
                throw new IllegalArgumentException(
                        "StoreBenchmark: unknown store "
                                + store
                                + "; use redis, jedis, postgres, jdbc, memory or spi");
        }
        run = Long.toHexString(ThreadLocalRandom.current().nextLong());
        tenant = "bench-" + run;
        dispatcher = ToolDispatcher.builder().tools(new Tools()).store(opened).tenant(tenant).build();
        input = Map.of("flight", "BA117", "passenger", "Ana Lima", "seats", 2);
        tool = deadline.equals("none") ? "book" : "book_bounded";
        dispatcher.call(tool, input);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        try {
            opened.forget(tenant);
        } finally {
            dispatcher.close();
            opened.close();
            if (jedis != null) {
                jedis.close();
            }
            if (pool != null) {
                pool.close();
            }
        }
    }

    /** A repeat: the remembered result of one input. */
    @Benchmark
    public Object hit() {
        return dispatcher.call(tool, input);
    }

    /** An executed call: a new input (a new key) each time; claim, run, record. */
    @Benchmark
    public Object executed() {
        return dispatcher.call(
                tool,
                Map.of("flight", "BA" + run + "-" + counter++, "passenger", "Ana Lima", "seats", 2));
    }
}
