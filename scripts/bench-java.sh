#!/usr/bin/env bash
# JMH benchmarks of the Java binding against plain-Java baselines, in one run.
#
#   scripts/bench-java.sh                 all of DispatchBenchmark (about 2 minutes)
#   scripts/bench-java.sh 'idemkit_hit'   a subset (JMH regex), extra JMH options after it
#   scripts/bench-java.sh --stores [--rounds N] [--calls N] [--no-jmh] [JMH options]
#                                         StoreBenchmark: a repeat and an executed call through
#                                         ToolDispatcher on the native Redis store, the Jedis store
#                                         (RedisClient), the native PostgreSQL store and the JDBC
#                                         store (HikariCP pool on PgJDBC), all on the same servers;
#                                         the JMH set N times (default 2; --no-jmh: none), then the
#                                         same calls in one JVM with per-call counters (FacePeers
#                                         --stores: native, Java, native, Java; N rounds of --calls
#                                         calls, default 20000, a tenth of it for executed
#                                         PostgreSQL calls, ten times it for hits without a server): tables of p50, mean, client CPU,
#                                         context switches and the ratios Jedis ÷ native, JDBC ÷
#                                         native; also the native memory store against a map store
#                                         written in Java (spi): the bridge's own cost
#   scripts/bench-java.sh --face [--rounds N] [--calls N] [--memory-calls N]
#                                         FacePeers: per call wall time, process CPU and context
#                                         switches of a Redis hit / executed call through the Java
#                                         face against a naive Jedis GET (GET + SET EX) peer, and of
#                                         a memory-store hit against SHA-256 + ConcurrentHashMap;
#                                         N rounds (default 2) of a JVM with the caller lanes on
#                                         (IDEMKIT_CALLER_LANES unset: 8) then off (=0), A B A B;
#                                         in each, peer and idemkit interleaved 500 calls at a time
#   scripts/bench-java.sh --mcp [--rounds N] [--calls N]
#                                         McpCallBench (idemkit-mcp's tests, one JVM): a tools/call
#                                         through the MCP Java SDK's client and streamable HTTP of
#                                         an unprotected tool against the same body protected, with
#                                         new arguments (claim, body, completion) and repeated (a
#                                         replay); N rounds (default 10) of --calls (300) of each,
#                                         in blocks; the memory store, and Redis when
#                                         IDEMKIT_REDIS_URL is set
#
# --stores and --face run against IDEMKIT_REDIS_URL and IDEMKIT_POSTGRES_URL (--face: Redis only):
# the test servers (eval "$(scripts/services.sh env)") or servers of your own. Records go to the
# prefix idemkit-bench: and the table idemkit_bench_records, under a random tenant forgotten at the
# end. The script prints `uptime` before and after.
#
# Results: java/idemkit/target/jmh-result.json (jmh-stores-<round>.json for --stores,
# face-<lanes>-<round>.txt for --face) and the tables printed.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$REPO/java/idemkit/target"
if [[ ${1:-} == --mcp ]]; then
    shift
    MCP="$REPO/java/idemkit-mcp/target"
    mvn -q -f "$REPO/java/pom.xml" -pl idemkit-mcp -am test-compile dependency:build-classpath \
        -Dmdep.outputFile=target/bench-classpath.txt -Dmdep.includeScope=test -Dspotless.check.skip=true
    echo "uptime before: $(uptime)"
    # Tomcat's and the SDK's logs go to mcp-bench.log; a failure shows its end.
    status=0
    java -cp "$MCP/test-classes:$MCP/classes:$(cat "$MCP/bench-classpath.txt")" \
        dev.idemkit.mcp.McpCallBench "$@" 2>"$MCP/mcp-bench.log" | tee "$MCP/mcp-bench.txt" ||
        status=$?
    echo "uptime after: $(uptime)"
    if ((status != 0)); then
        tail -30 "$MCP/mcp-bench.log" >&2
    fi
    exit "$status"
