#!/usr/bin/env bash
# Runs every idemkit test: Rust (core, stores, CLI, C ABI), the C program under valgrind, and Java.
# Installs and starts what it needs (Redis and PostgreSQL on private ports, cbindgen) and stops
# what it started. Usage: scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
log_dir="$root/.idemkit-run/logs"
mkdir -p "$log_dir"
summary="$log_dir/test-summary.log"
: >"$summary"

step() { printf '\n==> %s\n' "$*"; }

# Runs a command, showing its output and keeping a copy for the summary.
run_logged() {
  local name=$1
  shift
  "$@" 2>&1 | tee "$log_dir/$name.log"
  return "${PIPESTATUS[0]}"
}

export CARGO_TERM_COLOR=never
features="redis,postgres,testing,cli,capi"

step "services: Redis and PostgreSQL on 127.0.0.1"
# Stop the servers at the end only if this run started them (another run may be using them).
if scripts/services.sh status >/dev/null 2>&1; then
  echo "services already up: leaving them running afterwards"
else
  trap 'scripts/services.sh stop || true' EXIT
fi
scripts/services.sh start
eval "$(scripts/services.sh env)"

step "format and lints"
cargo fmt --all --check
cargo clippy --all-targets --features "$features" -- -D warnings

step "Rust tests (core, key vectors, stores against real servers, CLI, C ABI)"
run_logged cargo cargo test --features "$features"

step "C ABI: header is current, C program passes, valgrind is clean"
run_logged c scripts/c-test.sh

step "Java: JNI bindings, annotations, stores, web-service executor"
run_logged java mvn -B -f java/pom.xml verify

# One closing line for the whole run.
python3 - "$log_dir" <<'PY'
import re, sys, pathlib
d = pathlib.Path(sys.argv[1])
passed = failed = skipped = 0
for m in re.finditer(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", (d / "cargo.log").read_text()):
    passed += int(m[1]); failed += int(m[2]); skipped += int(m[3])
for m in re.finditer(r"C tests: (\d+) passed, (\d+) failed", (d / "c.log").read_text()):
    passed += int(m[1]); failed += int(m[2])
java = (d / "java.log").read_text()
runs = re.findall(r"Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: (\d+)\n", java)
if runs:
    # Surefire ends each module with a total line; take the totals (lines without "Time elapsed").
    totals = re.findall(r"^\[\w+\] Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: (\d+)$", java, re.M)
    for t, f, e, s in totals:
        passed += int(t) - int(f) - int(e) - int(s); failed += int(f) + int(e); skipped += int(s)
print(f"\ntotal: {passed} passed, {failed} failed, {skipped} skipped")
PY
