package dev.idemkit.jedis;

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
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisNoScriptException;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.params.SetParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * The Redis store over the application's Jedis client ({@code RedisClient}, {@code
 * RedisClusterClient}). It runs the very Lua scripts of the native Redis store (their text comes
 * from the native library, {@code src/store/redis/scripts/*.lua}) on the same key layout ({@code
 * <prefix><t>:<key>}) and record format (v2: one string per record), so both share records: a claim
 * is one plain {@code SET ... NX GET PX} or, on the rare paths, one script touching one key, on the
 * server's clock. The client stays the application's: this store never closes it.
 */
final class JedisStoreOperations implements StoreOperations {
    private static final int SCAN_BATCH = 500;

    /** A script: its text and SHA-1 ({@code EVALSHA} first, {@code EVAL} when not cached). */
    private static final class Script {
        final String text;
        final String sha;

        Script(String text) {
            this.text = text;
            try {
                this.sha =
                        HexFormat.of()
                                .formatHex(
                                        MessageDigest.getInstance("SHA-1")
                                                .digest(text.getBytes(StandardCharsets.UTF_8)));
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    private final UnifiedJedis client;
    private final String prefix;
    private final Map<String, Script> scripts = new HashMap<>();

    /**
     * The hash fields the claim script's {@code HMGET} answers, in order: the native store's {@code
     * RECORD_FIELDS}, then {@code outcome_kind} (handed over with the scripts).
     */
    private final String[] fields;

    JedisStoreOperations(UnifiedJedis client, String prefix, String[] pairs) {
        this.client = java.util.Objects.requireNonNull(client, "client");
        this.prefix = prefix == null ? "idemkit:" : prefix;
        String[] recordFields = new String[0];
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            if (pairs[i].equals("record_fields")) {
                recordFields = pairs[i + 1].split(",");
            } else {
                scripts.put(pairs[i], new Script(pairs[i + 1]));
            }
        }
        this.fields = recordFields;
    }

    /** {@code <prefix><t>:<key>}: {@code t} is {@code _}, or {@code t} + hex of the tenant. */
    private String redisKey(RecordId id) {
        return prefix + tenantSegment(id.tenant()) + ":" + id.key();
    }

    static String tenantSegment(String tenant) {
        if (tenant == null) {
            return "_";
        }
        return "t" + HexFormat.of().formatHex(tenant.getBytes(StandardCharsets.UTF_8));
    }

    private Object run(String name, String key, String... args) {
        // Nothing is sent once the executor no longer waits for the answer (its deadline passed).
        dev.idemkit.StoreDeadline.millisLeft();
        Script s = scripts.get(name);
        List<String> keys = List.of(key);
        List<String> argv = List.of(args);
        try {
            return client.evalsha(s.sha, keys, argv);
        } catch (JedisNoScriptException notCached) {
            return client.eval(s.text, keys, argv);
        }
    }

    @Override
    public ClaimResult claim(ClaimRequest r) {
        long leaseMs = Math.min(r.leaseMs(), MAX_SPAN_MS);
        long ttlMs = Math.min(r.ttlMs(), MAX_SPAN_MS);
        String key = redisKey(r.id());
        // Record v2, as the native store: a free key is claimed, or a completed record answered,
        // by one plain SET ... NX GET PX (lease + ttl). A claim to judge on the server's clock, a
        // failure to replace, a v1 record (WRONGTYPE) or an older server go to the claim script.
        if (leaseMs + ttlMs > 0) {
            if (!clockSet) {
                clockSeen(number(((List<?>) run("get", prefix + "_:" + "0".repeat(64))).get(0)));
            }
            byte[] found;
            boolean plain = true;
            dev.idemkit.StoreDeadline.millisLeft();
            try {
                found =
                        client.setGet(
                                key.getBytes(StandardCharsets.UTF_8),
                                claimValue(r, leaseMs, ttlMs),
                                SetParams.setParams().nx().px(leaseMs + ttlMs));
            } catch (JedisDataException notPlain) {
                found = null;
                plain = false;
            }
            if (plain) {
                long now = clockNow();
                if (found == null) {
                    return ClaimResult.acquired(now, now + leaseMs);
                }
                StoredRecord done = completedV2(found, r.id());
                if (done != null) {
                    now = Math.min(now, done.expiresAt() - 1);
                    if (!r.takesOver(done, now)) {
                        return ClaimResult.found(now, done);
                    }
                }
            }
        }
        List<?> reply =
                (List<?>)
                        run(
                                "claim",
                                key,
                                r.token(),
                                Long.toString(leaseMs),
                                Long.toString(ttlMs),
                                r.retryFailure() ? "1" : "0",
                                Integer.toString(StoredRecord.FORMAT),
                                r.id().key(),
                                r.scope(),
                                r.id().tenant() == null ? "0" : "1",
                                r.id().tenant() == null ? "" : r.id().tenant(),
                                r.fingerprint() == null ? "" : r.fingerprint(),
                                r.payloadChecked() ? "1" : "0");
        String answer = text(reply.get(0));
        long now = number(reply.get(1));
        clockSeen(now);
        if ("acquired".equals(answer)) {
            return ClaimResult.acquired(now, number(reply.get(2)));
        }
        return ClaimResult.found(now, fromValues((List<?>) reply.get(2)));
    }

    // --- record v2 (src/store/redis/scripts/prelude.lua) ---

    /**
     * {@code 2p|token||lease_ms|ttl_ms||fingerprint|<n>|scope}: a fresh claim (its times come from
     * the key's PEXPIRETIME, on the server's clock; n is the scope's length in UTF-8 bytes).
     */
    private static byte[] claimValue(ClaimRequest r, long leaseMs, long ttlMs) {
        byte[] scope = r.scope().getBytes(StandardCharsets.UTF_8);
        String head =
                "2p|"
                        + r.token()
                        + "||"
                        + leaseMs
                        + "|"
                        + ttlMs
                        + "||"
                        + (r.fingerprint() == null ? "" : r.fingerprint())
                        + "|"
                        + scope.length
                        + "|";
        byte[] h = head.getBytes(StandardCharsets.US_ASCII);
        byte[] out = java.util.Arrays.copyOf(h, h.length + scope.length);
        System.arraycopy(scope, 0, out, h.length, scope.length);
        return out;
    }

    /**
     * A completed v2 record ({@code 2<kind>|token|claimed_at|lease_ms|ttl_ms|expires_at|
     * fingerprint|<n>|scope outcome}), or null for anything else (a claim in progress, a v1 or
     * foreign value): the claim script judges those.
     */
    private static StoredRecord completedV2(byte[] v, RecordId id) {
        if (v.length < 3 || v[0] != '2' || v[2] != '|') {
            return null;
        }
        String kind =
                switch (v[1]) {
                    case 's' -> "success";
                    case 'f' -> "failure";
                    case 't' -> "too_large";
                    case 'i' -> "indeterminate";
                    default -> null;
                };
        if (kind == null) {
            return null;
        }
        String[] f = new String[7];
        int at = 3;
        for (int i = 0; i < 7; i++) {
            int bar = at;
            while (bar < v.length && v[bar] != '|') {
                bar++;
            }
            if (bar >= v.length) {
                return null;
            }
            f[i] = new String(v, at, bar - at, StandardCharsets.US_ASCII);
            at = bar + 1;
        }
        try {
            int n = Integer.parseInt(f[6]);
            if (at + n > v.length) {
                return null;
            }
            long claimedAt = Long.parseLong(f[1]);
            return new StoredRecord(
                    StoredRecord.FORMAT,
                    id.key(),
                    id.tenant(),
                    new String(v, at, n, StandardCharsets.UTF_8),
                    StoredRecord.State.COMPLETED,
                    f[0],
                    claimedAt,
                    claimedAt + Long.parseLong(f[2]),
                    Long.parseLong(f[3]),
                    Long.parseLong(f[4]),
                    new StoredOutcome(
                            kind, new String(v, at + n, v.length - at - n, StandardCharsets.UTF_8)),
                    f[5].isEmpty() ? null : f[5]);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /**
     * The server's clock as last read, moved on by {@link System#nanoTime()}: the {@code now} of a
     * claim one plain command settles (it only reports; the server judges every record).
     */
    private volatile long clockOffsetMs;

    private volatile boolean clockSet;

    private void clockSeen(long serverMs) {
        clockOffsetMs = serverMs - System.nanoTime() / 1_000_000;
        clockSet = true;
    }

    private long clockNow() {
        return System.nanoTime() / 1_000_000 + clockOffsetMs;
    }

    @Override
    public SettleResult complete(RecordId id, String token, StoredOutcome outcome, long ttlMs) {
        List<?> reply =
                (List<?>)
                        run(
                                "complete",
                                redisKey(id),
                                token,
                                outcome.json(),
                                outcome.kind(),
                                Long.toString(Math.min(ttlMs, MAX_SPAN_MS)));
        if ("recorded".equals(text(reply.get(0)))) {
            return SettleResult.settled();
        }
        return SettleResult.notDone(reply.size() > 2 ? fromHash((List<?>) reply.get(2)) : null);
    }

    @Override
    public boolean release(RecordId id, String token) {
        return number(run("release", redisKey(id), token)) == 1;
    }

    @Override
    public ReadResult get(RecordId id) {
        List<?> reply = (List<?>) run("get", redisKey(id));
        List<?> flat = (List<?>) reply.get(1);
        return new ReadResult(number(reply.get(0)), flat.isEmpty() ? null : fromHash(flat));
    }

    /**
     * One page of at most {@code limit} live records, in SCAN order, with the native store's cursor
     * ({@code r1.<scan>.<pending>}, or {@code c1/<host:port>/<scan>/<pending>} on a cluster, whose
     * primaries are scanned one after the other in name order). A SCAN step answers about {@code
     * COUNT} keys, sometimes more; the keys a page has no room for travel in the cursor ({@code
     * pending}) and start the next page, so {@code limit} is honoured exactly and every record
     * present for the whole listing is returned once (SCAN's own promise), without holding more
     * than one SCAN step of keys. A page may hold fewer records (the core drops those of another
     * status), even none after {@value #LIST_SCAN_STEPS} steps over other keys; only a null cursor
     * ends the listing.
     */
    @Override
    public ListResult list(ListRequest request) {
        boolean cluster = client instanceof RedisClusterClient;
        ListCursor position = ListCursor.parse(request.cursor(), cluster);
        int limit = request.limit() <= 0 ? 1000 : request.limit();
        String pattern =
                glob(prefix)
                        + (request.allTenants()
                                ? "*"
                                : glob(tenantSegment(request.tenant())) + ":*");
        ScanParams params =
                new ScanParams()
                        .match(pattern)
                        .count(Math.max(100, Math.min(limit, 2 * SCAN_BATCH)));
        List<String> nodes = cluster ? primaries() : List.of();
        if (cluster && request.cursor() == null) {
            position.node = nodes.isEmpty() ? null : nodes.get(0);
            if (position.node == null) {
                position.scan = null;
            }
        }
        long now = 0;
        List<StoredRecord> records = new ArrayList<>();
        int steps = 0;
        while (true) {
            if (!position.pending.isEmpty()) {
                while (!position.pending.isEmpty() && records.size() < limit) {
                    List<?> reply = (List<?>) run("get", prefix + position.pending.remove(0));
                    now = Math.max(now, number(reply.get(0)));
                    List<?> flat = (List<?>) reply.get(1);
                    if (!flat.isEmpty()) {
                        records.add(fromHash(flat));
                    }
                }
                if (records.size() >= limit) {
                    break;
                }
                continue;
            }
            if (position.scan == null) {
                if (position.advance(nodes)) {
                    continue;
                }
                break;
            }
            if (steps >= LIST_SCAN_STEPS && !records.isEmpty()) {
                break;
            }
            if (steps >= LIST_SCAN_STEPS * 4) {
                break;
            }
            steps++;
            ScanResult<String> step = scanStep(position.node, position.scan, params);
            position.scan =
                    ScanParams.SCAN_POINTER_START.equals(step.getCursor())
                            ? null
                            : step.getCursor();
            for (String key : step.getResult()) {
                if (key.startsWith(prefix) && isRecordSuffix(key.substring(prefix.length()))) {
                    position.pending.add(key.substring(prefix.length()));
                }
            }
        }
        // A node that finished hands over to the next one, so the cursor ends after the last.
        position.advance(nodes);
        if (now == 0) {
            now = number(((List<?>) run("get", prefix + "_:" + "0".repeat(64))).get(0));
        }
        return new ListResult(now, records, position.render());
    }

    /** SCAN steps a page takes before it answers with the records it found (4x when none). */
    private static final int LIST_SCAN_STEPS = 32;

    /** One SCAN step on the server, or on the cluster primary {@code node} ({@code host:port}). */
    private ScanResult<String> scanStep(String node, String cursor, ScanParams params) {
        if (node == null) {
            return client.scan(cursor, params);
        }
        ConnectionPool pool = ((RedisClusterClient) client).getClusterNodes().get(node);
        if (pool == null) {
            throw new IllegalStateException(
                    "the cluster node "
                            + node
                            + " of the list cursor is no longer known to the client; start the"
                            + " listing again");
        }
        try (Connection c = pool.getResource()) {
            return new Jedis(c).scan(cursor, params);
        }
    }

    /** The cluster's primaries ({@code host:port}), in name order. */
    private List<String> primaries() {
        List<String> names = new ArrayList<>();
        for (Map.Entry<String, ConnectionPool> node :
                ((RedisClusterClient) client).getClusterNodes().entrySet()) {
            try (Connection c = node.getValue().getResource()) {
                if (new Jedis(c).role().get(0).toString().equals("master")) {
                    names.add(node.getKey());
                }
            }
        }
        java.util.Collections.sort(names);
        return names;
    }

    /** {@code <t>:<key>}: {@code _} or {@code t} + lowercase hex, then 64 lowercase hex digits. */
    static boolean isRecordSuffix(String suffix) {
        int colon = suffix.indexOf(':');
        if (colon < 0) {
            return false;
        }
        String t = suffix.substring(0, colon);
        String key = suffix.substring(colon + 1);
        boolean tenantOk =
                t.equals("_")
                        || (t.startsWith("t") && t.length() % 2 == 1 && lowerHex(t.substring(1)));
        return tenantOk && key.length() == 64 && lowerHex(key);
    }

    private static boolean lowerHex(String text) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
                return false;
            }
        }
        return true;
    }

    /**
     * A {@code list} position, as the native Redis store renders it: on a cluster the primary being
     * scanned, where its SCAN is (null when it finished) and the keys (after the prefix) it
     * returned that the previous page had no room for.
     */
    static final class ListCursor {
        String node;
        String scan;
        final List<String> pending = new ArrayList<>();

        static ListCursor parse(String text, boolean cluster) {
            ListCursor c = new ListCursor();
            if (text == null) {
                c.scan = ScanParams.SCAN_POINTER_START;
                return c;
            }
            IllegalArgumentException bad =
                    new IllegalArgumentException(
                            "bad list cursor " + text + " for the Redis store");
            String scan;
            String pending;
            if (cluster) {
                if (!text.startsWith("c1/")) {
                    throw bad;
                }
                String[] parts = text.substring(3).split("/", 3);
                if (parts.length != 3 || parts[0].lastIndexOf(':') <= 0) {
                    throw bad;
                }
                c.node = parts[0];
                scan = parts[1];
                pending = parts[2];
            } else {
                if (!text.startsWith("r1.")) {
                    throw bad;
                }
                String rest = text.substring(3);
                int dot = rest.indexOf('.');
                if (dot < 0) {
                    throw bad;
                }
                scan = rest.substring(0, dot);
                pending = rest.substring(dot + 1);
            }
            if (scan.equals("-")) {
                c.scan = null;
            } else {
                try {
                    Long.parseUnsignedLong(scan);
                } catch (NumberFormatException e) {
                    throw bad;
                }
                c.scan = scan;
            }
            if (!pending.isEmpty()) {
                for (String suffix : pending.split(",", -1)) {
                    if (!isRecordSuffix(suffix)) {
                        throw bad;
                    }
                    c.pending.add(suffix);
                }
            }
            return c;
        }

        /** Moves to the next primary (in {@code nodes}' order) once this one is done. */
        boolean advance(List<String> nodes) {
            if (scan != null || !pending.isEmpty() || node == null) {
                return false;
            }
            for (String next : nodes) {
                if (next.compareTo(node) > 0) {
                    node = next;
                    scan = ScanParams.SCAN_POINTER_START;
                    return true;
                }
            }
            return false;
        }

        String render() {
            if (scan == null && pending.isEmpty()) {
                return null;
            }
            String at = scan == null ? "-" : scan;
            String keys = String.join(",", pending);
            return node == null ? "r1." + at + "." + keys : "c1/" + node + "/" + at + "/" + keys;
        }
    }

    @Override
    public SettleResult resolve(
            RecordId id, String expectedToken, StoredOutcome outcome, long ttlMs) {
        List<?> reply =
                (List<?>)
                        run(
                                "resolve",
                                redisKey(id),
                                expectedToken,
                                outcome == null ? "release" : "complete",
                                outcome == null ? "" : outcome.json(),
                                outcome == null ? "" : outcome.kind(),
                                Long.toString(Math.min(ttlMs, MAX_SPAN_MS)));
        String answer = text(reply.get(0));
        if ("done".equals(answer)) {
            return SettleResult.settled();
        }
        return SettleResult.notDone(reply.size() > 2 ? fromHash((List<?>) reply.get(2)) : null);
    }

    @Override
    public TakeOverResult takeOver(TakeOverRequest r) {
        List<?> reply =
                (List<?>)
                        run(
                                "take_over",
                                redisKey(r.id()),
                                r.expectedToken(),
                                r.token(),
                                Long.toString(Math.min(r.leaseMs(), MAX_SPAN_MS)),
                                Long.toString(Math.min(r.ttlMs(), MAX_SPAN_MS)));
        long now = number(reply.get(1));
        if ("acquired".equals(text(reply.get(0)))) {
            return TakeOverResult.acquired(now, number(reply.get(2)));
        }
        return TakeOverResult.lost(now, reply.size() > 2 ? fromHash((List<?>) reply.get(2)) : null);
    }

    @Override
    public boolean delete(RecordId id) {
        boolean live = get(id).record() != null;
        client.del(redisKey(id));
        return live;
    }

    @Override
    public long forget(String tenant) {
        long removed = 0;
        // Only keys of a record's shape, each deleted by the core's forget_one script, which
        // checks that it is a record: an application's key under the prefix is never touched.
        for (String key : scanAll(glob(prefix) + glob(tenantSegment(tenant)) + ":*")) {
            if (key.startsWith(prefix) && isRecordSuffix(key.substring(prefix.length()))) {
                removed += number(run("forget_one", key));
            }
        }
        return removed;
    }

    @Override
    public long purgeExpired() {
        long removed = 0;
        for (String key : scanAll(glob(prefix) + "*")) {
            removed += number(run("purge_one", key));
        }
        return removed;
    }

    @Override
    public String describe() {
        return "redis (Jedis " + client.getClass().getSimpleName() + ") prefix " + prefix;
    }

    // --- Redis ---

    /** {@code crate::policy::MAX_SPAN} in milliseconds: leases and TTLs are capped at it. */
    private static final long MAX_SPAN_MS = 100L * 365 * 24 * 3600 * 1000;

    /** Every key matching {@code pattern}, on every primary of a cluster, SCANned in batches. */
    private Set<String> scanAll(String pattern) {
        Set<String> keys = new LinkedHashSet<>();
        ScanParams params = new ScanParams().match(pattern).count(SCAN_BATCH);
        if (client instanceof RedisClusterClient) {
            for (ConnectionPool pool : ((RedisClusterClient) client).getClusterNodes().values()) {
                try (Connection c = pool.getResource()) {
                    Jedis node = new Jedis(c);
                    if (!node.role().get(0).toString().equals("master")) {
                        continue;
                    }
                    scan(node::scan, params, keys::add);
                }
            }
        } else {
            scan(client::scan, params, keys::add);
        }
        return keys;
    }

    private interface Scanner {
        ScanResult<String> scan(String cursor, ScanParams params);
    }

    private static void scan(Scanner scanner, ScanParams params, Consumer<String> found) {
        String cursor = ScanParams.SCAN_POINTER_START;
        do {
            ScanResult<String> page = scanner.scan(cursor, params);
            page.getResult().forEach(found);
            cursor = page.getCursor();
        } while (!ScanParams.SCAN_POINTER_START.equals(cursor));
    }

    /** {@code text} with the glob characters of {@code MATCH} patterns escaped. */
    static String glob(String text) {
        StringBuilder out = new StringBuilder();
        for (char c : text.toCharArray()) {
            if ("*?[]\\^-".indexOf(c) >= 0) {
                out.append('\\');
            }
            out.append(c);
        }
        return out.toString();
    }

    private static String text(Object value) {
        if (value == null) {
            return null;
        }
        if (value instanceof byte[]) {
            return new String((byte[]) value, StandardCharsets.UTF_8);
        }
        return value.toString();
    }

    private static long number(Object value) {
        if (value instanceof Number) {
            return ((Number) value).longValue();
        }
        return Long.parseLong(text(value));
    }

    /** A record from the values of the claim script's {@code HMGET} (in {@link #fields} order). */
    private StoredRecord fromValues(List<?> values) {
        Map<String, String> f = new HashMap<>();
        for (int i = 0; i < fields.length && i < values.size(); i++) {
            if (values.get(i) != null) {
                f.put(fields[i], text(values.get(i)));
            }
        }
        return record(f);
    }

    /** A record from a flat {@code HGETALL} answer. */
    private static StoredRecord fromHash(List<?> flat) {
        Map<String, String> f = new HashMap<>();
        for (int i = 0; i + 1 < flat.size(); i += 2) {
            f.put(text(flat.get(i)), text(flat.get(i + 1)));
        }
        return record(f);
    }

    private static StoredRecord record(Map<String, String> f) {
        String key = f.get("key");
        int format = Integer.parseInt(required(f, "v", key));
        if (format != StoredRecord.FORMAT) {
            throw new IllegalStateException(
                    "record "
                            + key
                            + " has format "
                            + format
                            + ", not "
                            + StoredRecord.FORMAT
                            + "; upgrade idemkit to read it");
        }
        String outcome = f.get("outcome");
        String kind = f.get("outcome_kind");
        return new StoredRecord(
                format,
                required(f, "key", key),
                f.get("tenant"),
                required(f, "scope", key),
                "completed".equals(f.get("state"))
                        ? StoredRecord.State.COMPLETED
                        : StoredRecord.State.IN_PROGRESS,
                required(f, "token", key),
                Long.parseLong(required(f, "claimed_at", key)),
                Long.parseLong(required(f, "lease_end", key)),
                Long.parseLong(required(f, "ttl_ms", key)),
                Long.parseLong(required(f, "expires_at", key)),
                outcome == null
                        ? null
                        : kind == null
                                ? StoredOutcome.ofJson(outcome)
                                : new StoredOutcome(kind, outcome),
                f.get("fingerprint"));
    }

    private static String required(Map<String, String> f, String field, String key) {
        String v = f.get(field);
        if (v == null) {
            throw new IllegalStateException("record " + key + " has no `" + field + "`");
        }
        return v;
    }
}
