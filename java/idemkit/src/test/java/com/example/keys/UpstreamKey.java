package com.example.keys;

import dev.idemkit.IdempotencyKeys;
import java.util.List;

public class UpstreamKey {
    public static void main(String[] args) {
        // The key a dispatcher call of `book_flight` gets for this tenant and input (JSON text).
        String key =
                IdempotencyKeys.derive(
                        "book_flight",
                        "acme",
                        null,
                        "{\"flight\":\"BA117\",\"passenger\":\"Ada\"}");
        System.out.println("Idempotency-Key: " + key);

        // With keyArguments only those members count: a different note is the same booking.
        String withNote =
                IdempotencyKeys.derive(
                        "book_flight",
                        "acme",
                        null,
                        "{\"passenger\":\"Ada\",\"flight\":\"BA117\",\"note\":\"window seat\"}",
                        List.of("flight", "passenger"));
        String plain =
                IdempotencyKeys.derive(
                        "book_flight",
                        "acme",
                        null,
                        "{\"flight\":\"BA117\",\"passenger\":\"Ada\",\"note\":\"aisle\"}",
                        List.of("flight", "passenger"));
        System.out.println("same booking: " + withNote.equals(plain));

        // EXPLICIT: the key over an id the caller supplies.
        System.out.println(
                "explicit: "
                        + IdempotencyKeys.deriveExplicit("send_email", "acme", null, "welcome-42"));
    }
}
