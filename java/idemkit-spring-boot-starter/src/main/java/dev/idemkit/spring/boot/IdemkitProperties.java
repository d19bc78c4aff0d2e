package dev.idemkit.spring.boot;

import dev.idemkit.springai.IdempotentToolCallbacks;
import org.springframework.ai.chat.memory.ChatMemory;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * idemkit's settings under {@code idemkit.*} in {@code application.yml}:
 *
 * <pre>
 * idemkit:
 *   store:
 *     url: redis://127.0.0.1:6379/0   # or postgres://..., or memory (the default)
 *     key-prefix: myapp:              # Redis only
 *   tenant: acme                      # else the tool context entry tool-context.tenant-key
 * </pre>
 */
@ConfigurationProperties(prefix = "idemkit")
public class IdemkitProperties {
    /** Where records live. */
    private final Store store = new Store();

    /** Which tool context entries name the tenant and the run. */
    private final ToolContext toolContext = new ToolContext();

    /** One tenant for every tool call; unset: the tool context entry {@code tenantKey}. */
    private String tenant;

    /** Whether idemkit's events are counted in the app's Micrometer registry (when it has one). */
    private boolean metrics = true;

    /**
     * The store settings.
     *
     * @return the store settings
     */
    public Store getStore() {
        return store;
    }

    /**
     * The tool context settings.
     *
     * @return the tool context settings
     */
    public ToolContext getToolContext() {
        return toolContext;
    }

    /**
     * The fixed tenant.
     *
     * @return the tenant, or {@code null} to read it from the tool context
     */
    public String getTenant() {
        return tenant;
    }

    /**
     * Sets the fixed tenant.
     *
     * @param tenant the tenant, or {@code null}
     */
    public void setTenant(String tenant) {
        this.tenant = tenant;
    }

    /**
     * Whether events are counted in Micrometer.
     *
     * @return {@code true} by default
     */
    public boolean isMetrics() {
        return metrics;
    }

    /**
     * Turns the Micrometer counters on or off.
     *
     * @param metrics {@code false} to leave them out
     */
    public void setMetrics(boolean metrics) {
        this.metrics = metrics;
    }

    /** {@code idemkit.store.*}. */
    public static class Store {
        /**
         * {@code memory} (default: one process), {@code redis://}, {@code rediss://}, {@code
         * postgres://} or {@code postgresql://} with host, credentials and database.
         */
        private String url = "memory";

        /** The Redis key prefix; unset: the core's default. */
        private String keyPrefix;

        /** The PostgreSQL table; unset: the core's default. */
        private String table;

        /** Whether to create the PostgreSQL table when it is missing (needs the right to). */
        private boolean createTable;

        /**
         * {@code datasource} or {@code jedis}: build the store over the application's own client
         * bean (its {@code javax.sql.DataSource}, or its {@code redis.clients.jedis.UnifiedJedis}
         * such as a {@code RedisClient}) instead of opening connections from {@link #url}; unset:
         * use the URL.
         */
        private String client;

        /**
         * The application client the store is built over.
         *
         * @return {@code datasource}, {@code jedis}, or {@code null} (the URL is used)
         */
        public String getClient() {
            return client;
        }

        /**
         * Builds the store over the application's own client bean instead of a URL.
         *
         * @param client {@code datasource} or {@code jedis}
         */
        public void setClient(String client) {
            this.client = client;
        }

        /**
         * The store URL.
         *
         * @return the URL, {@code memory} by default
         */
        public String getUrl() {
            return url;
        }

        /**
         * Sets the store URL.
         *
         * @param url the URL
         */
        public void setUrl(String url) {
            this.url = url;
        }

        /**
         * The Redis key prefix.
         *
         * @return the prefix, or {@code null}
         */
        public String getKeyPrefix() {
            return keyPrefix;
        }

        /**
         * Sets the Redis key prefix.
         *
         * @param keyPrefix the prefix
         */
        public void setKeyPrefix(String keyPrefix) {
            this.keyPrefix = keyPrefix;
        }

        /**
         * The PostgreSQL table.
         *
         * @return the table, or {@code null}
         */
        public String getTable() {
            return table;
        }

        /**
         * Sets the PostgreSQL table.
         *
         * @param table the table
         */
        public void setTable(String table) {
            this.table = table;
        }

        /**
         * Whether the PostgreSQL table is created when missing.
         *
         * @return {@code false} by default
         */
        public boolean isCreateTable() {
            return createTable;
        }

        /**
         * Creates the PostgreSQL table when missing.
         *
         * @param createTable {@code true} to create it
         */
        public void setCreateTable(boolean createTable) {
            this.createTable = createTable;
        }
    }

    /** {@code idemkit.tool-context.*}. */
    public static class ToolContext {
        /** The entry holding the tenant (when {@code idemkit.tenant} is unset). */
        private String tenantKey = IdempotentToolCallbacks.TENANT;

        /** The entry holding the run: the conversation. */
        private String runKey = ChatMemory.CONVERSATION_ID;

        /**
         * The tenant entry.
         *
         * @return {@code idemkit.tenant} by default
         */
        public String getTenantKey() {
            return tenantKey;
        }

        /**
         * Sets the tenant entry.
         *
         * @param tenantKey the entry's key
         */
        public void setTenantKey(String tenantKey) {
            this.tenantKey = tenantKey;
        }

        /**
         * The run entry.
         *
         * @return Spring AI's {@code ChatMemory.CONVERSATION_ID} by default
         */
        public String getRunKey() {
            return runKey;
        }

        /**
         * Sets the run entry.
         *
         * @param runKey the entry's key
         */
        public void setRunKey(String runKey) {
            this.runKey = runKey;
        }
    }
}
