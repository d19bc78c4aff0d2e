package dev.idemkit.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.IdempotencyStore;
import dev.idemkit.IdempotentOperation;
import dev.idemkit.PostgresIdempotencyStore;
import java.net.URI;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import redis.clients.jedis.RedisClient;

/**
 * {@code idemkit.store.client}: the store over the application's own {@code DataSource} or Jedis
 * client bean — calls deduplicate through it, its records land in the app's database or Redis, the
 * app's client outlives the context's store, and a missing, ambiguous or unknown client is refused
 * at startup naming the property and the fix.
 */
class AppClientStoreTest {
    private final ApplicationContextRunner runner =
            new ApplicationContextRunner()
                    .withConfiguration(AutoConfigurations.of(IdemkitAutoConfiguration.class));

    private static String env(String name, String what) {
        String value = System.getenv(name);
        if (value == null || value.isEmpty()) {
            String message =
                    name
                            + " is not set: SKIPPING "
                            + what
                            + " (start the servers with scripts/services.sh start, then eval"
                            + " \"$(scripts/services.sh env)\")";
            if (required(name)) {
                org.junit.jupiter.api.Assertions.fail(
                        message + "; IDEMKIT_REQUIRE_SERVICES guarantees it, so this fails");
            }
            System.err.println("idemkit: " + message);
            Assumptions.abort(message);
        }
        return value;
    }

    /** Whether IDEMKIT_REQUIRE_SERVICES ({@code 1}, or names) guarantees {@code what}. */
    static boolean required(String what) {
        String list = System.getenv().getOrDefault("IDEMKIT_REQUIRE_SERVICES", "");
        return java.util.Arrays.stream(list.split("[ ,]+"))
                .anyMatch(n -> n.equals("1") || n.equals(what));
    }

    /** The app's own {@code DataSource} for {@code IDEMKIT_POSTGRES_URL}. */
    private static DataSource appDataSource() {
        URI url = URI.create(env("IDEMKIT_POSTGRES_URL", "the Spring Boot DataSource store test"));
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setServerNames(new String[] {url.getHost()});
        dataSource.setPortNumbers(new int[] {url.getPort() < 0 ? 5432 : url.getPort()});
        dataSource.setDatabaseName(url.getPath().substring(1));
        String userInfo = url.getUserInfo();
        int colon = userInfo == null ? -1 : userInfo.indexOf(':');
        dataSource.setUser(colon < 0 ? userInfo : userInfo.substring(0, colon));
        if (colon >= 0) {
            dataSource.setPassword(userInfo.substring(colon + 1));
        }
        return dataSource;
    }

    /** Two calls of one operation with one input through {@code store}: the body runs once. */
    private static void bookTwice(IdempotencyStore store, String tenant) {
        AtomicInteger runs = new AtomicInteger();
        IdempotentOperation<String> book =
                IdempotentOperation.builder("book_flight", String.class).store(store).build();
        for (int i = 0; i < 2; i++) {
            assertEquals(
                    "BK-1",
                    book.call(
                            tenant,
                            "run-1",
                            "{\"flight\":\"BA117\"}",
                            context -> "BK-" + runs.incrementAndGet()));
        }
        assertEquals(1, runs.get());
    }

    @Test
    void the_store_runs_on_the_apps_data_source_and_writes_to_its_database() throws Exception {
        DataSource dataSource = appDataSource();
        String table = "idemkit_boot_" + UUID.randomUUID().toString().replace("-", "");
        try {
            runner.withBean("appDataSource", DataSource.class, () -> dataSource)
                    .withPropertyValues(
                            "idemkit.store.client=datasource",
                            "idemkit.store.table=" + table,
                            "idemkit.store.create-table=true")
                    .run(
                            context -> {
                                assertEquals(null, context.getStartupFailure());
                                IdempotencyStore store = context.getBean(IdempotencyStore.class);
                                assertInstanceOf(PostgresIdempotencyStore.class, store);
                                bookTwice(store, "acme-" + UUID.randomUUID());
                                assertTrue(
                                        java.util.Arrays.asList(
                                                        context.getBeanFactory()
                                                                .getDependentBeans("appDataSource"))
                                                .contains(IdemkitAutoConfiguration.STORE_BEAN));
                            });
            try (Connection connection = dataSource.getConnection();
                    Statement statement = connection.createStatement();
                    ResultSet rows =
                            statement.executeQuery(
                                    "SELECT count(*) FROM "
                                            + table
                                            + " WHERE state = 'completed'")) {
                assertTrue(rows.next());
                assertEquals(1, rows.getInt(1), "one record, in the app's own database");
            }
        } finally {
            try (Connection connection = dataSource.getConnection();
                    Statement statement = connection.createStatement()) {
                statement.execute("DROP TABLE IF EXISTS " + table);
            }
        }
    }

