#!/usr/bin/env bash
# The C ABI, end to end:
#   1. include/idemkit.h is what cbindgen makes from capi/ today (fails with a diff if not);
#   2. the library builds with `cargo build --release -p idemkit-capi [--features redis,postgres]`;
#   3. tests/c/idemkit_test.c, linked against the shared and the static library, passes;
#   4. it passes again under valgrind with no errors and no definitely-lost bytes.
# Installs cbindgen when it is missing. Usage: scripts/c-test.sh
# Environment: IDEMKIT_VECTORS (path of keys-v1.json, default tests/vectors/keys-v1.json),
#              IDEMKIT_C_FEATURES (cargo features of capi/, default redis,postgres when the
#                crate has them; "none" for a memory-only library),
#              IDEMKIT_REDIS_URL (a Redis server: calls also run on it, when built with redis),
#              IDEMKIT_POSTGRES_URL (a PostgreSQL database: calls also run on it, when built with
#                postgres; the table idemkit_c_test is created there with psql),
#              IDEMKIT_SKIP_VALGRIND=1 (skip step 4, for machines without valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

cbindgen_version=0.29.4
step() { printf '\n--> %s\n' "$*"; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

step "cbindgen: include/idemkit.h is current"
if ! command -v cbindgen >/dev/null 2>&1; then
  echo "cbindgen is missing: installing $cbindgen_version with cargo"
  cargo install cbindgen --locked --version "$cbindgen_version"
fi
found=$(cbindgen --version | awk '{print $2}')
if [ "$found" != "$cbindgen_version" ]; then
  echo "warning: cbindgen $found is installed; the header was generated with $cbindgen_version"
fi
# The invocation capi/cbindgen.toml names; its warnings (items it skips) go to a log shown only
# on failure.
if ! cbindgen --config capi/cbindgen.toml --output "$work/idemkit.h" capi 2>"$work/cbindgen.log"; then
  cat "$work/cbindgen.log"
  exit 1
fi
if ! diff -u include/idemkit.h "$work/idemkit.h"; then
  echo "include/idemkit.h differs from a fresh cbindgen run (diff above):"
  echo "  cbindgen --config capi/cbindgen.toml --output include/idemkit.h capi"
  exit 1
fi
echo "include/idemkit.h is current"

features=${IDEMKIT_C_FEATURES:-}
if [ -z "$features" ]; then
  features=none
  if grep -qE '^redis *=' capi/Cargo.toml; then features=$features,redis; fi
  if grep -qE '^postgres *=' capi/Cargo.toml; then features=$features,postgres; fi
fi
features=${features#none}
features=${features#,}
has_redis=0
case ",$features," in *,redis,*) has_redis=1 ;; esac
has_postgres=0
case ",$features," in *,postgres,*) has_postgres=1 ;; esac

step "cargo build --release -p idemkit-capi --features '$features'"
cargo build --release -p idemkit-capi --features "$features"
target_dir=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
lib_dir="$target_dir/release"
for lib in libidemkit.so libidemkit.a; do
  [ -f "$lib_dir/$lib" ] || { echo "missing $lib_dir/$lib"; exit 1; }
done

step "the header compiles as C11 and C++"
gcc -std=c11 -Wall -Wextra -Werror -pedantic -fsyntax-only -x c include/idemkit.h
if command -v g++ >/dev/null 2>&1; then
  g++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only -x c++ include/idemkit.h
fi

step "the C test, against the shared and the static library"
cflags=(-std=c11 -Wall -Wextra -Werror -g -O1 -Iinclude "-DIDEMKIT_TEST_HAS_REDIS=$has_redis"
  "-DIDEMKIT_TEST_HAS_POSTGRES=$has_postgres")
gcc "${cflags[@]}" tests/c/idemkit_test.c -o "$work/idemkit_test" \
  -L"$lib_dir" -lidemkit -Wl,-rpath,"$lib_dir" -pthread -lm
# What a Rust staticlib needs from the system on Linux (`rustc --print native-static-libs`).
gcc "${cflags[@]}" tests/c/idemkit_test.c -o "$work/idemkit_test_static" \
  "$lib_dir/libidemkit.a" -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc -pthread

step "the README's C example compiles, runs and prints what the README says"
python3 - README.md "$work" <<'PY'
import pathlib, re, sys
readme = pathlib.Path(sys.argv[1]).read_text()
section = readme[readme.index("## C ABI"):]
blocks = re.findall(r"```(\w+)\n(.*?)```", section, re.S)
source = next(body for lang, body in blocks if lang == "c")
shell = next(body for lang, body in blocks if lang == "bash")
out = pathlib.Path(sys.argv[2])
(out / "send_email.c").write_text(source)
(out / "send_email.expected").write_text(
    "".join(line[2:] + "\n" for line in shell.splitlines() if line.startswith("# ")))
PY
gcc -std=c11 -Wall -Wextra -Werror -Iinclude "$work/send_email.c" -o "$work/send_email" \
  -L"$lib_dir" -lidemkit -Wl,-rpath,"$lib_dir"
"$work/send_email" >"$work/send_email.out"
diff -u "$work/send_email.expected" "$work/send_email.out"
echo "README example: ok"

vectors=${IDEMKIT_VECTORS:-$root/tests/vectors/keys-v1.json}
[ -f "$vectors" ] || { echo "cannot read the key vectors at $vectors; set IDEMKIT_VECTORS"; exit 1; }
python3 tests/c/vectors_to_lines.py "$vectors" >"$work/vectors.txt"

if [ "$has_postgres" = 1 ] && [ -n "${IDEMKIT_POSTGRES_URL:-}" ]; then
  step "PostgreSQL: the C test's table idemkit_c_test"
  command -v psql >/dev/null 2>&1 || {
    echo "psql is missing: install the PostgreSQL client (apt-get install postgresql-client) or unset IDEMKIT_POSTGRES_URL"
    exit 1
  }
  # The shipped schema under the test's table name (the URL is not echoed: it may hold a password).
  # Two runs creating it at once can collide in the catalog: the loser tries once more.
  create_table() {
    sed 's/idemkit_records/idemkit_c_test/g' sql/postgres/001_idemkit_records.sql |
      PGOPTIONS='-c client_min_messages=warning' psql -q -v ON_ERROR_STOP=1 "$IDEMKIT_POSTGRES_URL" >/dev/null
  }
  create_table || { sleep 1; create_table; }
fi

# The shared-library run prints the one "C tests: N passed, M failed" line that test
# summaries count; the reruns label theirs so that they are not counted three times.
"$work/idemkit_test" "$work/vectors.txt"
"$work/idemkit_test_static" "$work/vectors.txt" | sed 's/^C tests: /C tests (static library): /'

if [ "${IDEMKIT_SKIP_VALGRIND:-0}" = 1 ]; then
  echo "valgrind skipped (IDEMKIT_SKIP_VALGRIND=1)"
  exit 0
fi
step "valgrind: no errors, no definitely-lost bytes"
if ! command -v valgrind >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "valgrind is missing: installing it with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null
  else
    echo "valgrind is missing: install it (apt-get install valgrind) or set IDEMKIT_SKIP_VALGRIND=1"
    exit 1
  fi
fi
# The runtime's worker threads live until the process exits, so their stacks and the runtime
# show as "possibly lost" / "still reachable"; only definite leaks and errors fail the run.
# Valgrind follows the test's fork() child too (its log lines carry the child's pid); the
# suppressions cover what the child inherits from the parent's threads (see the file).
valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=1 \
  --suppressions=tests/c/valgrind.supp \
  --show-leak-kinds=definite --log-file="$work/valgrind.log" "$work/idemkit_test" "$work/vectors.txt" |
  sed 's/^C tests: /C tests (valgrind): /' || {
  cat "$work/valgrind.log"
  exit 1
}
sed -n '/HEAP SUMMARY/,$p' "$work/valgrind.log" | sed 's/^==[0-9]*== //'
