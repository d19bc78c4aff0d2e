package dev.idemkit.examples;

import dev.idemkit.CachedFailureException;
import dev.idemkit.HttpMethod;
import dev.idemkit.IdempotencyKeySupplier;
import dev.idemkit.Idempotent;
import dev.idemkit.InMemoryIdempotencyStore;
import dev.idemkit.KeyStrategy;
import dev.idemkit.ParamType;
import dev.idemkit.ToolParam;
import dev.idemkit.WebService;
import dev.idemkit.WebServiceException;
import dev.idemkit.WebServiceExecutor;
import dev.idemkit.WebServiceResponse;
import java.time.Duration;
import java.util.Map;

public class PaymentsClient {
    /** What the payments API answers (unknown members are ignored). */
    public static class Charge {
        public String id;
        public long amount;
        public String status;
    }

    /** The API's actions. The methods are declarations: idemkit builds and sends the requests. */
    @Idempotent(ttlSeconds = 86_400)
    public static class PaymentsApi implements IdempotencyKeySupplier {
        // POST {baseUri}/v1/charges, body {"order":..,"amount":..,"note":..},
        // Idempotency-Key: <64-hex key>. The key hashes order and amount only; a declined
        // charge (4xx) is remembered too. (A method's @Idempotent replaces its class's
        // entirely, so ttlSeconds is repeated.) The API keeps its answer per key, as Stripe
        // does, so a request that reached it may be sent again (honorsIdempotencyKey).
        @WebService(
                name = "create_charge",
                endpoint = "/v1/charges",
                timeoutMs = 10_000,
                honorsIdempotencyKey = true)
        @Idempotent(
                ttlSeconds = 86_400,
                keyArguments = {"order", "amount"},
                cacheFailures = true)
        public Charge createCharge(
                @ToolParam(name = "order") String order,
                @ToolParam(name = "amount") long amount,
                @ToolParam(name = "note") String note) {
            return null;
        }

        // GET {baseUri}/v1/charges/ch_1: no header; a remembered answer is served without a
        // request.
        @WebService(
                name = "get_charge",
                endpoint = "/v1/charges/{id}",
                method = HttpMethod.GET,
                paramType = ParamType.PATH)
        public Charge getCharge(@ToolParam(name = "id") String id) {
            return null;
        }

        // POST {baseUri}/v1/charges/ch_1/refunds: the key is the one this class supplies (one
        // refund per charge).
        @WebService(name = "refund", endpoint = "/v1/charges/{id}/refunds")
        @Idempotent(strategy = KeyStrategy.EXPLICIT)
        public String refund(
                @ToolParam(name = "id") String id, @ToolParam(name = "reason") String reason) {
            return null; // String: the raw response body
        }

        @Override
        public String idempotencyKeyFor(Map<String, Object> input) {
            return "refund-" + input.get("id");
        }
    }

    public static void main(String[] args) {
        String api = args.length > 0 ? args[0] : "https://payments.example.com";
        try (InMemoryIdempotencyStore store = new InMemoryIdempotencyStore()) {
            WebServiceExecutor payments =
                    WebServiceExecutor.builder()
                            .roles(new PaymentsApi())
                            .store(store) // the same store as your ToolDispatcher
                            .baseUri(api)
                            .header("Authorization", "Bearer sk_test_123")
                            .retry(
                                    3,
                                    Duration.ofMillis(
                                            200)) // resends, where the core finds them safe
                            .tenant("acme")
                            .build();

            // What a model sends, then its retry with another note: the same charge, one request.
            WebServiceResponse<Charge> first =
                    payments.invokeForResponse(
                            "create_charge",
                            "{\"order\":\"A-17\",\"amount\":1200,\"note\":\"first\"}",
                            Charge.class);
            WebServiceResponse<Charge> retry =
                    payments.invokeForResponse(
                            "create_charge",
                            Map.of("order", "A-17", "amount", 1200, "note", "retry"),
                            Charge.class);
            System.out.println(
                    first.value().id
                            + " "
                            + first.status().getAsInt()
                            + ", replayed: "
                            + retry.replayed()
                            + ", same key: "
                            + first.key().equals(first.context().orElseThrow().key()));

            Charge charge =
                    payments.invoke("get_charge", Map.of("id", first.value().id), Charge.class);
            System.out.println(charge.id + " " + charge.status);

            Object refund =
                    payments.invoke("refund", Map.of("id", charge.id, "reason", "duplicate"));
            Object again =
                    payments.invoke("refund", Map.of("id", charge.id, "reason", "duplicate"));
            System.out.println(refund + " " + refund.equals(again));

            // A declined card is a WebServiceException; with cacheFailures a repeat sends nothing.
            Map<String, Object> tooMuch = Map.of("order", "B-2", "amount", 99_999_999, "note", "");
            try {
                payments.invoke("create_charge", tooMuch);
            } catch (WebServiceException declined) {
                System.out.println("declined: " + declined.status());
            }
            try {
                payments.invoke("create_charge", tooMuch);
            } catch (CachedFailureException remembered) {
                System.out.println("remembered: " + remembered.originalType());
            }
        }
    }
}
