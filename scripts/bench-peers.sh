#!/usr/bin/env bash
# idemkit against the servers' floor and a naive (NOT atomic) peer, in one run, on a private
# Redis and a private PostgreSQL this script starts and stops itself (so that the server
# counters see only this run), and prints the table of BENCHMARKS.md's issue-16 section.
#
#   scripts/bench-peers.sh [--seconds N] [--before BINARY]
#
#   floors: `redis-benchmark` GET of one existing key (a repeat's floor) and SET NX of new keys
#           (one round trip; an executed call needs two), `pgbench -M prepared` SELECT by key and
#           a single-row INSERT ... ON CONFLICT DO UPDATE (one durable commit; an executed call
#           commits twice); p50 of one client and throughput of 8;
#   peer and idemkit (Rust): benches/peers.rs — p50 of one caller, throughput of 8, and per call
#           the client's CPU and context switches, the server's CPU (/proc), Redis command time
#           and count (INFO commandstats) and PostgreSQL WAL (pg_stat_wal); bytes per Redis
#           record (MEMORY USAGE: idemkit's, the same record in the v1 layout, the peer's);
#   C face: the calls the C library makes (capi/src/call.rs: prepare, a blocking advance, a
#           blocking report) from plain threads, as a C or JNI caller does: the same counters;
#   memory: a hit through the Rust face against a SHA-256 + mutex-map (benches/peers.rs);
#   --before BINARY: also runs a peers binary built from an earlier commit (copy
#           target/release/deps/peers-* away before rebuilding), on fresh idemkit records and
#           table, and adds its column: before and after in one run.
#   --java: also runs the Java face on the same private servers, between the clients and the
#           second floors: `scripts/bench-java.sh --face --rounds 1` (a Redis hit and executed
#           call through ToolDispatcher against naive Jedis GET / GET + SET EX peers, and a
#           memory-store hit against SHA-256 + ConcurrentHashMap, caller lanes on then off) and
#           `scripts/bench-java.sh --stores --no-jmh --rounds 1` (Redis, Jedis, PostgreSQL and JDBC
#           stores through the Java face), and adds the Java rows.
#
# Needs redis-server, redis-benchmark, PostgreSQL's initdb/pg_ctl/pgbench (as scripts/services.sh).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
SECONDS_PER_RUN=3
BEFORE=""
JAVA=0
while (($#)); do
    case "$1" in
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --before) BEFORE=$(readlink -f "$2"); shift 2 ;;
    --java) JAVA=1; shift ;;
    *) echo "usage: $0 [--seconds N] [--before BINARY] [--java]" >&2; exit 2 ;;
    esac
done

log() { echo "bench-peers: $*" >&2; }
REDIS_PORT=${PEERS_REDIS_PORT:-6491}
PG_PORT=${PEERS_PG_PORT:-5491}
# PostgreSQL refuses to run as root: its data lives where the `postgres` user can reach it.
WORK="$(mktemp -d /tmp/idemkit-peers.XXXXXX)"
chmod 755 "$WORK"
as_postgres() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
PG_BIN="$(dirname "$(readlink -f "$(command -v initdb)")")"

