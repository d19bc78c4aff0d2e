#!/usr/bin/env bash
# Benchmarks the Redis and PostgreSQL stores against the local servers of scripts/services.sh and
# against the raw floor on the same servers, and prints the `## Stores` section of BENCHMARKS.md.
#
#   scripts/bench-stores.sh [--seconds N] [--write]
#
#   (a) round trips per call, from the servers' own view: Redis MONITOR (client requests apart
#       from the commands a script runs inside), PostgreSQL pg_stat_statements;
#   (b) calls per second through Executor::call from 1 and 8 concurrent callers (benches/stores.rs):
#       executed calls use fresh keys (claim + complete), repeats one remembered key (claim);
#   (c) the floor: one `SET key v NX` (redis-benchmark) and one single-row
#       `INSERT ... ON CONFLICT DO NOTHING` (pgbench, prepared), at 1 and 8 clients, on new keys
#       (the floor of an executed call) and on one existing key (the floor of a repeat).
#
# --write replaces the `## Stores` section of BENCHMARKS.md (other sections are left alone).
#
#   scripts/bench-stores.sh --list N
#
#   times `idemkit list --limit 20` (release build) over N records on Redis and on PostgreSQL
#   (written straight into the servers of scripts/services.sh, which must be up), against the
#   floor of the same script: `redis-cli --scan` of the same keys, COUNT 10, and psql running the same
#   `ORDER BY claimed_at DESC, key LIMIT 20`. Median of 5 runs each; prints a table.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

if [[ "${1:-}" == "--list" ]]; then
    N="${2:?usage: $0 --list N}"
    REDIS_PORT=6390
    PG=(psql -h 127.0.0.1 -p 5440 -U postgres -d idemkit_test -Atq)
    RUN="bench$RANDOM$RANDOM"
    PREFIX="idemkit-$RUN:"
    TABLE="idemkit_$RUN"
    TENANT_HEX="$(printf bench | od -An -tx1 | tr -d ' \n')"
    echo "bench-stores: building the release CLI" >&2
    cargo build -q --release --features cli,redis,postgres --bin idemkit >&2
    CLI="$REPO/target/release/idemkit"
    echo "bench-stores: writing $N records into Redis (prefix $PREFIX) and PostgreSQL ($TABLE)" >&2
    # Record i was claimed i ms before now: record 1 is the newest. Batches of 10,000 per script.
    for ((from = 1; from <= N; from += 10000)); do
        to=$((from + 9999 < N ? from + 9999 : N))
        redis-cli -p "$REDIS_PORT" EVAL "
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000
for i = tonumber(ARGV[2]), tonumber(ARGV[3]) do
  local key = string.sub(redis.sha1hex('k' .. i) .. redis.sha1hex('j' .. i), 1, 64)
  local k = ARGV[1] .. 't$TENANT_HEX:' .. key
  redis.call('HSET', k, 'v', '1', 'key', key, 'tenant', 'bench', 'scope', 'bench',
    'state', 'completed', 'token', string.sub(redis.sha1hex('t' .. i), 1, 32),
    'claimed_at', string.format('%d', now - i), 'lease_end', string.format('%d', now - i + 1000),
    'ttl_ms', '3600000', 'expires_at', string.format('%d', now + 3600000),
    'outcome', '{\"success\":1}', 'outcome_kind', 'success')
  redis.call('PEXPIREAT', k, string.format('%d', now + 3600000))
