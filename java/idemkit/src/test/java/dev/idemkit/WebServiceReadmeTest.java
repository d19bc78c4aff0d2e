package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.WebServiceTestServer.Recorded;
import dev.idemkit.WebServiceTestServer.Reply;
import dev.idemkit.examples.PaymentsClient;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The README's web-service example is exactly {@code dev.idemkit.examples.PaymentsClient}: it
 * compiles, and it runs against a small fake payments API on 127.0.0.1.
 */
class WebServiceReadmeTest {
    private static final String MARKER = "```java\npackage dev.idemkit.examples;\n";

    @Test
    void the_readme_web_service_example_is_the_compiled_one_and_it_runs() throws Exception {
        String readme = Files.readString(Path.of("../README.md"));
        int at = readme.indexOf(MARKER);
        assertTrue(
                at >= 0,
                "README.md has no java block starting with `package dev.idemkit.examples;`");
        int start = at + "```java\n".length();
        String block = readme.substring(start, readme.indexOf("```", start));
        String source =
                Files.readString(Path.of("src/test/java/dev/idemkit/examples/PaymentsClient.java"));
        assertEquals(
                source,
                block,
                "README.md's web-service block must be PaymentsClient.java verbatim");

        try (WebServiceTestServer api = new WebServiceTestServer()) {
            api.script(WebServiceReadmeTest::payments);
            PrintStream original = System.out;
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            try {
                PaymentsClient.main(new String[] {api.baseUri()});
            } finally {
                System.setOut(original);
            }
            assertEquals(
                    "ch_1 201, replayed: true, same key: true\n"
                            + "ch_1 succeeded\n"
                            + "{\"refund\":\"re_1\"} true\n"
                            + "declined: 402\n"
                            + "remembered: dev.idemkit.WebServiceException\n",
                    out.toString(StandardCharsets.UTF_8));

            List<Recorded> requests = api.requests();
            assertEquals(
                    List.of(
                            "POST /v1/charges",
                            "GET /v1/charges/ch_1",
                            "POST /v1/charges/ch_1/refunds",
                            "POST /v1/charges"),
                    requests.stream().map(r -> r.method + " " + r.rawPath).toList());
            for (Recorded r : requests) {
                assertEquals("Bearer sk_test_123", r.single("Authorization"));
                assertEquals(
                        r.method.equals("GET"), r.single("Idempotency-Key") == null, r.toString());
            }
        }
    }

    /** A fake payments API: charges up to 1,000,000 succeed, larger ones are declined. */
    private static Reply payments(Recorded r) {
        if (r.method.equals("POST") && r.rawPath.equals("/v1/charges")) {
            return r.body.contains("99999999")
                    ? Reply.json(402, "{\"error\":\"card_declined\"}")
                    : Reply.json(
                            201,
                            "{\"id\":\"ch_1\",\"amount\":1200,\"status\":\"succeeded\",\"livemode\":false}");
        }
        if (r.method.equals("GET") && r.rawPath.equals("/v1/charges/ch_1")) {
            return Reply.json(200, "{\"id\":\"ch_1\",\"amount\":1200,\"status\":\"succeeded\"}");
        }
        if (r.method.equals("POST") && r.rawPath.equals("/v1/charges/ch_1/refunds")) {
            return Reply.json(200, "{\"refund\":\"re_1\"}");
        }
        return Reply.json(404, "{\"error\":\"not_found\"}");
    }
}
