package dev.idemkit.mcp;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.server.McpAsyncServer;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.TextContent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.apache.catalina.Context;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;

/** A streamable HTTP MCP server in an embedded Tomcat on 127.0.0.1, and the SDK's clients. */
final class McpTestSupport {
    static final McpJsonMapper JSON = new JacksonMcpJsonMapper(new ObjectMapper());

    private McpTestSupport() {}

    /**
     * One embedded Tomcat for the whole test JVM, serving whichever transport the current test set:
     * a stopped web application leaves its class loader on Reactor's shared threads, so Tomcat is
     * started once and never stopped mid-run.
     */
    private static final class Container {
        static volatile HttpServletStreamableServerTransportProvider current;
        static final int PORT = start();

        private static int start() {
            try {
                Path base = Files.createTempDirectory("idemkit-mcp-tomcat");
                Tomcat tomcat = new Tomcat();
                tomcat.setBaseDir(base.toString());
                Connector connector = new Connector();
                connector.setPort(0);
                connector.setProperty("address", "127.0.0.1");
                tomcat.setConnector(connector);
                Context context = tomcat.addContext("", base.toString());
                jakarta.servlet.http.HttpServlet dispatch =
                        new jakarta.servlet.http.HttpServlet() {
                            private static final long serialVersionUID = 1L;

                            @Override
                            protected void service(
                                    jakarta.servlet.http.HttpServletRequest request,
                                    jakarta.servlet.http.HttpServletResponse response)
                                    throws jakarta.servlet.ServletException, java.io.IOException {
                                current.service(request, response);
                            }
                        };
                Tomcat.addServlet(context, "mcp", dispatch).setAsyncSupported(true);
                context.addServletMappingDecoded("/*", "mcp");
                tomcat.start();
                return connector.getLocalPort();
            } catch (Exception e) {
                throw new IllegalStateException("embedded Tomcat did not start", e);
            }
        }
    }

    /** A running server; the tenant of a call is its {@code X-Tenant} header. */
    static final class HttpServer implements AutoCloseable {
        final McpSyncServer server;
        final McpAsyncServer asyncServer;
        final int port;

        HttpServer(IdempotentMcpTools tools) throws Exception {
            this(tools, false);
        }

        /** A sync server of {@code tools.syncSpecifications()}, or an async one of the async. */
        HttpServer(IdempotentMcpTools tools, boolean async) throws Exception {
            HttpServletStreamableServerTransportProvider transport =
                    HttpServletStreamableServerTransportProvider.builder()
                            .jsonMapper(JSON)
                            .mcpEndpoint("/mcp")
                            .contextExtractor(
                                    request -> {
                                        Map<String, Object> values = new HashMap<>();
                                        String tenant = request.getHeader("X-Tenant");
                                        if (tenant != null) {
                                            values.put("tenant", tenant);
                                        }
                                        return McpTransportContext.create(values);
                                    })
                            .build();
            if (async) {
                server = null;
                asyncServer =
                        McpServer.async(transport)
                                .serverInfo("bookings", "1.0")
                                .capabilities(
                                        McpSchema.ServerCapabilities.builder().tools(false).build())
                                .requestTimeout(Duration.ofSeconds(30))
                                .tools(tools.asyncSpecifications())
                                .build();
            } else {
                asyncServer = null;
                server =
                        McpServer.sync(transport)
                                .serverInfo("bookings", "1.0")
                                .capabilities(
                                        McpSchema.ServerCapabilities.builder().tools(false).build())
                                .requestTimeout(Duration.ofSeconds(30))
                                .tools(tools.syncSpecifications())
                                .build();
            }
            Container.current = transport;
            port = Container.PORT;
        }

        McpSyncClient client(String tenant) {
            HttpClientStreamableHttpTransport.Builder b =
                    HttpClientStreamableHttpTransport.builder("http://127.0.0.1:" + port)
                            .endpoint("/mcp")
                            .jsonMapper(JSON);
            if (tenant != null) {
                b.httpRequestCustomizer(
                        (request, method, uri, body, context) ->
                                request.header("X-Tenant", tenant));
            }
            McpSyncClient client =
                    McpClient.sync(b.build()).requestTimeout(Duration.ofSeconds(30)).build();
            client.initialize();
            return client;
        }

        @Override
        public void close() throws Exception {
            if (server != null) {
                server.closeGracefully();
            } else {
                asyncServer.closeGracefully().block(Duration.ofSeconds(30));
            }
        }
    }

    static CallToolRequest call(String tool, Map<String, Object> args, String key) {
        CallToolRequest.Builder b = CallToolRequest.builder().name(tool).arguments(args);
        if (key != null) {
            b.meta(Map.of(IdempotentMcpTools.KEY_META, key));
        }
        return b.build();
    }

    static String text(CallToolResult result) {
        StringBuilder b = new StringBuilder();
        for (Object c : result.content()) {
            if (c instanceof TextContent) {
                b.append(((TextContent) c).text());
            }
        }
        return b.toString();
    }

    static boolean replayed(CallToolResult result) {
        return Boolean.TRUE.equals(result.meta().get(IdempotentMcpTools.REPLAYED_META));
    }
}
