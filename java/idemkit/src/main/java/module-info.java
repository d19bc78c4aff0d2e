/**
 * idemkit: makes side-effecting tool calls safe to retry. The API is the package {@link
 * dev.idemkit}; the native core is bundled in the jar and loaded at first use.
 *
 * <p>Jackson's databind is required transitively: {@code TypeReference} and {@code ObjectMapper}
 * appear in the API. A module whose tools or web-service roles idemkit calls must make their
 * package reachable by reflection: export it, or {@code opens} it to {@code dev.idemkit} (and to
 * {@code com.fasterxml.jackson.databind} when Jackson reads its types).
 */
module dev.idemkit {
    exports dev.idemkit;
    exports dev.idemkit.spi;
    exports dev.idemkit.adapter;
    exports dev.idemkit.jedis;

    requires transitive com.fasterxml.jackson.databind;
    requires transitive java.net.http;
    requires transitive java.sql;
    requires static redis.clients.jedis;
    requires com.fasterxml.jackson.datatype.jsr310;
    requires com.fasterxml.jackson.datatype.jdk8;
}