fi
mvn -q -f "$REPO/java/pom.xml" -Pbench -DskipTests -pl idemkit package
CP="$OUT/classes:$(cat "$OUT/classpath.txt")"

need() {
    if [[ -z "${!1:-}" ]]; then
        echo "bench-java.sh: $1 is not set; run eval \"\$(scripts/services.sh env)\" first (or set it to a server of your own)" >&2
        exit 2
    fi
}

case "${1:-}" in
--stores)
    shift
    need IDEMKIT_REDIS_URL
    need IDEMKIT_POSTGRES_URL
    ROUNDS=2
    CALLS=()
    JMH=1
    while (($#)); do
        case "$1" in
        --rounds) ROUNDS=$2; shift 2 ;;
        --calls) CALLS=(--calls "$2"); shift 2 ;;
        --no-jmh) JMH=0; shift ;;
        *) break ;;
        esac
    done
    echo "uptime before: $(uptime)"
    if ((JMH)); then
        for round in $(seq "$ROUNDS"); do
            java -cp "$CP" org.openjdk.jmh.Main 'dev.idemkit.StoreBenchmark' \
                -rf json -rff "$OUT/jmh-stores-$round.json" "$@"
            echo "uptime after JMH round $round: $(uptime)"
        done
    fi
    # The same calls with per-call counters, native and Java store alternated in one JVM.
    java -Xms1g -Xmx1g -cp "$CP" dev.idemkit.FacePeers --stores --rounds "$ROUNDS" "${CALLS[@]}" |
        grep -v '^SLF4J' | tee "$OUT/stores-counters.txt"
    echo "uptime after the counters: $(uptime)"
    python3 - "$OUT" <<'PY'
import statistics, sys
out = sys.argv[1]
res = {}
for line in open(f"{out}/stores-counters.txt"):
    if line.startswith("RESULT "):
        kv = dict(p.split("=", 1) for p in line.split()[1:])
        res.setdefault((kv["case"], kv["impl"]), []).append(kv)
print()
print("Per call, one calling thread (each cell: the median of the alternated runs, their range in brackets):")
print()
print("| call | store | runs | p50 µs | mean µs | client CPU µs | context switches | Java ÷ native: p50 / mean / CPU |")
print("|---|---|---|---|---|---|---|---|")
def col(runs, key):
    v = [float(r[key]) for r in runs]
    return statistics.median(v), min(v), max(v)
for case in ("store_hit", "store_executed"):
    for store, native in (("redis", None), ("jedis", "redis"), ("postgres", None), ("jdbc", "postgres"), ("memory", None), ("spi", "memory")):
        runs = res.get((case, store))
        if not runs:
            continue
        cells = {k: col(runs, k) for k in ("p50_us", "mean_us", "cpu_us", "ctx")}
        ratio = "—"
        if native and res.get((case, native)):
            n = {k: col(res[(case, native)], k)[0] for k in ("p50_us", "mean_us", "cpu_us")}
            ratio = " / ".join(f"{cells[k][0] / n[k]:.2f}×" for k in ("p50_us", "mean_us", "cpu_us"))
        fmt = lambda c, d: f"{c[0]:.{d}f} [{c[1]:.{d}f}–{c[2]:.{d}f}]"
        print(f"| {case.split('_')[1]} | {store} | {len(runs)} | {fmt(cells['p50_us'], 1)} | {fmt(cells['mean_us'], 1)} | "
              f"{fmt(cells['cpu_us'], 1)} | {fmt(cells['ctx'], 2)} | {ratio} |")