    @Test
    void the_store_runs_on_the_apps_jedis_client_and_never_closes_it() {
        String url = env("IDEMKIT_REDIS_URL", "the Spring Boot Jedis store test");
        String prefix = "idemkit-boot-jedis:" + UUID.randomUUID() + ":";
        try (RedisClient cleanup = RedisClient.create(URI.create(url))) {
            runner.withBean(
                            "appRedis",
                            RedisClient.class,
                            () -> RedisClient.create(URI.create(url)))
                    .withPropertyValues(
                            "idemkit.store.client=jedis", "idemkit.store.key-prefix=" + prefix)
                    .run(
                            context -> {
                                assertEquals(null, context.getStartupFailure());
                                IdempotencyStore store = context.getBean(IdempotencyStore.class);
                                assertInstanceOf(
                                        dev.idemkit.jedis.RedisIdempotencyStore.class, store);
                                bookTwice(store, "acme-" + UUID.randomUUID());
                                RedisClient client = context.getBean(RedisClient.class);
                                assertEquals(1, client.keys(prefix + "*").size());
                                // The context closes the store before the client it borrows ...
                                assertTrue(
                                        java.util.Arrays.asList(
                                                        context.getBeanFactory()
                                                                .getDependentBeans("appRedis"))
                                                .contains(IdemkitAutoConfiguration.STORE_BEAN));
                                // ... and closing the store leaves the app's client open.
                                store.close();
                                assertEquals("PONG", client.ping());
                            });
            for (String key : cleanup.keys(prefix + "*")) {
                cleanup.del(key);
            }
        }
    }

    private String startupFailure(String... properties) {
        return startupFailure(runner.withPropertyValues(properties));
    }

    /**
     * The messages of the failure of a context that must refuse to start; Spring's warning of it is
     * captured and checked, not printed.
     */
    private static String startupFailure(ApplicationContextRunner failing) {
        String[] message = new String[1];
        try (CapturedLog log = new CapturedLog()) {
            failing.run(
                    context -> {
                        Throwable failure = context.getStartupFailure();
                        assertNotNull(failure, "the context must refuse to start");
                        message[0] = rootMessages(failure);
                    });
            assertTrue(
                    log.lines().stream()
                            .anyMatch(
                                    line ->
                                            line.startsWith("WARN ")
                                                    && line.contains("BeanCreationException")),
                    String.valueOf(log.lines()));
        }
        return message[0];
    }

    @Test
    void a_missing_ambiguous_or_unknown_client_is_refused_naming_the_property_and_the_fix() {
        String none = startupFailure("idemkit.store.client=datasource");
        assertTrue(
                none.contains("idemkit.store.client=datasource needs a javax.sql.DataSource bean")
                        && none.contains("the application has none"),
                none);

        String two =
                startupFailure(
                        runner.withBean(
                                        "first",
                                        DataSource.class,
                                        AppClientStoreTest::appDataSourceUnchecked)
                                .withBean(
                                        "second",
                                        DataSource.class,
                                        AppClientStoreTest::appDataSourceUnchecked)
                                .withPropertyValues("idemkit.store.client=datasource"));
        assertTrue(two.contains("has 2 (first, second)") && two.contains("@Primary"), two);

        String unknown = startupFailure("idemkit.store.client=mongo");
        assertTrue(
                unknown.contains("idemkit.store.client: unknown client `mongo`")
                        && unknown.contains("datasource")
                        && unknown.contains("jedis"),
                unknown);

        String both =
                startupFailure(
                        "idemkit.store.client=jedis",
                        "idemkit.store.url=redis://admin:hunter2@127.0.0.1:1/0");
        assertTrue(both.contains("idemkit.store.url and idemkit.store.client are both set"), both);
        assertFalse(both.contains("hunter2"), both);
    }

    @Test
    void a_blank_url_beside_a_client_is_unset_and_the_store_runs_on_the_client() {
        for (String blank : new String[] {"", "   "}) {
            runner.withBean("appData", DataSource.class, AppClientStoreTest::appDataSourceUnchecked)
                    .withPropertyValues(
                            "idemkit.store.client=datasource", "idemkit.store.url=" + blank)
                    .run(
                            context -> {
                                assertEquals(
                                        null,
                                        context.getStartupFailure(),
                                        "url `" + blank + "` is unset");
                                assertInstanceOf(
                                        PostgresIdempotencyStore.class,
                                        context.getBean(IdempotencyStore.class));
                            });
        }
    }

    private static DataSource appDataSourceUnchecked() {
        return new PGSimpleDataSource();
    }

    private static String rootMessages(Throwable failure) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            all.append(t.getMessage()).append('\n');
        }
        return all.toString();
    }
}