end
return 1" 0 "$PREFIX" "$from" "$to" >/dev/null
    done
    "${PG[@]}" -c "$(sed 's/idemkit_records/'"$TABLE"'/g' sql/postgres/001_idemkit_records.sql sql/postgres/002_idemkit_records_claimed_at.sql)" >/dev/null
    "${PG[@]}" -c "INSERT INTO $TABLE (tenant, key, format, scope, state, token, claimed_at, lease_end,
        ttl_ms, expires_at, outcome_kind, outcome)
        SELECT 'bench', encode(sha256(convert_to('k' || i, 'UTF8')), 'hex'), 1, 'bench', 'completed',
          md5(i::text), now() - i * interval '1 millisecond', now(), 3600000,
          now() + interval '1 hour', 'success', '{\"success\":1}'::json
        FROM generate_series(1, $N) AS i; ANALYZE $TABLE" >/dev/null
    median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
    timed() { # command... : prints seconds
        local start end
        start=$(date +%s.%N)
        "$@" >/dev/null
        end=$(date +%s.%N)
        echo "$end - $start" | bc -l
    }
    five() { for _ in 1 2 3 4 5; do timed "$@"; done | median; }
    redis_list=$(five "$CLI" list --limit 20 --store "redis://127.0.0.1:$REDIS_PORT/0" --prefix "$PREFIX")
    redis_floor=$(five redis-cli -p "$REDIS_PORT" --scan --pattern "$PREFIX*")
    pg_list=$(five "$CLI" list --limit 20 --store "postgres://postgres@127.0.0.1:5440/idemkit_test" --table "$TABLE")
    pg_floor=$(five "${PG[@]}" -c "SELECT key FROM $TABLE WHERE expires_at > now() ORDER BY claimed_at DESC, key LIMIT 20")
    # The newest record (1) comes first on both.
    newest=$("${PG[@]}" -c "SELECT encode(sha256(convert_to('k1', 'UTF8')), 'hex')")
    "$CLI" list --limit 1 --json --store "postgres://postgres@127.0.0.1:5440/idemkit_test" --table "$TABLE" |
        grep -q "$newest" || { echo "bench-stores: PostgreSQL list does not show the newest first" >&2; exit 1; }
    "$CLI" list --limit 1 --json --store "redis://127.0.0.1:$REDIS_PORT/0" --prefix "$PREFIX" |
        grep -q "$(printf k1 | sha1sum | cut -c1-40)$(printf j1 | sha1sum | cut -c1-24)" ||
        { echo "bench-stores: Redis list does not show the newest first" >&2; exit 1; }
    "$CLI" forget --yes --tenant bench --store "redis://127.0.0.1:$REDIS_PORT/0" --prefix "$PREFIX" >/dev/null
    "${PG[@]}" -c "DROP TABLE $TABLE" >/dev/null
    printf '| store | records | `idemkit list --limit 20` (median of 5) | floor in the same run | ratio |\n'
    printf '|---|---|---|---|---|\n'
    printf '| Redis | %s | %.2f s | %.2f s (`redis-cli --scan` of the same keys, COUNT 10) | %.1f× |\n' \
        "$N" "$redis_list" "$redis_floor" "$(echo "$redis_list / $redis_floor" | bc -l)"
    printf '| PostgreSQL | %s | %.3f s | %.3f s (psql, the same ORDER BY ... LIMIT 20) | %.1f× |\n' \
        "$N" "$pg_list" "$pg_floor" "$(echo "$pg_list / $pg_floor" | bc -l)"
    exit 0
fi
SECONDS_PER_RUN=5
WRITE=0
while (($#)); do
    case "$1" in
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --write) WRITE=1; shift ;;
    *) echo "usage: $0 [--seconds N] [--write]" >&2; exit 2 ;;
    esac
done

scripts/services.sh start >/dev/null
eval "$(scripts/services.sh env)"
REDIS_PORT=6390
PG_ARGS=(-h 127.0.0.1 -p 5440 -U postgres)
PG_DB=idemkit_test
OUT="$REPO/.idemkit-run/bench"
mkdir -p "$OUT"

log() { echo "bench-stores: $*" >&2; }

bench() { cargo bench -q --bench stores --features redis,postgres -- "$@" 2>/dev/null; }

log "building benches/stores.rs"
cargo bench --bench stores --features redis,postgres --no-run >&2
log "round trips per call"
bench --measure trips | tee "$OUT/idemkit.txt" >&2

# --- the floor -------------------------------------------------------------------------------

redis_floor() { # clients, key pattern, requests
    redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -n "$3" -c "$1" -r 100000000 -q \
        SET "$2" v NX | tr '\r' '\n' | grep -Eo '[0-9.]+ requests per second' | tail -1 | cut -d' ' -f1
}

printf '%s\n' '\set k random(1, 1000000000000)' \
    'INSERT INTO idemkit_floor (k) VALUES (:k) ON CONFLICT DO NOTHING;' >"$OUT/floor-new.sql"
printf '%s\n' 'INSERT INTO idemkit_floor (k) VALUES (0) ON CONFLICT DO NOTHING;' >"$OUT/floor-existing.sql"
pg_floor() { # clients, script
    pgbench "${PG_ARGS[@]}" -n -M prepared -c "$1" -j "$(($1 < 2 ? 1 : 2))" -T "$SECONDS_PER_RUN" \
        -f "$2" "$PG_DB" 2>/dev/null | grep -E '^tps' | grep -Eo '[0-9]+\.[0-9]+' | head -1
}

# The machine's load drifts over minutes: each idemkit run sits between two runs of its floor,
# and the floor is their mean.
floor() { # store, kind, callers
    local requests=$((100000 * ($3 > 1 ? 2 : 1)))
    case "$1/$2" in
    redis/executed) redis_floor "$3" 'idemkit-floor:__rand_int__' "$requests" ;;
    redis/repeat) redis_floor "$3" 'idemkit-floor:existing' "$requests" ;;
    postgres/executed) pg_floor "$3" "$OUT/floor-new.sql" ;;
    postgres/repeat) pg_floor "$3" "$OUT/floor-existing.sql" ;;
    esac
}

