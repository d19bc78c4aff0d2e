package dev.idemkit;

import java.io.PrintWriter;
import java.net.URI;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Properties;
import java.util.logging.Logger;
import javax.sql.DataSource;
import redis.clients.jedis.RedisClient;

/** The application-owned clients of the Java-store tests, made from the services' URLs. */
final class JavaClients {
    private JavaClients() {}

    private static RedisClient sharedRedis;

    /**
     * One Jedis {@code RedisClient} for {@code IDEMKIT_REDIS_URL}, shared by the tests that run on
     * every store; it lives as long as the test JVM, as an application's client would.
     */
    static synchronized RedisClient redisClient(String what) {
        if (sharedRedis == null) {
            sharedRedis = RedisClient.create(URI.create(Services.url("IDEMKIT_REDIS_URL", what)));
        }
        return sharedRedis;
    }

    /**
     * The nodes of a {@code redis+cluster://host:port,host:port/} URL ({@code
     * IDEMKIT_REDIS_CLUSTER_URL}), for a Jedis {@code RedisClusterClient}.
     */
    static java.util.Set<redis.clients.jedis.HostAndPort> clusterNodes(String url) {
        java.util.Set<redis.clients.jedis.HostAndPort> nodes = new java.util.HashSet<>();
        for (String node : url.substring(url.indexOf("//") + 2).replace("/", "").split(",")) {
            nodes.add(redis.clients.jedis.HostAndPort.from(node));
        }
        return nodes;
    }

    /**
     * A {@code DataSource} (the PostgreSQL JDBC driver, a connection per call) for {@code
     * IDEMKIT_POSTGRES_URL} ({@code postgres://user[:password]@host:port/db}).
     */
    static DataSource dataSource(String what) {
        URI url = URI.create(Services.url("IDEMKIT_POSTGRES_URL", what));
        String jdbc =
                "jdbc:postgresql://"
                        + url.getHost()
                        + ":"
                        + (url.getPort() < 0 ? 5432 : url.getPort())
                        + url.getPath();
        Properties props = new Properties();
        String userInfo = url.getUserInfo();
        if (userInfo != null) {
            int colon = userInfo.indexOf(':');
            props.setProperty("user", colon < 0 ? userInfo : userInfo.substring(0, colon));
            if (colon >= 0) {
                props.setProperty("password", userInfo.substring(colon + 1));
            }
        }
        return new DriverDataSource(jdbc, props);
    }

    /** The smallest {@code DataSource}: {@code DriverManager}, a new connection each time. */
    static final class DriverDataSource implements DataSource {
        private final String url;
        private final Properties props;

        DriverDataSource(String url, Properties props) {
            this.url = url;
            this.props = props;
        }

        @Override
        public Connection getConnection() throws SQLException {
            return DriverManager.getConnection(url, props);
        }

        @Override
        public Connection getConnection(String user, String password) throws SQLException {
            throw new SQLFeatureNotSupportedException();
        }

        @Override
        public PrintWriter getLogWriter() {
            return null;
        }

        @Override
        public void setLogWriter(PrintWriter out) {}

        @Override
        public void setLoginTimeout(int seconds) {}

        @Override
        public int getLoginTimeout() {
            return 0;
        }

        @Override
        public Logger getParentLogger() throws SQLFeatureNotSupportedException {
            throw new SQLFeatureNotSupportedException();
        }

        @Override
        public <T> T unwrap(Class<T> iface) throws SQLException {
            throw new SQLException("not a wrapper");
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) {
            return false;
        }
    }
}