REDIS_PID=""
cleanup() {
    [[ -n "$REDIS_PID" ]] && kill "$REDIS_PID" 2>/dev/null || true
    [[ -f "$WORK/pg/postmaster.pid" ]] && as_postgres "$PG_BIN/pg_ctl" -D "$WORK/pg" -m fast -w stop >/dev/null 2>&1 || true
    # PEERS_KEEP=<dir>: keep the raw results (RESULT lines, floors) there.
    [[ -n "${PEERS_KEEP:-}" && -d "$WORK/out" ]] && cp -r "$WORK/out/." "$PEERS_KEEP/" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

log "building benches/peers.rs"
cargo bench --bench peers --features redis,postgres --no-run >&2 2>/dev/null ||
    cargo bench --bench peers --features redis,postgres --no-run >&2

log "starting a private Redis on $REDIS_PORT and PostgreSQL on $PG_PORT ($WORK)"
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --maxmemory-policy noeviction --daemonize no >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
mkdir "$WORK/pg"
if [[ $(id -u) -eq 0 ]]; then chown postgres: "$WORK" "$WORK/pg"; fi
as_postgres "$PG_BIN/initdb" -D "$WORK/pg" -U postgres --auth=trust -E UTF8 --locale=C >"$WORK/initdb.log" 2>&1
cat >>"$WORK/pg/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$WORK'
# WAL per call should count the calls only: no checkpoint during the run (its full-page images
# would land on whichever phase came next), no autovacuum writing WAL of its own.
checkpoint_timeout = '1h'
max_wal_size = '10GB'
autovacuum = off
EOF
as_postgres "$PG_BIN/pg_ctl" -D "$WORK/pg" -l "$WORK/pg.log" -w -t 60 start >/dev/null
for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" PING >/dev/null 2>&1 && break; sleep 0.1; done
PG=(psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -Atq)
export PEERS_REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
export PEERS_POSTGRES_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres"
export PEERS_REDIS_PID=$REDIS_PID
PEERS_POSTGRES_PID="$(head -1 "$WORK/pg/postmaster.pid")"
export PEERS_POSTGRES_PID
OUT="$WORK/out"
mkdir "$OUT"

# --- the floors ----------------------------------------------------------------------------
redis_floor() { # name clients args... : prints "p50_us ops"
    local name=$1 clients=$2
    shift 2
    redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -c "$clients" -n $((clients == 1 ? 40000 : 150000)) \
        -r 100000000 -q "$@" 2>/dev/null | tr '\r' '\n' | grep -E 'requests per second' | tail -1 |
        python3 -c "
import re, sys
line = sys.stdin.read()
ops = float(re.search(r'([0-9.]+) requests per second', line).group(1))
p50 = float(re.search(r'p50=([0-9.]+) msec', line).group(1)) * 1000
print(f'$name {p50:.1f} {ops:.0f}')"
}
pg_floor() { # name clients script : prints "name p50_us ops"
    local name=$1 clients=$2 script=$3 dir
    dir="$(mktemp -d "$WORK/log-$1.XXXX")"
    chmod 777 "$dir"
    (cd "$dir" && pgbench -h 127.0.0.1 -p "$PG_PORT" -U postgres -n -M prepared -c "$clients" \
        -j "$((clients < 2 ? 1 : 2))" -T "$SECONDS_PER_RUN" -l -f "$script" postgres >"$dir/out" 2>&1)
    python3 - "$dir" "$name" <<'PY'
import glob, re, sys
d, name = sys.argv[1], sys.argv[2]
lat = sorted(int(l.split()[2]) for f in glob.glob(d + "/pgbench_log.*") for l in open(f))
tps = float(re.search(r"tps = ([0-9.]+)", open(d + "/out").read()).group(1))
print(f"{name} {lat[len(lat) // 2]:.1f} {tps:.0f}")
PY
}
redis-cli -p "$REDIS_PORT" SET floor:existing msg-1 >/dev/null
"${PG[@]}" -c "CREATE TABLE floor_kv (k bigint PRIMARY KEY, v text NOT NULL);
    INSERT INTO floor_kv SELECT i, 'msg-1' FROM generate_series(1, 10000) i; ANALYZE floor_kv"
printf '%s\n' '\set k random(1, 10000)' 'SELECT v FROM floor_kv WHERE k = :k;' >"$WORK/select.sql"
printf '%s\n' '\set k random(20000, 1000000000000)' \
    "INSERT INTO floor_kv (k, v) VALUES (:k, 'msg-1') ON CONFLICT (k) DO UPDATE SET v = excluded.v;" >"$WORK/write.sql"
chmod 644 "$WORK"/*.sql

floors() {
    for clients in 1 8; do
        redis_floor "redis_get_c$clients" "$clients" GET floor:existing
        redis_floor "redis_setnx_c$clients" "$clients" SET 'floor:__rand_int__' msg-1 NX
        pg_floor "pg_select_c$clients" "$clients" "$WORK/select.sql"
        pg_floor "pg_write_c$clients" "$clients" "$WORK/write.sql"
    done
}
# The machine's load drifts: the floors run before and after the clients, and count as their mean.
log "floors (1)"
floors | tee "$OUT/floor1.txt" >&2
if [[ -n "$BEFORE" ]]; then
    log "the earlier build: memory, Redis and PostgreSQL"
    "$BEFORE" --seconds "$SECONDS_PER_RUN" 2>/dev/null | tee "$OUT/before.txt" >&2
    # The current build makes its table afresh, with every migration of its own.
    "${PG[@]}" -c "DROP TABLE IF EXISTS idemkit_peers"
fi
log "memory, Redis and PostgreSQL: peer and idemkit"
if ! cargo bench -q --bench peers --features redis,postgres -- --seconds "$SECONDS_PER_RUN" 2>"$OUT/clients.err" |
    tee "$OUT/clients.txt" >&2 || grep -q panicked "$OUT/clients.err"; then
    cat "$OUT/clients.err" >&2
    exit 1
fi
WAL_FLOOR_BEFORE=$("${PG[@]}" -c "SELECT wal_records || ' ' || wal_bytes FROM pg_stat_wal")
pgbench -h 127.0.0.1 -p "$PG_PORT" -U postgres -n -M prepared -c 1 -t 5000 -f "$WORK/write.sql" postgres >/dev/null 2>&1
WAL_FLOOR_AFTER=$("${PG[@]}" -c "SELECT wal_records || ' ' || wal_bytes FROM pg_stat_wal")
echo "pg_write_wal $WAL_FLOOR_BEFORE $WAL_FLOOR_AFTER 5000" >"$OUT/wal.txt"
if ((JAVA)); then
    log "the Java face on the same servers (scripts/bench-java.sh --face, then --stores --no-jmh)"
    IDEMKIT_REDIS_URL=$PEERS_REDIS_URL IDEMKIT_POSTGRES_URL=$PEERS_POSTGRES_URL \
        scripts/bench-java.sh --face --rounds 1 | tee "$OUT/java-face.txt" >&2
    IDEMKIT_REDIS_URL=$PEERS_REDIS_URL IDEMKIT_POSTGRES_URL=$PEERS_POSTGRES_URL \
        scripts/bench-java.sh --stores --no-jmh --rounds 1 | tee "$OUT/java-stores.txt" >&2
fi
log "floors (2)"
floors | tee "$OUT/floor2.txt" >&2

# --- the table -----------------------------------------------------------------------------
python3 - "$OUT" <<'PY'
import re, sys
out = sys.argv[1]
floor = {}
for f in ("floor1.txt", "floor2.txt"):
    for line in open(f"{out}/{f}"):
        name, p50, ops = line.split()
        floor.setdefault(name, []).append((float(p50), float(ops)))
fl = {k: (sum(p for p, _ in v) / len(v), sum(o for _, o in v) / len(v)) for k, v in floor.items()}
res = {}
for line in open(f"{out}/clients.txt"):
    if not line.startswith("RESULT "):
        continue
    kv = dict(p.split("=", 1) for p in line.split()[1:])
    res[(kv["path"], kv["impl"])] = kv
w = open(f"{out}/wal.txt").read().split()
wal_floor = ((float(w[3]) - float(w[1])) / float(w[5]), (float(w[4]) - float(w[2])) / float(w[5]))

def g(path, impl, key):
    return float(res[(path, impl)][key])

import os
before = {}
if os.path.exists(f"{out}/before.txt"):
    for line in open(f"{out}/before.txt"):
        if line.startswith("RESULT "):
            kv = dict(p.split("=", 1) for p in line.split()[1:])
            before[(kv["path"], kv["impl"])] = kv

# Issue 29's targets: p50 against the floor and against the peer, 8-caller throughput against
# the peer (None: no such target).
rows = [
    ("Redis repeat", "redis_repeat", "GET", fl["redis_get_c1"][0], fl["redis_get_c8"][1], 1.25, 1.1, 0.9),
    ("Redis executed", "redis_executed", "2 × SET NX", 2 * fl["redis_setnx_c1"][0], fl["redis_setnx_c8"][1] / 2, None, 1.15, 0.9),
    ("PostgreSQL repeat", "postgres_repeat", "SELECT by key", fl["pg_select_c1"][0], fl["pg_select_c8"][1], 1.2, 1.1, 0.9),
    ("PostgreSQL executed", "postgres_executed", "2 durable commits", 2 * fl["pg_write_c1"][0], fl["pg_write_c8"][1] / 2, 1.15, None, None),
]
def judged(value, target, at_most=True):
    if target is None:
        return f"{value:.2f}×"
    ok = value <= target if at_most else value >= target
    return f"{value:.2f}×, {'≤' if at_most else '≥'} {target}: {'met' if ok else 'missed'}"
print("| path | floor p50 / 8-client ops/s | naive peer p50 / 8-caller calls/s | idemkit Rust before: p50 (÷ floor, ÷ peer) / calls/s (÷ peer) | idemkit Rust after: p50 (÷ floor; ÷ peer) / calls/s (÷ peer) |")
print("|---|---|---|---|---|")
for label, path, fname, fp50, fops, ftarget, ptarget, otarget in rows:
    pp50, pops = g(path, "peer", "p50_us"), g(path, "peer", "ops8")
    ip50, iops = g(path, "idemkit", "p50_us"), g(path, "idemkit", "ops8")
    b = before.get((path, "idemkit"))
    bcol = f"{float(b['p50_us']):.0f} µs ({float(b['p50_us']) / fp50:.2f}×, {float(b['p50_us']) / pp50:.2f}×) / {float(b['ops8']):,.0f} ({float(b['ops8']) / pops:.2f}×)" if b else "—"
    print(f"| {label} | {fname}: {fp50:.0f} µs / {fops:,.0f} | {pp50:.0f} µs / {pops:,.0f} | {bcol} | "
          f"{ip50:.0f} µs ({judged(ip50 / fp50, ftarget)}; {judged(ip50 / pp50, ptarget)}) / {iops:,.0f} ({judged(iops / pops, otarget, False)}) |")
pm, im = g("memory_repeat", "peer", "ns"), g("memory_repeat", "idemkit", "ns")
b = before.get(("memory_repeat", "idemkit"))
bcol = f"{float(b['ns']):.0f} ns ({float(b['ns']) / pm:.1f}× the map)" if b else "—"
print(f"| memory repeat (Rust face) | — | {pm:.0f} ns (SHA-256 + mutex map) | {bcol} | {im:.0f} ns ({im / pm:.1f}× the map; target ≤ 400 ns: {'met' if im <= 400 else 'missed'}) |")
print()
print("Per call, the same run (client: this benchmark process; server: the private server's processes):")
print()
print("| path | impl | client CPU µs | context switches | server CPU µs | Redis command µs | Redis GET/SET/EVALSHA (scripts) | WAL records | WAL bytes |")
print("|---|---|---|---|---|---|---|---|---|")
for path in ("redis_repeat", "redis_executed", "postgres_repeat", "postgres_executed"):
    for impl in ("peer", "idemkit before", "idemkit", "C face before", "C face"):
        kv = {"idemkit before": before.get((path, "idemkit")), "C face before": before.get((path, "face")),
              "C face": res.get((path, "face"))}.get(impl) if impl != "peer" and impl != "idemkit" else res[(path, impl)]
        if kv is None:
            continue
        print(f"| {path.replace('_', ' ')} | {impl} | {kv['client_cpu_us']} | {kv['ctx_switches']} | "
              f"{kv.get('server_cpu_us', '—')} | {kv.get('cmd_usec', '—')} | {kv.get('cmd_calls', '—')} ({kv.get('scripts', '—')}) | {kv.get('wal_records', '—')} | {kv.get('wal_bytes', '—')} |")
print(f"| postgres floor (pgbench write, one commit) | — | — | — | — | — | — | {wal_floor[0]:.1f} | {wal_floor[1]:.0f} |")
if ("redis_record", "idemkit") in res:
    rb = {impl: int(res[("redis_record", impl)]["bytes"]) for impl in ("idemkit", "idemkit_v1_layout", "peer")}
    print()
    print(f"Bytes per Redis record (MEMORY USAGE, a 64-hex key, a 20-byte result, no tenant): idemkit {rb['idemkit']} B "
          f"(target ≤ 250: {'met' if rb['idemkit'] <= 250 else 'missed'}), the same record in the v1 layout {rb['idemkit_v1_layout']} B, "
          f"the naive peer {rb['peer']} B ({rb['idemkit'] / rb['peer']:.2f}× the peer).")
print()
print("The C face (the calls of capi/src/call.rs from plain threads) against the Rust face and the peer, same run:")
print()
print("| path | impl | p50 µs | 8-thread calls/s | client CPU µs per call | context switches per call |")
print("|---|---|---|---|---|---|")
for path in ("redis_repeat", "redis_executed", "postgres_repeat", "postgres_executed"):
    for impl, label in (("peer", "peer (Rust, async)"), ("idemkit", "idemkit Rust face"),
                        ("face before", "idemkit C face before"), ("face", "idemkit C face")):
        kv = before.get((path, "face")) if impl == "face before" else res.get((path, impl))
        if kv is None:
            continue
        print(f"| {path.replace('_', ' ')} | {label} | {float(kv['p50_us']):.0f} | {float(kv['ops8']):,.0f} | "
              f"{kv['client_cpu_us']} | {kv['ctx_switches']} |")
if before:
    print()
    for path in ("redis_repeat", "redis_executed", "postgres_repeat", "postgres_executed"):
        b, a = before.get((path, "face")), res.get((path, "face"))
        if a and b:
            print(f"C face {path.replace('_', ' ')}, after ÷ before: p50 {float(a['p50_us']) / float(b['p50_us']):.2f}×, "
                  f"calls/s {float(a['ops8']) / float(b['ops8']):.2f}×, client CPU {float(a['client_cpu_us']) / float(b['client_cpu_us']):.2f}×, "
                  f"context switches {float(a['ctx_switches']) / float(b['ctx_switches']):.2f}×.")
print()
def ratio(path, key):
    return g(path, "idemkit", key) / g(path, "peer", key)
print(f"Ratios to the peer: Redis server CPU per call repeat {ratio('redis_repeat', 'server_cpu_us'):.2f}×, "
      f"executed {ratio('redis_executed', 'server_cpu_us'):.2f}×; Redis command time per call repeat {ratio('redis_repeat', 'cmd_usec'):.2f}×, "
      f"executed {ratio('redis_executed', 'cmd_usec'):.2f}× (target: server time ≤ 1.2×); "
      f"PostgreSQL WAL bytes per executed call {ratio('postgres_executed', 'wal_bytes'):.2f}× the peer's, "
      f"{g('postgres_executed', 'idemkit', 'wal_bytes') / (2 * wal_floor[1]):.2f}× two single-row commits (target ≤ 1.3×).")
java = {}
for f in ("java-face.txt", "java-stores.txt"):
    if os.path.exists(f"{out}/{f}"):
        for line in open(f"{out}/{f}"):
            if line.startswith("RESULT "):
                kv = dict(p.split("=", 1) for p in line.split()[1:])
                java.setdefault((f, kv["case"], kv["impl"]), kv)
if java:
    print()
    print("The Java face, same run (one calling thread; `bench-java.sh --stores` for the stores, `--face` for the peers, caller lanes on):")
    print()
    print("| path | idemkit Java p50 µs (÷ floor, target) | idemkit Rust p50 µs | naive Java peer p50 µs |")
    print("|---|---|---|---|")
    for label, path, case, store, fp50, target, peer_case in (
        ("Redis repeat", "redis_repeat", "store_hit", "redis", rows[0][3], 1.25, "redis_hit"),
        ("Redis executed", "redis_executed", "store_executed", "redis", rows[1][3], 1.15, "redis_executed"),
        ("PostgreSQL repeat", "postgres_repeat", "store_hit", "postgres", rows[2][3], 1.2, None),
        ("PostgreSQL executed", "postgres_executed", "store_executed", "postgres", rows[3][3], 1.15, None),
    ):
        j = java.get(("java-stores.txt", case, store))
        if not j:
            continue
        jp50 = float(j["p50_us"])
        peer = java.get(("java-face.txt", peer_case, "peer")) if peer_case else None
        print(f"| {label} | {jp50:.0f} ({jp50 / fp50:.2f}×, ≤ {target}: {'met' if jp50 / fp50 <= target else 'missed'}) | "
              f"{g(path, 'idemkit', 'p50_us'):.0f} | {peer['p50_us'] if peer else '—'} |")
    for case in ("redis_hit", "redis_executed", "memory_hit"):
        p, i = java.get(("java-face.txt", case, "peer")), java.get(("java-face.txt", case, "idemkit"))
        if p and i:
            print(f"\nJava {case.replace('_', ' ')} against its naive peer: mean {float(i['mean_us']):.2f} / {float(p['mean_us']):.2f} µs "
                  f"({float(i['mean_us']) / float(p['mean_us']):.2f}×), client CPU {float(i['cpu_us']):.2f} / {float(p['cpu_us']):.2f} µs "
                  f"({float(i['cpu_us']) / float(p['cpu_us']):.2f}×), context switches {float(i['ctx']):.2f} / {float(p['ctx']):.2f} per call.")
print()
print("Floor runs (before / after the clients): " + "; ".join(
    f"{k} " + " / ".join(f"{p:.0f} µs {o:,.0f}/s" for p, o in v) for k, v in sorted(floor.items())))
PY
