#!/usr/bin/env bash
# The rolling upgrade of the Redis record (SPEC v1.2 §9 rule 2), checked across two builds: a
# process of the previous version (record v1, one hash per record) and one of this version
# (record v2, one string per record) call the same tools against one Redis.
#
#   scripts/upgrade-check.sh --v1 <cross_call of the v1 build> [--v2 <cross_call of this build>]
#
# Both binaries are examples/cross_call.rs (it calls one tool once and prints {"ran":0|1,...}).
# The v1 one is built from the last v1 commit in a worktree of its own, for example:
#
#   git worktree add --detach ../idemkit-v1 0327cce
#   (cd ../idemkit-v1 && CARGO_TARGET_DIR=$PWD/target cargo build --release --features redis,postgres --example cross_call)
#   scripts/upgrade-check.sh --v1 ../idemkit-v1/target/release/examples/cross_call
#
# Without --v2, this build's cross_call is built (debug) and used. The Redis is IDEMKIT_REDIS_URL
# (scripts/services.sh env); every scenario uses a tenant of its own. What it checks:
#
#   1. a completed v2 record: the v1 process gets a store error and does not run the body;
#   2. a v2 claim in progress: the same;
#   3. a completed v1 record: this version answers it (the body does not run again);
#   4. an abandoned v1 claim: this version answers it as the v1 process does, runs nothing;
#   5. a failure v1 recorded: this version retries it, writes v2, which v1 then refuses unrun.
#
# Exits 1 at the first answer that differs, naming the scenario.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
V1=""
V2=""
while (($#)); do
    case "$1" in
    --v1) V1=$(readlink -f "$2"); shift 2 ;;
    --v2) V2=$(readlink -f "$2"); shift 2 ;;
    *) echo "usage: $0 --v1 <v1 cross_call> [--v2 <cross_call>]" >&2; exit 2 ;;
    esac
done
log() { echo "upgrade-check: $*" >&2; }
fail() { echo "upgrade-check: FAILED: $*" >&2; exit 1; }
[[ -n "$V1" && -x "$V1" ]] || { echo "upgrade-check: --v1 <path of the v1 build's cross_call> is required (see the header of $0)" >&2; exit 2; }
: "${IDEMKIT_REDIS_URL:?upgrade-check: IDEMKIT_REDIS_URL is not set (eval \"\$(scripts/services.sh env)\")}"
if [[ -z "$V2" ]]; then
    log "building this version's cross_call"
    (cd "$REPO" && cargo build -q --features redis,postgres --example cross_call)
    V2="$REPO/target/debug/examples/cross_call"
fi
REDIS=(redis-cli -u "$IDEMKIT_REDIS_URL" --no-auth-warning)

# The one record a tenant holds under the default prefix `idemkit:`.
record_of() {
    local hex
    hex=$(printf '%s' "$1" | od -An -tx1 | tr -d ' \n')
    "${REDIS[@]}" --scan --pattern "idemkit:t$hex:*" | head -1
}
# expect <scenario> <answer> <python condition on `a`, the parsed answer>
expect() {
    python3 - "$1" "$2" "$3" <<'PY' || exit 1
import json, sys
name, text, cond = sys.argv[1], sys.argv[2], sys.argv[3]
a = json.loads(text)
if not eval(cond):
    sys.exit(f"upgrade-check: FAILED: {name}: got {text}, wanted {cond}")
print(f"upgrade-check: ok: {name}: {text}", file=sys.stderr)
PY
}
tenant() { echo "upgrade-$1-$$-$RANDOM"; }
STORE_ERROR="a['ran'] == 0 and a.get('error') not in (None, 'body')"

log "v1: $V1"
log "v2: $V2"

# 1. A completed v2 record meets a v1 process.
t=$(tenant 1)
expect "1. v2 runs the body" "$("$V2" "$IDEMKIT_REDIS_URL" search "$t" '{"q":1}')" "a == {'ran': 1, 'result': 'rust:{\"q\":1}'}"
name=$(record_of "$t")
[[ $("${REDIS[@]}" TYPE "$name") == string ]] || fail "1. the record $name is not a v2 string"
expect "1. v1 meets the completed v2 record" "$("$V1" "$IDEMKIT_REDIS_URL" search "$t" '{"q":1}')" "$STORE_ERROR"
expect "1. v2 still answers it" "$("$V2" "$IDEMKIT_REDIS_URL" search "$t" '{"q":1}')" "a == {'ran': 0, 'result': 'rust:{\"q\":1}'}"