PY
    ((JMH)) || exit 0
    python3 - "$OUT" "$ROUNDS" <<'PY'
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
print()
print("| round | call | store | p50 µs | mean µs | Java store ÷ native (p50 / mean) |")
print("|---|---|---|---|---|---|")
for r in range(1, rounds + 1):
    res = {}
    for b in json.load(open(f"{out}/jmh-stores-{r}.json")):
        m = b["primaryMetric"]
        res[(b["benchmark"].rsplit(".", 1)[1], b["params"]["store"])] = (m["scorePercentiles"]["50.0"], m["score"])
    for call in ("hit", "executed"):
        for store, native in (("redis", None), ("jedis", "redis"), ("postgres", None), ("jdbc", "postgres"), ("memory", None), ("spi", "memory")):
            if (call, store) not in res:
                continue
            p50, mean = res[(call, store)]
            ratio = "—"
            if native and (call, native) in res:
                np50, nmean = res[(call, native)]
                ratio = f"{p50 / np50:.2f}× / {mean / nmean:.2f}×"
            print(f"| {r} | {call} | {store} | {p50:.1f} | {mean:.1f} | {ratio} |")
PY
    ;;
--face)
    shift
    need IDEMKIT_REDIS_URL
    ROUNDS=2
    ARGS=()
    while (($#)); do
        case "$1" in
        --rounds) ROUNDS=$2; shift 2 ;;
        --calls | --memory-calls) ARGS+=("$1" "$2"); shift 2 ;;
        *) echo "usage: $0 --face [--rounds N] [--calls N] [--memory-calls N]" >&2; exit 2 ;;
        esac
    done
    echo "uptime before: $(uptime)"
    for round in $(seq "$ROUNDS"); do
        for lanes in on off; do
            if [[ $lanes == on ]]; then
                env -u IDEMKIT_CALLER_LANES java -Xms512m -Xmx512m -cp "$CP" dev.idemkit.FacePeers --rounds 1 "${ARGS[@]}"
            else
                IDEMKIT_CALLER_LANES=0 java -Xms512m -Xmx512m -cp "$CP" dev.idemkit.FacePeers --rounds 1 "${ARGS[@]}"
            fi | sed "s/round=1/round=$round/" | tee "$OUT/face-$lanes-$round.txt"
        done
        echo "uptime after round $round: $(uptime)"
    done
    python3 - "$OUT" "$ROUNDS" <<'PY'
import sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = []
for r in range(1, rounds + 1):
    for lanes in ("on", "off"):
        for line in open(f"{out}/face-{lanes}-{r}.txt"):
            if line.startswith("RESULT "):
                kv = dict(p.split("=", 1) for p in line.split()[1:])
                kv["lanes"] = lanes
                rows.append(kv)
def find(r, lanes, case, impl):
    for kv in rows:
        if kv["round"] == str(r) and kv["lanes"] == lanes and kv["case"] == case and kv["impl"] == impl:
            return kv
print()
print("| case | lanes | round | peer p50 µs / mean µs / CPU µs / switches | idemkit p50 µs / mean µs / CPU µs / switches | idemkit ÷ peer: mean / CPU |")
print("|---|---|---|---|---|---|")
for case in ("redis_hit", "redis_executed", "memory_hit"):
    for lanes in ("on", "off"):
        for r in range(1, rounds + 1):
            p, i = find(r, lanes, case, "peer"), find(r, lanes, case, "idemkit")
            if not p or not i:
                continue
            cell = lambda kv: f"{kv['p50_us']} / {float(kv['mean_us']):.2f} / {float(kv['cpu_us']):.2f} / {float(kv['ctx']):.2f}"
            print(f"| {case} | {lanes} | {r} | {cell(p)} | {cell(i)} | "
                  f"{float(i['mean_us']) / float(p['mean_us']):.2f}× / {float(i['cpu_us']) / float(p['cpu_us']):.2f}× |")
PY
    ;;
*)
    FILTER="${1:-dev.idemkit.DispatchBenchmark}"
    shift || true
    exec java -cp "$CP" org.openjdk.jmh.Main "$FILTER" -rf json -rff "$OUT/jmh-result.json" "$@"
    ;;
esac
