package com.example.stores;

import org.postgresql.ds.PGSimpleDataSource;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.RedisClient;

/**
 * The README's client-timeout snippets, unchanged: clients that give up on a server that stops
 * answering, so that a store call over them fails instead of hanging. {@code JavaStoreFaultTest}
 * runs its stores over these.
 */
public final class ClientTimeouts {
    private ClientTimeouts() {}

    /** PgJDBC's {@code DataSource} with connect, login and socket timeouts. */
    public static PGSimpleDataSource dataSource(
            String host, int port, String database, String user) {
        // README pgjdbc: begin
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setServerNames(new String[] {host});
        dataSource.setPortNumbers(new int[] {port});
        dataSource.setDatabaseName(database);
        dataSource.setUser(user);
        dataSource.setConnectTimeout(5); // seconds: the TCP connect
        dataSource.setLoginTimeout(10); // seconds: the whole login
        dataSource.setSocketTimeout(10); // seconds: any one read; above your slowest statement
        // README pgjdbc: end
        return dataSource;
    }

    /** A Jedis {@code RedisClient} with connection and socket timeouts. */
    public static RedisClient redisClient(String host, int port) {
        // README jedis: begin
        RedisClient client =
                RedisClient.builder()
                        .hostAndPort(host, port)
                        .clientConfig(
                                DefaultJedisClientConfig.builder()
                                        .connectionTimeoutMillis(2_000)
                                        .socketTimeoutMillis(2_000)
                                        .build())
                        .build();
        // README jedis: end
        return client;
    }
}
