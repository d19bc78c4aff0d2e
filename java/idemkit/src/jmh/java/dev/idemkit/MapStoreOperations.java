package dev.idemkit;

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
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A store written in Java over a {@code ConcurrentHashMap}, for the benchmarks only: a hit through
 * it against a hit on the native in-memory store is what the SPI bridge costs (the upcall, the
 * request and answer as JSON both ways), with no server in the way. Not a real store: one process,
 * expired records never purged.
 */
final class MapStoreOperations implements StoreOperations {
    private final ConcurrentHashMap<RecordId, StoredRecord> records = new ConcurrentHashMap<>();

    @Override
    public ClaimResult claim(ClaimRequest request) {
        long now = System.currentTimeMillis();
        StoredRecord[] found = {null};
        records.compute(
                request.id(),
                (id, current) -> {
                    if (request.takesOver(current, now)) {
                        return StoredRecord.claimed(request, now);
                    }
                    found[0] = current;
                    return current;
                });
        if (found[0] != null) {
            return ClaimResult.found(now, found[0]);
        }
        return ClaimResult.acquired(now, now + request.leaseMs());
    }

    @Override
    public SettleResult complete(RecordId id, String token, StoredOutcome outcome, long ttlMs) {
        long now = System.currentTimeMillis();
        StoredRecord[] current = {null};
        boolean[] done = {false};
        records.computeIfPresent(
                id,
                (k, r) -> {
                    if (r.settleableBy(token)) {
                        done[0] = true;
                        return r.completed(outcome, ttlMs, now);
                    }
                    current[0] = r;
                    return r;
                });
        return done[0] ? SettleResult.settled() : SettleResult.notDone(current[0]);
    }

    @Override
    public boolean release(RecordId id, String token) {
        StoredRecord r = records.get(id);
        return r != null && r.settleableBy(token) && records.remove(id, r);
    }

    @Override
    public ReadResult get(RecordId id) {
        long now = System.currentTimeMillis();
        StoredRecord r = records.get(id);
        return new ReadResult(now, r == null || r.isExpired(now) ? null : r);
    }

    @Override
    public ListResult list(ListRequest request) {
        return new ListResult(System.currentTimeMillis(), List.of(), null);
    }

    @Override
    public SettleResult resolve(RecordId id, String expectedToken, StoredOutcome outcome, long ttlMs) {
        if (outcome == null) {
            return release(id, expectedToken) ? SettleResult.settled() : SettleResult.notDone(records.get(id));
        }
        return complete(id, expectedToken, outcome, ttlMs);
    }

    @Override
    public boolean delete(RecordId id) {
        return records.remove(id) != null;
    }

    @Override
    public long forget(String tenant) {
        long before = records.size();
        records.keySet().removeIf(id -> java.util.Objects.equals(id.tenant(), tenant));
        return before - records.size();
    }

    @Override
    public long purgeExpired() {
        return 0;
    }

    @Override
    public String describe() {
        return "a benchmark map store";
    }
}
