#!/usr/bin/env bash
# Runs every idemkit test: the crate's packaging (MSRV, docs, contents), Rust (core, stores, CLI,
# the C ABI crate capi/, the JNI crate java/native), the C program under valgrind, Java, and the
# Gradle build of the Java library with an application that uses it.
# Installs and starts what it needs (Redis and PostgreSQL on private ports, cbindgen) and stops
# what it started.
#
#   scripts/test.sh [step...]   steps: fmt clippy crate rust c java gradle (default: all, in that order)
#
# Every step runs even when an earlier one failed; the run ends with one line
# `total: N passed, N failed, N skipped` and exits non-zero if any step failed. A step that fails
# without reporting a failed test (formatting, lints, a build error) counts as one failure.
#
# Environment: IDEMKIT_SKIP_SERVICES=1 uses servers you run yourself instead of starting them:
# set IDEMKIT_REDIS_URL and IDEMKIT_POSTGRES_URL (and IDEMKIT_REDIS_CLUSTER_URL for the cluster
# tests), as `scripts/services.sh env` prints them.
#
# What this run guarantees (the servers it started or was given, the programs services.sh
# installed) it exports in IDEMKIT_REQUIRE_SERVICES: a test missing one of those fails. A test
# missing anything else prints `skipped: <test>: <reason>` and counts as skipped, not passed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
log_dir="$root/.idemkit-run/logs"
mkdir -p "$log_dir"

