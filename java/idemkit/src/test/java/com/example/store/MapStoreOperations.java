package com.example.store;

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
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * A store a user could write in an afternoon: a map behind one lock, with a clock. It is what the
 * store SPI asks and nothing more; the native executor does the rest.
 */
public class MapStoreOperations implements StoreOperations {
    private final Map<RecordId, StoredRecord> records = new HashMap<>();
    private final LongSupplier clock;

    public MapStoreOperations() {
        this(System::currentTimeMillis);
    }

    public MapStoreOperations(LongSupplier clock) {
        this.clock = clock;
    }

    private StoredRecord live(RecordId id, long now) {
        StoredRecord r = records.get(id);
        return r == null || r.isExpired(now) ? null : r;
    }

    @Override
    public synchronized ClaimResult claim(ClaimRequest request) {
        long now = clock.getAsLong();
        StoredRecord current = live(request.id(), now);
        if (request.takesOver(current, now)) {
            StoredRecord claimed = StoredRecord.claimed(request, now);
            records.put(request.id(), claimed);
            return ClaimResult.acquired(now, claimed.leaseEnd());
        }
        return ClaimResult.found(now, current);
    }

    @Override
    public synchronized SettleResult complete(
            RecordId id, String token, StoredOutcome outcome, long ttlMs) {
        long now = clock.getAsLong();
        StoredRecord current = live(id, now);
        if (current != null && current.settleableBy(token)) {
            records.put(id, current.completed(outcome, ttlMs, now));
            return SettleResult.settled();
        }
        return SettleResult.notDone(current);
    }

    @Override
    public synchronized boolean release(RecordId id, String token) {
        StoredRecord current = live(id, clock.getAsLong());
        if (current != null && current.settleableBy(token)) {
            records.remove(id);
            return true;
        }
        return false;
    }

    @Override
    public synchronized ReadResult get(RecordId id) {
        long now = clock.getAsLong();
        return new ReadResult(now, live(id, now));
    }

    @Override
    public synchronized ListResult list(ListRequest request) {
        long now = clock.getAsLong();
        List<StoredRecord> page = new ArrayList<>();
        for (StoredRecord r : records.values()) {
            if (!r.isExpired(now)
                    && (request.allTenants() || Objects.equals(request.tenant(), r.tenant()))) {
                page.add(r);
            }
        }
        // One page holds everything: the core filters by status.
        return new ListResult(now, page, null);
    }

    @Override
    public synchronized SettleResult resolve(
            RecordId id, String expectedToken, StoredOutcome outcome, long ttlMs) {
        if (outcome == null) {
            return release(id, expectedToken)
                    ? SettleResult.settled()
                    : SettleResult.notDone(live(id, clock.getAsLong()));
        }
        return complete(id, expectedToken, outcome, ttlMs);
    }

    @Override
    public synchronized TakeOverResult takeOver(TakeOverRequest request) {
        long now = clock.getAsLong();
        StoredRecord current = live(request.id(), now);
        if (request.takesOver(current, now)) {
            StoredRecord taken = current.takenOver(request, now);
            records.put(request.id(), taken);
            return TakeOverResult.acquired(now, taken.leaseEnd());
        }
        return TakeOverResult.lost(now, current);
    }

    @Override
    public synchronized boolean delete(RecordId id) {
        StoredRecord removed = records.remove(id);
        return removed != null && !removed.isExpired(clock.getAsLong());
    }

    @Override
    public synchronized long forget(String tenant) {
        long before = records.size();
        records.keySet().removeIf(id -> Objects.equals(id.tenant(), tenant));
        return before - records.size();
    }

    @Override
    public synchronized long purgeExpired() {
        long now = clock.getAsLong();
        long before = records.size();
        records.values().removeIf(r -> r.isExpired(now));
        return before - records.size();
    }

    @Override
    public String describe() {
        return "map store";
    }
}
