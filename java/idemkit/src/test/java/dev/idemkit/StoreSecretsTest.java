package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A password in a store URL or connection string never shows (SPEC v1.1 rule 11): not in an
 * exception's message, its cause chain or its toString, not in {@code describe()}, not in a log
 * line. Every URL form the drivers accept: userinfo, {@code password=} query parameters, a password
 * with unencoded {@code / # ?}, and libpq {@code key=value} strings.
 */
// Cluster URLs at closed ports: the Redis driver warns of each node it cannot reach.
@ExpectedWarnings("Failed to connect to node")
class StoreSecretsTest {
    /** Passwords are made of parts long enough that finding any part in the output means a leak. */
    private static final String[] ODD_PASSWORD_PARTS = {
        "Alpha7x", "Bravo8x", "Charlie9x", "Delta0x"
    };

    private static final String ODD_PASSWORD = "Alpha7x/Bravo8x#Charlie9x?Delta0x";

    private final List<String> logged = new CopyOnWriteArrayList<>();
    private final Handler capture =
            new Handler() {
                @Override
                public void publish(LogRecord record) {
                    logged.add(new java.util.logging.SimpleFormatter().format(record));
                }

                @Override
                public void flush() {}

                @Override
                public void close() {}
            };

    @BeforeEach
    void captureLogs() {
        Logger.getLogger("dev.idemkit").addHandler(capture);
    }

    @AfterEach
    void stopCapturing() {
        Logger.getLogger("dev.idemkit").removeHandler(capture);
    }

    static class Tools {
        @Tool(name = "secrets_probe")
        @Idempotent
        public String probe(String id) {
            return "ok:" + id;
        }
    }

    /**
     * Everything a user or a log could see of a throwable: its stack trace prints each cause's
     * toString.
     */
    private static String visible(Throwable thrown) {
        StringWriter out = new StringWriter();
        thrown.printStackTrace(new PrintWriter(out));
        StringBuilder all = new StringBuilder(out.toString());
        for (Throwable t = thrown; t != null; t = t.getCause()) {
            all.append('\n')
                    .append(t)
                    .append('\n')
                    .append(t.getMessage())
                    .append('\n')
                    .append(t.getLocalizedMessage());
        }
        return all.toString();
    }

    /** Every leak found, so one run names every form that leaks. */
    private final List<String> leaks = new ArrayList<>();

    private void findSecret(String form, String text, String... secrets) {
        for (String secret : secrets) {
            // Case-insensitive: a lowercased copy of the input is a leak too.
            if (text.toLowerCase(java.util.Locale.ROOT)
                    .contains(secret.toLowerCase(java.util.Locale.ROOT))) {
                leaks.add(form + ": the password (" + secret + ") shows in:\n" + text);
            }
        }
    }

    private void assertNoLeaks() {
        assertTrue(leaks.isEmpty(), leaks.size() + " leaks:\n\n" + String.join("\n\n", leaks));
    }

    /**
     * Opens a store with {@code url}; whether it opens or not, nothing anyone sees holds the
     * password. An open store is also used once (a call and, for PostgreSQL, creating the table).
     */
    private void check(
            String form,
            String url,
            Function<String, NativeIdempotencyStore> open,
            String... secrets) {
        List<String> seen = new ArrayList<>();
        NativeIdempotencyStore store = null;
        try {
            store = open.apply(url);
        } catch (RuntimeException refused) {
            seen.add(visible(refused));
        }
        if (store != null) {
            try {
                seen.add(store.describe());
                seen.add(store.toString());
                if (store instanceof PostgresIdempotencyStore) {
                    try {
                        ((PostgresIdempotencyStore) store).createTableIfMissing();
                    } catch (RuntimeException refused) {
                        seen.add(visible(refused));
                    }
                }
                try {
                    ToolDispatcher d =
                            ToolDispatcher.builder()
                                    .tools(new Tools())
                                    .store(store)
                                    .tenant("secrets-" + java.util.UUID.randomUUID())
                                    .build();
                    d.call("secrets_probe", Map.of("id", "1"));
                } catch (RuntimeException refused) {
                    seen.add(visible(refused));
                }
            } finally {
                store.close();
            }
        }
        seen.addAll(logged);
        for (String text : seen) {
            findSecret(form, text, secrets);
        }
    }

    private static NativeIdempotencyStore redis(String url) {
        return new RedisIdempotencyStore(url, "idemkit-java-secrets:");
    }

    private static NativeIdempotencyStore postgres(String url) {
        return new PostgresIdempotencyStore(url, "idemkit_java_test");
    }

    @Test
    void passwords_never_show_when_a_server_cannot_be_reached() {
        // Port 1 on 127.0.0.1: nothing listens, so every open or first use fails.
        check(
                "redis userinfo",
                "redis://:Echo1pw@127.0.0.1:1/0",
                StoreSecretsTest::redis,
                "Echo1pw");
        check(
                "redis user and password",
                "redis://app:Echo2pw@127.0.0.1:1/0",
                StoreSecretsTest::redis,
                "Echo2pw");
        check(
                "redis ?password=",
                "redis://127.0.0.1:1/?password=Foxtrot1pw",
                StoreSecretsTest::redis,
                "Foxtrot1pw");
        check(
                "redis unencoded / # ?",
                "redis://:" + ODD_PASSWORD + "@127.0.0.1:1/0",
                StoreSecretsTest::redis,
                ODD_PASSWORD_PARTS);
        check(
                "redis cluster userinfo",
                "redis+cluster://:Golf1pw@127.0.0.1:1,127.0.0.1:2/",
                StoreSecretsTest::redis,
                "Golf1pw");
        check(
                "postgres userinfo",
                "postgres://app:Hotel1pw@127.0.0.1:1/db",
                StoreSecretsTest::postgres,
                "Hotel1pw");
        check(
                "postgres ?password=",
                "postgres://app@127.0.0.1:1/db?password=India1pw",
                StoreSecretsTest::postgres,
                "India1pw");
        check(
                "postgresql ?password= among others",
                "postgresql://app@127.0.0.1:1/db?sslmode=disable&password=India2pw",
                StoreSecretsTest::postgres,
                "India2pw");
        check(
                "postgres unencoded / # ?",
                "postgres://app:" + ODD_PASSWORD + "@127.0.0.1:1/db",
                StoreSecretsTest::postgres,
                ODD_PASSWORD_PARTS);
        check(
                "libpq key=value",
                "host=127.0.0.1 port=1 user=app password=Juliet1pw dbname=db",
                StoreSecretsTest::postgres,
                "Juliet1pw");
        check(
                "libpq quoted value",
                "host=127.0.0.1 port=1 user=app password='Juliet2pw x' dbname=db",
                StoreSecretsTest::postgres,
                "Juliet2pw");
        assertNoLeaks();
    }

    @Test
    void passwords_never_show_when_the_real_servers_refuse_or_accept_them() {
        URI redis = URI.create(Services.url("IDEMKIT_REDIS_URL", "Redis store"));
        String redisAt = redis.getHost() + ":" + redis.getPort();
        // The test server has no password: AUTH with one is an error the driver reports.
        check(
                "redis userinfo (real server)",
                "redis://:Kilo1pw@" + redisAt + "/0",
                StoreSecretsTest::redis,
                "Kilo1pw");
        check(
                "redis ?password= (real server)",
                "redis://" + redisAt + "/0?password=Kilo2pw",
                StoreSecretsTest::redis,
                "Kilo2pw");
        check(
                "redis unencoded / # ? (real server)",
                "redis://:" + ODD_PASSWORD + "@" + redisAt + "/0",
                StoreSecretsTest::redis,
                ODD_PASSWORD_PARTS);

        URI pg = URI.create(Services.url("IDEMKIT_POSTGRES_URL", "PostgreSQL store"));
        String pgAt = pg.getHost() + ":" + pg.getPort();
        String db = pg.getPath().substring(1);
        String user = pg.getUserInfo() == null ? "postgres" : pg.getUserInfo().split(":", 2)[0];
        // The test server may trust local connections: then the store opens, and describe() must
        // hide it.
        check(
                "postgres userinfo (real server)",
                "postgres://" + user + ":Lima1pw@" + pgAt + "/" + db,
                StoreSecretsTest::postgres,
                "Lima1pw");
        check(
                "postgres ?password= (real server)",
                "postgres://" + user + "@" + pgAt + "/" + db + "?password=Lima2pw",
                StoreSecretsTest::postgres,
                "Lima2pw");
        check(
                "postgres as another user (real server)",
                "postgres://nobody_" + System.nanoTime() % 1000 + ":Lima3pw@" + pgAt + "/" + db,
                StoreSecretsTest::postgres,
                "Lima3pw");
        check(
                "libpq key=value (real server)",
                "host="
                        + pg.getHost()
                        + " port="
                        + pg.getPort()
                        + " user="
                        + user
                        + " password=Mike1pw dbname="
                        + db,
                StoreSecretsTest::postgres,
                "Mike1pw");
        assertNoLeaks();
    }

    @Test
    void the_check_itself_sees_a_password_in_a_message() {
        // The assertions above would catch a leak: a message holding the password fails them.
        String leaked =
                visible(
                        new IllegalStateException(
                                "outer",
                                new RuntimeException(
                                        "cannot connect to " + "redis://:Echo1pw@127.0.0.1:1/0")));
        assertTrue(leaked.contains("Echo1pw"));
        findSecret("self-check", leaked, "Echo1pw");
        assertFalse(leaks.isEmpty(), "findSecret must see a leak in a cause's message");
        leaks.clear();
        findSecret("self-check", visible(new IllegalStateException("no secret here")), "Echo1pw");
        assertNoLeaks();
    }
}