all_steps=(fmt clippy crate rust c java gradle)
steps=("$@")
if ((${#steps[@]} == 0)); then
  steps=("${all_steps[@]}")
fi
for s in "${steps[@]}"; do
  case " ${all_steps[*]} " in
  *" $s "*) ;;
  *)
    echo "scripts/test.sh: unknown step \`$s\`; the steps are: ${all_steps[*]}" >&2
    exit 2
    ;;
  esac
done
wants() { [[ " ${steps[*]} " == *" $1 "* ]]; }

header() { printf '\n==> %s\n' "$*"; }

# Names of the steps that failed, in order; the summary counts each as at least one failure.
failed_steps=()

# Runs one step: shows its output, keeps a copy in <log_dir>/<name>.log for the summary, and
# records a failure instead of ending the run.
step() {
  local name=$1
  shift
  "$@" 2>&1 | tee "$log_dir/$name.log"
  local status=${PIPESTATUS[0]}
  if ((status != 0)); then
    echo "scripts/test.sh: step \`$name\` failed (exit status $status); log: $log_dir/$name.log"
    failed_steps+=("$name")
  fi
}

# The logs of this run only: a log left by an earlier run must not be counted again.
rm -f "$log_dir"/*.log

export CARGO_TERM_COLOR=never
# The workspace's features: the core has them all, capi/ (the C library) redis and postgres.
features="redis,postgres,testing,cli,tracing,metrics,mcp"
native=java/native/Cargo.toml

if wants rust || wants c || wants java; then
  header "services: Redis and PostgreSQL on 127.0.0.1"
  if [[ ${IDEMKIT_SKIP_SERVICES:-0} == 1 ]]; then
    missing=()
    [[ -n ${IDEMKIT_REDIS_URL:-} ]] || missing+=(IDEMKIT_REDIS_URL)
    [[ -n ${IDEMKIT_POSTGRES_URL:-} ]] || missing+=(IDEMKIT_POSTGRES_URL)
    if ((${#missing[@]} > 0)); then
      echo "scripts/test.sh: IDEMKIT_SKIP_SERVICES=1 needs $(IFS=,; echo "${missing[*]}" | sed 's/,/ and /') set to your own servers" \
        "(e.g. redis://127.0.0.1:6379/0, postgres://user@127.0.0.1:5432/db); set them or unset IDEMKIT_SKIP_SERVICES" >&2
      exit 2
    fi
    echo "IDEMKIT_SKIP_SERVICES=1: using the servers in IDEMKIT_REDIS_URL, IDEMKIT_POSTGRES_URL" \
      "${IDEMKIT_REDIS_CLUSTER_URL:+and IDEMKIT_REDIS_CLUSTER_URL }(nothing is started or stopped)"
    # Only the servers given are guaranteed; nothing was installed, so the tests that start
    # servers of their own (redis-server, initdb, openssl) skip when those are missing.
    IDEMKIT_REQUIRE_SERVICES="IDEMKIT_REDIS_URL IDEMKIT_POSTGRES_URL"
    if [[ -n ${IDEMKIT_REDIS_CLUSTER_URL:-} ]]; then
      IDEMKIT_REQUIRE_SERVICES+=" IDEMKIT_REDIS_CLUSTER_URL"
    else
      echo "IDEMKIT_REDIS_CLUSTER_URL is not set: the Redis Cluster tests are counted skipped"
    fi
    export IDEMKIT_REQUIRE_SERVICES
  else
    # Stop the servers at the end only if this run started them (another run may be using them).
    if scripts/services.sh status >/dev/null 2>&1; then
      echo "services already up: leaving them running afterwards"
    else
      trap 'scripts/services.sh stop || true' EXIT
    fi
    step services scripts/services.sh start
    eval "$(scripts/services.sh env)"
    # services.sh started these servers and installed these programs: a test missing one fails.
    export IDEMKIT_REQUIRE_SERVICES="IDEMKIT_REDIS_URL IDEMKIT_POSTGRES_URL${IDEMKIT_REDIS_CLUSTER_URL:+ IDEMKIT_REDIS_CLUSTER_URL} redis-server initdb pg_ctl openssl cli"
  fi
fi

if wants fmt; then
  header "format: the workspace (the core, capi/), the JNI crate (java/native) and the Java sources"
  step fmt cargo fmt --all --check
  step fmt-native cargo fmt --manifest-path "$native" --all --check
  # google-java-format (AOSP style) through Spotless; `mvn -f java/pom.xml spotless:apply` fixes.
  step fmt-java mvn -B -q -f java/pom.xml spotless:check
fi

if wants clippy; then
  header "lints: the workspace (the core, capi/) and the JNI crate (java/native), warnings are errors"
  step clippy cargo clippy --workspace --all-targets --features "$features" -- -D warnings
  # A crate with only one store, as an application that needs one builds it: no warnings either.
  step clippy-redis cargo clippy --lib --features redis -- -D warnings
  step clippy-postgres cargo clippy --lib --features postgres -- -D warnings
  # A fresh clone's `cargo test`: default features, every target that needs none builds.
  step clippy-default cargo clippy --all-targets -- -D warnings
  step clippy-native cargo clippy --manifest-path "$native" --workspace --all-targets --all-features -- -D warnings
fi

if wants crate; then
  header "crate: rust-version is true, every public item is documented, the package ships no java/"
  step msrv scripts/msrv-check.sh
  step doc env RUSTDOCFLAGS="-D missing_docs -D warnings" \
    cargo doc --no-deps --features redis,postgres,testing,cli,tracing,metrics,mcp
  step package scripts/package-check.sh
fi

if wants rust; then
  header "Rust tests (core, key vectors, stores against real servers, CLI, the C ABI crate capi/, the JNI crate's own)"
  step cargo cargo test --workspace --no-fail-fast --features "$features"
  step cargo-native cargo test --manifest-path "$native" --no-fail-fast
fi

if wants c; then
  header "C ABI: header is current, C program passes, valgrind is clean"
  step c scripts/c-test.sh
fi

if wants java; then
  header "Java: JNI bindings, annotations, stores, web-service executor"
  # The format check is the fmt step's (fmt-java); here it would count the same failure twice.
  step java mvn -B -f java/pom.xml verify -Dspotless.check.skip=true
fi

if wants gradle; then
  header "Gradle: the Java library built by Gradle (gradle/idemkit), an application using it (gradle/example)"
  # Debian's gradle package (4.4.1 on Debian 12, runs on JDK 17); installed like the other packages
  # when missing and this is root with apt-get, else the step is skipped with the reason.
  gradle_skip=""
  if ! command -v gradle >/dev/null 2>&1; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
      echo "gradle is missing: installing Debian's gradle package with apt-get"
      if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gradle >/dev/null; }; then
        gradle_skip="apt-get could not install the gradle package"
      fi
    else
      gradle_skip="gradle is not installed and this is not root with apt-get (apt-get install gradle)"
    fi
  fi
  if [[ -n $gradle_skip ]]; then
    echo "scripts/test.sh: skipping the gradle step: $gradle_skip" | tee "$log_dir/gradle.log"
  else
    # The example prints what its one tool returned for a call and its retry, and how often the
    # body ran: once.
    gradle_example() {
      local out
      out=$(gradle --no-daemon --console=plain -q -p gradle/example run) || return 1
      printf '%s\n' "$out"
      grep -qx 'first call: BK-12-1, retry: BK-12-1' <<<"$out" &&
        grep -qx 'the booking ran 1 time(s)' <<<"$out" ||
        { echo "gradle/example: expected the booking to run once (see README: Install, Gradle)"; return 1; }
    }
    step gradle gradle_example
  fi
fi

# One closing line for the whole run.
python3 - "$log_dir" ${failed_steps[@]+"${failed_steps[@]}"} <<'PY'
import re, sys, pathlib
d = pathlib.Path(sys.argv[1])
failed_steps = sys.argv[2:]

def log(name):
    path = d / f"{name}.log"
    return path.read_text(errors="replace") if path.exists() else ""

def cargo(text):
    p = f = s = 0
    for m in re.finditer(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", text):
        p += int(m[1]); f += int(m[2]); s += int(m[3])
    # A test that skipped (tests/common: `skipped: <test>: <reason>`) passed for libtest: count
    # it skipped instead, once per test binary, and only if it did not fail.
    for binary in re.split(r"^\s*(?:Running|Doc-tests) ", text, flags=re.M):
        failed_here = set(re.findall(r"^---- (\S+) stdout ----$", binary, re.M))
        names = set(re.findall(r"(?:^|\.\.\. )skipped: (\S+): ", binary, re.M)) - failed_here
        p -= len(names); s += len(names)
    return p, f, s

def c_tests(text):
    p = f = s = 0
    for m in re.finditer(r"C tests: (\d+) passed, (\d+) failed(?:, (\d+) skipped)?", text):
        p += int(m[1]); f += int(m[2]); s += int(m[3] or 0)
    return p, f, s

def java(text):
    p = f = s = 0
    # Surefire ends each module with a total line; take the totals (lines without "Time elapsed").
    for t, fl, e, sk in re.findall(
            r"^\[\w+\] Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: (\d+)$", text, re.M):
        p += int(t) - int(fl) - int(e) - int(sk); f += int(fl) + int(e); s += int(sk)
    return p, f, s

def gradle(text):
    # The example checks its own output; one line per run that counts it as one test.
    if "skipping the gradle step" in text:
        return 0, 0, 1
    return (1, 0, 0) if "the booking ran 1 time(s)" in text else (0, 0, 0)

counters = {"cargo": cargo, "cargo-native": cargo, "c": c_tests, "java": java, "gradle": gradle}
passed = failed = skipped = 0
for name, count in counters.items():
    p, f, s = count(log(name))
    passed += p; failed += f; skipped += s
    if name in failed_steps and f == 0:
        failed += 1  # failed before (or without) reporting a failed test: a build error, a crash
for name in failed_steps:
    if name not in counters:
        failed += 1  # services, fmt, fmt-native, fmt-java, clippy(-redis, -postgres, -native), msrv, doc, package
if failed_steps:
    print("\nfailed steps: " + ", ".join(failed_steps))
print(f"\ntotal: {passed} passed, {failed} failed, {skipped} skipped")
PY

if ((${#failed_steps[@]} > 0)); then
  exit 1
fi