redis-cli -p "$REDIS_PORT" SET idemkit-floor:existing v >/dev/null
psql "${PG_ARGS[@]}" -d "$PG_DB" -qc \
    "DROP TABLE IF EXISTS idemkit_floor; CREATE TABLE idemkit_floor (k bigint PRIMARY KEY); INSERT INTO idemkit_floor VALUES (0)" 2>/dev/null
: >"$OUT/floor.txt"
# Server-side time per request is read at the end, from counters reset here.
redis-cli -p "$REDIS_PORT" CONFIG RESETSTAT >/dev/null
psql "${PG_ARGS[@]}" -d "$PG_DB" -Atqc "SELECT pg_stat_statements_reset()" >/dev/null 2>&1 || true
for store in redis postgres; do
    for kind in executed repeat; do
        for callers in 1 8; do
            log "$store $kind, $callers caller(s): floor, idemkit, floor"
            before=$(floor "$store" "$kind" "$callers")
            bench "$store" --measure rates --kind "$kind" --callers "$callers" --seconds "$SECONDS_PER_RUN" |
                tee -a "$OUT/idemkit.txt" >&2
            after=$(floor "$store" "$kind" "$callers")
            mean=$(python3 -c "print(($before + $after) / 2)")
            echo "FLOOR store=$store kind=$kind callers=$callers value=$mean runs=$before,$after" |
                tee -a "$OUT/floor.txt" >&2
        done
    done
done
redis_usec() { # command
    redis-cli -p "$REDIS_PORT" INFO commandstats | tr -d '\r' | grep -E "^cmdstat_$1:" |
        grep -Eo 'usec_per_call=[0-9.]+' | cut -d= -f2
}
pg_usec() { # SQL LIKE pattern of the statement
    psql "${PG_ARGS[@]}" -d "$PG_DB" -Atc \
        "SELECT round((sum(total_exec_time) / sum(calls) * 1000)::numeric, 1) FROM pg_stat_statements WHERE query LIKE '$1'" 2>/dev/null
}
{
    echo "SERVER redis evalsha $(redis_usec evalsha)"
    echo "SERVER redis set $(redis_usec set)"
    echo "SERVER postgres claim $(pg_usec '%cur AS MATERIALIZED%')"
    echo "SERVER postgres complete $(pg_usec '%done AS (%')"
    echo "SERVER postgres floor $(pg_usec 'INSERT INTO idemkit_floor%')"
} >"$OUT/server.txt"
cat "$OUT/server.txt" >&2
redis-cli -p "$REDIS_PORT" --scan --pattern 'idemkit-floor:*' |
    xargs -r -n 1000 redis-cli -p "$REDIS_PORT" UNLINK >/dev/null
psql "${PG_ARGS[@]}" -d "$PG_DB" -qc "DROP TABLE IF EXISTS idemkit_floor" 2>/dev/null

# --- the report ------------------------------------------------------------------------------

value() { # store, kind, callers
    grep -E "^RESULT store=$1 measure=calls_per_s kind=$2 callers=$3 " "$OUT/idemkit.txt" | grep -Eo 'value=[0-9]+' | cut -d= -f2
}
trips() { # store, executed|repeat
    grep -E "^RESULT store=$1 measure=round_trips" "$OUT/idemkit.txt" | grep -Eo "$2=[0-9.]+" | cut -d= -f2
}
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
fmt() { python3 -c "print(f'{float($1):,.0f}')"; }

floor_value() { # store, kind, callers
    grep -E "^FLOOR store=$1 kind=$2 callers=$3 " "$OUT/floor.txt" | grep -Eo 'value=[0-9.]+' | cut -d= -f2
}
floor_runs() { # store, kind, callers
    grep -E "^FLOOR store=$1 kind=$2 callers=$3 " "$OUT/floor.txt" | grep -Eo 'runs=[0-9.,]+' | cut -d= -f2 |
        python3 -c "import sys; print(' / '.join(f'{float(x):,.0f}' for x in sys.stdin.read().strip().split(',')))"
}
row() { # label, store, kind, callers
    local v f
    v=$(value "$2" "$3" "$4")
    f=$(floor_value "$2" "$3" "$4")
    echo "| $1 | $4 | $(fmt "$v") | $(fmt "$f") ($(floor_runs "$2" "$3" "$4")) | $(ratio "$v" "$f") |"
}