# 2. A v2 claim in progress meets a v1 process: the completed record of (1), turned back into a
# live claim (`2p|token||lease|ttl||fingerprint|n|scope`, expiring at lease end + TTL).
t=$(tenant 2)
expect "2. v2 runs the body" "$("$V2" "$IDEMKIT_REDIS_URL" search "$t" '{"q":2}')" "a['ran'] == 1"
name=$(record_of "$t")
claim=$("${REDIS[@]}" GET "$name" | python3 -c "
import sys
v = sys.stdin.read().rstrip('\n')
s, token, claimed, lease, ttl, expires, fp, n, rest = v.split('|', 8)
print('|'.join(['2p', token, '', '60000', '120000', '', fp, n, rest[:int(n)]]))")
[[ $("${REDIS[@]}" SET "$name" "$claim" PX 180000) == OK ]] || fail "2. could not write the claim"
expect "2. v1 meets the v2 claim in progress" "$("$V1" "$IDEMKIT_REDIS_URL" search "$t" '{"q":2}')" "$STORE_ERROR"
[[ $("${REDIS[@]}" GET "$name") == "$claim" ]] || fail "2. the v1 process changed the v2 claim"

# 3. A completed v1 record meets this version.
t=$(tenant 3)
expect "3. v1 runs the body" "$("$V1" "$IDEMKIT_REDIS_URL" search "$t" '{"q":3}')" "a == {'ran': 1, 'result': 'rust:{\"q\":3}'}"
name=$(record_of "$t")
[[ $("${REDIS[@]}" TYPE "$name") == hash ]] || fail "3. the v1 record $name is not a hash"
expect "3. v2 answers the v1 record" "$("$V2" "$IDEMKIT_REDIS_URL" search "$t" '{"q":3}')" "a == {'ran': 0, 'result': 'rust:{\"q\":3}'}"
expect "3. v1 still answers its record" "$("$V1" "$IDEMKIT_REDIS_URL" search "$t" '{"q":3}')" "a == {'ran': 0, 'result': 'rust:{\"q\":3}'}"

# 4. An abandoned v1 claim (the completed v1 record of a fresh call, turned into a claim whose
# lease ended) meets this version: answered as the v1 process answers it (indeterminate: SPEC
# §8; nothing runs), the record left as it was. (A take-over of a v1 claim, written v2, is
# tests/redis_v2_records.rs.)
t=$(tenant 4)
expect "4. v1 runs the body" "$("$V1" "$IDEMKIT_REDIS_URL" search "$t" '{"q":4}')" "a['ran'] == 1"
name=$(record_of "$t")
now=$("${REDIS[@]}" TIME | head -1)
"${REDIS[@]}" HSET "$name" state in_progress lease_end $(((now - 5) * 1000)) >/dev/null
"${REDIS[@]}" HDEL "$name" outcome outcome_kind >/dev/null
v1=$("$V1" "$IDEMKIT_REDIS_URL" search "$t" '{"q":4}')
expect "4. v1 answers its abandoned claim" "$v1" "a['ran'] == 0 and 'error' in a"
expect "4. v2 answers the abandoned v1 claim as v1 does" "$("$V2" "$IDEMKIT_REDIS_URL" search "$t" '{"q":4}')" "a == $(python3 -c 'import json,sys; print(repr(json.loads(sys.argv[1])))' "$v1")"
[[ $("${REDIS[@]}" TYPE "$name") == hash ]] || fail "4. the abandoned v1 claim $name was rewritten"

# 5. A failure v1 recorded, retried by this version (the default policy replaces a remembered
# failure): the body runs again, the record becomes v2, and the v1 process refuses it.
t=$(tenant 5)
expect "5. v1 runs the failing body" "$("$V1" "$IDEMKIT_REDIS_URL" search "$t" '{"q":5}' --fail)" "a['ran'] == 1 and a.get('error') == 'body'"
name=$(record_of "$t")
if [[ -n "$name" ]]; then
    expect "5. v2 retries the v1 failure" "$("$V2" "$IDEMKIT_REDIS_URL" search "$t" '{"q":5}')" "a == {'ran': 1, 'result': 'rust:{\"q\":5}'}"
    [[ $("${REDIS[@]}" TYPE "$name") == string ]] || fail "5. the record $name is not a v2 string"
    expect "5. v1 meets the record v2 wrote" "$("$V1" "$IDEMKIT_REDIS_URL" search "$t" '{"q":5}')" "$STORE_ERROR"
else
    log "5. the failure was released, not recorded (the default policy): nothing to retry"
fi

log "all scenarios passed"
