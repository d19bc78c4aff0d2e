package dev.idemkit.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.example.mcp.RoomServer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The README's MCP example ({@code com.example.mcp.RoomServer}, compared verbatim), run as its own
 * program in a child JVM: the SDK's client calls {@code book_room} twice, the room is booked once.
 */
class RoomServerTest {
    @Test
    void theExampleBooksOnceForTwoCalls() throws Exception {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (String property : System.getProperties().stringPropertyNames()) {
            if (property.startsWith("idemkit.")) {
                command.add("-D" + property + "=" + System.getProperty(property));
            }
        }
        command.add("-cp");
        command.add(
                System.getProperty(
                        "surefire.test.class.path", System.getProperty("java.class.path")));
        command.add(RoomServer.class.getName());
        Process process = new ProcessBuilder(command).redirectErrorStream(false).start();
        process.getOutputStream().close();
        // stderr (Tomcat's and the SDK's logs) drained on a thread of its own.
        Thread drain =
                new Thread(
                        () -> {
                            try {
                                process.getErrorStream().transferTo(System.err);
                            } catch (java.io.IOException e) {
                                // the process ended
                            }
                        });
        drain.start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(120, TimeUnit.SECONDS), "the example ended: " + out);
        assertEquals(0, process.exitValue(), out);
        assertEquals(
                "first call: booking-ada-2026-12-04-1, replayed: false\n"
                        + "retry: booking-ada-2026-12-04-1, replayed: true\n"
                        + "the booking ran 1 time(s)\n",
                out);
    }

    @Test
    void theReadmeShowsTheExampleVerbatim() throws Exception {
        Path root = Path.of(System.getProperty("idemkit.repo.root", "../.."));
        String readme = Files.readString(root.resolve("java/README.md"));
        String source =
                Files.readString(
                        root.resolve(
                                "java/idemkit-mcp/src/test/java/com/example/mcp/RoomServer.java"));
        assertTrue(
                readme.contains("```java\n" + source + "```"),
                "java/README.md must show RoomServer.java verbatim in a java block");
    }
}