CPU="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') × $(nproc)"
REDIS_VERSION="$(redis-server --version | grep -Eo 'v=[0-9.]+' | cut -d= -f2)"
PG_VERSION="$(psql "${PG_ARGS[@]}" -d "$PG_DB" -Atc 'SHOW server_version' | cut -d' ' -f1)"
SECTION="$OUT/stores-section.md"
{
    echo "## Stores"
    echo
    echo "Redis $REDIS_VERSION and PostgreSQL $PG_VERSION on 127.0.0.1 (\`scripts/services.sh\`: Redis"
    echo "without persistence, PostgreSQL with default durability, fsync on), client and servers sharing"
    echo "$CPU; $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD)."
    echo "Command: \`scripts/bench-stores.sh --seconds $SECONDS_PER_RUN --write\`."
    echo
    echo "**Round trips per call**, counted by the servers (Redis \`MONITOR\`: client requests, not"
    echo "the commands a script runs inside; PostgreSQL \`pg_stat_statements\`), averaged over 500 calls:"
    echo
    echo "| store | executed call (claim + complete) | repeat (claim answers the remembered result) |"
    echo "|---|---|---|"
    echo "| Redis | $(trips redis executed) | $(trips redis repeat) |"
    echo "| PostgreSQL | $(trips postgres executed) | $(trips postgres repeat) |"
    echo
    echo "**Calls per second** through \`Executor::call\` (HASH_INPUT on a small JSON input), from 1"
    echo "and 8 concurrent callers (a tokio runtime with as many worker threads as callers), against"
    echo "the floor on the same server: one \`SET k v NX\`"
    echo "(\`redis-benchmark -c N SET idemkit-floor:__rand_int__ v NX\`) or one prepared"
    echo "\`INSERT ... ON CONFLICT DO NOTHING\` (\`pgbench -M prepared -c N\`). An executed call is"
    echo "compared with the floor on new keys, a repeat with the floor on one existing key. The ideal"
    echo "ratio is 0.5 for executed calls (two round trips against one) and 1 for repeats. Each"
    echo "idemkit run sits between two runs of its floor (the floor is their mean), because the"
    echo "machine's load drifts over minutes."
    echo
    echo "| store and call | callers | idemkit calls/s | floor ops/s (run before / after) | idemkit ÷ floor |"
    echo "|---|---|---|---|---|"
    row "Redis, executed (new key)" redis executed 1
    row "Redis, executed (new key)" redis executed 8
    row "Redis, repeat (remembered key)" redis repeat 1
    row "Redis, repeat (remembered key)" redis repeat 8
    row "PostgreSQL, executed (new key)" postgres executed 1
    row "PostgreSQL, executed (new key)" postgres executed 8
    row "PostgreSQL, repeat (remembered key)" postgres repeat 1
    row "PostgreSQL, repeat (remembered key)" postgres repeat 8
    echo
    server() { grep -E "^SERVER $1 $2 " "$OUT/server.txt" | cut -d' ' -f4; }
    echo "**Why not the ideal ratio:** each idemkit request does more on the server than the floor's,"
    echo "and the Rust client adds a hop through its connection task that the C benchmark clients do"
    echo "not have. Server time per request in this run (Redis \`INFO commandstats\`, PostgreSQL"
    echo "\`pg_stat_statements\`): Redis \`EVALSHA\` of a claim or complete script $(server redis evalsha) µs"
    echo "(the script reads \`TIME\` and the hash, writes it and sets its expiry) against $(server redis set) µs for"
    echo "\`SET NX\`; PostgreSQL claim statement $(server postgres claim) µs and complete statement"
    echo "$(server postgres complete) µs (averaged over executed calls and repeats) against $(server postgres floor) µs"
    echo "for the floor's insert (a one-column table)."
    echo
    echo "Notes: an executed PostgreSQL call commits twice (claim, then outcome), each a WAL flush; a"
    echo "repeat is a read-only statement (no row lock, no WAL), which is why it scales with callers."
    echo "The clients and servers share the machine's cores, so 8 callers measure contention for"
    echo "them as much as the stores. The machine is shared with other work: where the two floor runs"
    echo "around a measurement differ a lot, read its ratio as rough."
} >"$SECTION"
cat "$SECTION"

if ((WRITE)); then
    python3 - "$REPO/BENCHMARKS.md" "$SECTION" <<'PY'
import pathlib, re, sys
doc = pathlib.Path(sys.argv[1])
section = pathlib.Path(sys.argv[2]).read_text().rstrip("\n") + "\n"
text = doc.read_text() if doc.exists() else "# Benchmarks\n"
pattern = re.compile(r"^## Stores\n.*?(?=^## |\Z)", re.M | re.S)
if pattern.search(text):
    text = pattern.sub(lambda _: section + "\n", text, count=1)
else:
    text = text.rstrip("\n") + "\n\n" + section
doc.write_text(text.rstrip("\n") + "\n")
PY
    log "wrote the ## Stores section of BENCHMARKS.md"
fi
