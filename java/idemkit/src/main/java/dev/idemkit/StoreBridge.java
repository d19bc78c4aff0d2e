package dev.idemkit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.idemkit.spi.ClaimRequest;
import dev.idemkit.spi.ClaimResult;
import dev.idemkit.spi.ListRequest;
import dev.idemkit.spi.ListResult;
import dev.idemkit.spi.ReadResult;
import dev.idemkit.spi.RecordId;
import dev.idemkit.spi.SettleResult;
import dev.idemkit.spi.StoreOperations;
import dev.idemkit.spi.StoredOutcome;
import dev.idemkit.spi.StoredRecord;
import dev.idemkit.spi.TakeOverRequest;
import dev.idemkit.spi.TakeOverResult;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * What the native executor calls to run an operation of a {@link StoreOperations}: one method,
 * {@link #call(int, String, long)}, with the request and the answer as JSON text (parsed in Rust,
 * in {@code java/native/src/java_store.rs}). It only translates; an exception of the store goes
 * back to the native caller, which turns it into a store error.
 */
final class StoreBridge {
    static final int CLAIM = 0;
    static final int COMPLETE = 1;
    static final int RELEASE = 2;
    static final int GET = 3;
    static final int LIST = 4;
    static final int RESOLVE = 5;
    static final int DELETE = 6;
    static final int FORGET = 7;
    static final int PURGE = 8;
    static final int TAKE_OVER = 9;

    private static final ObjectMapper JSON = new ObjectMapper();

    private final StoreOperations operations;

    StoreBridge(StoreOperations operations) {
        this.operations = operations;
    }

    /**
     * Called by the native executor (on the calling thread, or an idemkit daemon thread), with the
     * milliseconds the operation has left ({@code timeoutMs}, 0: no bound), which the store reads
     * with {@link StoreDeadline#millisLeft()}.
     */
    String call(int op, String request, long timeoutMs) {
        StoreDeadline.begin(timeoutMs);
        try {
            return call(op, request);
        } finally {
            StoreDeadline.end();
        }
    }

    private String call(int op, String request) {
        JsonNode in = parse(request);
        ObjectNode out = JSON.createObjectNode();
        switch (op) {
            case CLAIM:
                {
                    ClaimResult r =
                            operations.claim(
                                    new ClaimRequest(
                                            id(in),
                                            in.get("scope").asText(),
                                            in.get("token").asText(),
                                            in.get("lease_ms").asLong(),
                                            in.get("ttl_ms").asLong(),
                                            in.get("retry_failure").asBoolean(),
                                            text(in, "fingerprint"),
                                            in.get("payload_checked").asBoolean()));
                    out.put("now", r.now());
                    out.put("acquired", r.acquired());
                    out.put("lease_end", r.leaseEnd());
                    putRecord(out, r.found());
                    break;
                }
            case COMPLETE:
            case RESOLVE:
                {
                    StoredOutcome outcome =
                            in.hasNonNull("outcome")
                                    ? new StoredOutcome(
                                            text(in, "outcome_kind"), text(in, "outcome"))
                                    : null;
                    String token = in.get("token").asText();
                    long ttl = in.get("ttl_ms").asLong();
                    SettleResult r =
                            op == COMPLETE
                                    ? operations.complete(id(in), token, outcome, ttl)
                                    : operations.resolve(id(in), token, outcome, ttl);
                    out.put("done", r.done());
                    putRecord(out, r.current());
                    break;
                }
            case RELEASE:
                out.put("yes", operations.release(id(in), in.get("token").asText()));
                break;
            case GET:
                {
                    ReadResult r = operations.get(id(in));
                    out.put("now", r.now());
                    putRecord(out, r.record());
                    break;
                }
            case LIST:
                {
                    ListResult r =
                            operations.list(
                                    new ListRequest(
                                            "any".equals(in.get("tenants").asText()),
                                            text(in, "tenant"),
                                            text(in, "status"),
                                            in.get("limit").asInt(),
                                            text(in, "cursor")));
                    out.put("now", r.now());
                    ArrayNode records = out.putArray("records");
                    for (StoredRecord record : r.records()) {
                        records.add(record(record));
                    }
                    out.put("next_cursor", r.nextCursor());
                    break;
                }
            case DELETE:
                out.put("yes", operations.delete(id(in)));
                break;
            case FORGET:
                out.put("count", operations.forget(text(in, "tenant")));
                break;
            case PURGE:
                out.put("count", operations.purgeExpired());
                break;
            case TAKE_OVER:
                {
                    TakeOverResult r =
                            operations.takeOver(
                                    new TakeOverRequest(
                                            id(in),
                                            in.get("expected").asText(),
                                            in.get("token").asText(),
                                            in.get("lease_ms").asLong(),
                                            in.get("ttl_ms").asLong()));
                    out.put("now", r.now());
                    out.put("supported", r.supported());
                    out.put("acquired", r.acquired());
                    out.put("lease_end", r.leaseEnd());
                    putRecord(out, r.found());
                    break;
                }
            default:
                throw new IllegalArgumentException("unknown store operation " + op);
        }
        return out.toString();
    }

    private static JsonNode parse(String request) {
        try {
            return JSON.readTree(request);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String text(JsonNode in, String field) {
        JsonNode v = in.get(field);
        return v == null || v.isNull() ? null : v.asText();
    }

    private static RecordId id(JsonNode in) {
        return new RecordId(text(in, "tenant"), in.get("key").asText());
    }

    private static void putRecord(ObjectNode out, StoredRecord record) {
        if (record == null) {
            out.putNull("record");
        } else {
            out.set("record", record(record));
        }
    }

    private static ObjectNode record(StoredRecord r) {
        ObjectNode n = JSON.createObjectNode();
        n.put("format", r.format());
        n.put("key", r.key());
        n.put("tenant", r.tenant());
        n.put("scope", r.scope());
        n.put("state", r.state() == StoredRecord.State.COMPLETED ? "completed" : "in_progress");
        n.put("token", r.token());
        n.put("claimed_at", r.claimedAt());
        n.put("lease_end", r.leaseEnd());
        n.put("ttl_ms", r.ttlMs());
        n.put("expires_at", r.expiresAt());
        n.put("outcome_kind", r.outcome() == null ? null : r.outcome().kind());
        n.put("outcome", r.outcome() == null ? null : r.outcome().json());
        n.put("fingerprint", r.fingerprint());
        return n;
    }
}
