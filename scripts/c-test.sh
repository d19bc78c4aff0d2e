#!/usr/bin/env bash
# The C ABI, end to end:
#   1. include/idemkit.h is what cbindgen makes from capi/ today (fails with a diff if not);
#   2. scripts/install-c.sh builds the library (release, -p idemkit-capi) and installs it: SONAME
#      libidemkit.so.0, every function of the header exported, idemkit.pc;
#   3. building the CLI afterwards leaves libidemkit.so and libidemkit.a as they were;
#   4. tests/c/idemkit_test.c, linked through `pkg-config --cflags --libs idemkit` against the
#      shared library and through `pkg-config --static --cflags --libs idemkit-static` against
#      the static one installed next to it (and idemkit.pc of a --static-only prefix links it
#      too), passes when run from another directory; the README's C commands work as written;
#   5. it passes again under valgrind with no errors and no definitely-lost bytes.
# Installs cbindgen when it is missing. Usage: scripts/c-test.sh
# Environment: IDEMKIT_VECTORS (path of keys-v1.json, default tests/vectors/keys-v1.json),
#              IDEMKIT_C_FEATURES (cargo features of capi/, default redis,postgres when the
#                crate has them; "none" for a memory-only library),
#              IDEMKIT_REDIS_URL (a Redis server: calls also run on it, when built with redis),
#              IDEMKIT_POSTGRES_URL (a PostgreSQL database: calls also run on it, when built with
#                postgres; the table idemkit_c_test is created there with psql),
#              IDEMKIT_SKIP_VALGRIND=1 (skip step 5, for machines without valgrind).
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

for tool in pkg-config readelf nm; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "$tool is missing: install it (apt-get install pkg-config binutils); the C test links through pkg-config and reads the libraries with readelf and nm"
    exit 1
  }
done
prefix=$work/prefix
static_prefix=$work/static
step "scripts/install-c.sh: the library, header and idemkit.pc under a prefix (and the static library alone under another)"
scripts/install-c.sh --prefix "$prefix" --features "$features"
scripts/install-c.sh --prefix "$static_prefix" --features "$features" --static-only >/dev/null 2>&1
target_dir=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
lib_dir="$target_dir/release"

# The functions the header declares, and the ones a library exports.
grep -oE '^[a-z][a-z_ ]* \**idemkit_[a-z_]+\(' include/idemkit.h | grep -oE 'idemkit_[a-z_]+\($' | tr -d '(' |
  sort >"$work/declared" || true
[ -s "$work/declared" ] || { echo "found no functions in include/idemkit.h"; exit 1; }
exports() { nm -D --defined-only "$1" | awk '$2 == "T" && $3 ~ /^idemkit_/ {print $3}' | sort; }
expect_exports() {
  if ! diff -u "$work/declared" <(exports "$1"); then
    echo "$1 does not export exactly the functions of include/idemkit.h (diff above: - missing, + extra)"
    exit 1
  fi
}

step "the installed library: SONAME libidemkit.so.0, the link, every function of the header"
soname=$(readelf -d "$prefix/lib/libidemkit.so.0" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
[ "$soname" = libidemkit.so.0 ] || { echo "SONAME is '$soname', not libidemkit.so.0"; exit 1; }
[ "$(readlink "$prefix/lib/libidemkit.so")" = libidemkit.so.0 ] ||
  { echo "$prefix/lib/libidemkit.so is not a link to libidemkit.so.0"; exit 1; }
[ ! -e "$static_prefix/lib/libidemkit.so" ] || { echo "--static-only installed a shared library"; exit 1; }
expect_exports "$prefix/lib/libidemkit.so.0"
echo "SONAME $soname; $(wc -l <"$work/declared") functions exported, as the header declares them"

step "building the CLI after the C library leaves libidemkit.so and libidemkit.a alone"
# The core is an rlib only, so no other build writes the C library. (Before the split, building
# the core with --features cli replaced libidemkit.so with one without any idemkit_* function.)
before=$(sha256sum "$lib_dir/libidemkit.so" "$lib_dir/libidemkit.a")
cargo build --release --features cli
after=$(sha256sum "$lib_dir/libidemkit.so" "$lib_dir/libidemkit.a")
if [ "$before" != "$after" ]; then
  printf 'building the CLI changed the C library:\nbefore:\n%s\nafter:\n%s\n' "$before" "$after"
  exit 1
fi
expect_exports "$lib_dir/libidemkit.so"
echo "$lib_dir/libidemkit.so and libidemkit.a unchanged; every idemkit_* function still exported"

step "the header compiles as C11 and C++"
gcc -std=c11 -Wall -Wextra -Werror -pedantic -fsyntax-only -x c include/idemkit.h
if command -v g++ >/dev/null 2>&1; then
  g++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only -x c++ include/idemkit.h
fi

step "the C test, linked through pkg-config: the shared library, and the static one (--static)"
cflags=(-std=c11 -Wall -Wextra -Werror -g -O1 "-DIDEMKIT_TEST_HAS_REDIS=$has_redis"
  "-DIDEMKIT_TEST_HAS_POSTGRES=$has_postgres" -pthread)
shared_flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs idemkit)
shared_libdir=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --variable=libdir idemkit)
# The static library from the prefix that holds the shared one too (idemkit-static.pc names the
# archive), and from a prefix with the static library only (idemkit.pc's `-lidemkit`).
static_flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --static --cflags --libs idemkit-static)
static_only_flags=$(PKG_CONFIG_PATH="$static_prefix/lib/pkgconfig" pkg-config --static --cflags --libs idemkit)
echo "shared: gcc ... $shared_flags -Wl,-rpath,$shared_libdir"
echo "static: gcc ... $static_flags"
# shellcheck disable=SC2086 # pkg-config's answer is a list of words
gcc "${cflags[@]}" tests/c/idemkit_test.c -o "$work/idemkit_test" $shared_flags -Wl,-rpath,"$shared_libdir"
# shellcheck disable=SC2086
gcc "${cflags[@]}" tests/c/idemkit_test.c -o "$work/idemkit_test_static" $static_flags
# shellcheck disable=SC2086
gcc "${cflags[@]}" tests/c/idemkit_test.c -o "$work/idemkit_test_static_only" $static_only_flags
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p'; }
needed "$work/idemkit_test" | grep -qx libidemkit.so.0 || {
  echo "the shared test program does not need libidemkit.so.0: $(needed "$work/idemkit_test" | xargs)"
  exit 1
}
for program in idemkit_test_static idemkit_test_static_only; do
  if needed "$work/$program" | grep -q libidemkit; then
    echo "the static test program $program needs a shared libidemkit: $(needed "$work/$program" | xargs)"
    exit 1
  fi
done
# The loader finds libidemkit.so.0 by the absolute rpath, from any working directory.
elsewhere=$work/elsewhere
mkdir -p "$elsewhere"
loaded=$(cd "$elsewhere" && ldd "$work/idemkit_test" | awk '$1 == "libidemkit.so.0" {print $3}')
[ "$loaded" = "$prefix/lib/libidemkit.so.0" ] ||
  { echo "the shared test program loads '$loaded', not $prefix/lib/libidemkit.so.0"; exit 1; }
echo "shared: needs libidemkit.so.0 and loads $loaded; static: needs no shared libidemkit"

step "the README's C commands as written (install, build shared and static, run), with HOME=$work/home"
# Each bash block of the README's C section runs in a directory holding its C example (and a
# link to scripts/); $HOME in them is replaced, so nothing is installed outside $work. A block
# whose lines show output (`# ...`) must print that last.
python3 - README.md "$work/readme" "$work/home" <<'PY'
import pathlib, re, sys
readme = pathlib.Path(sys.argv[1]).read_text()
section = readme[readme.index("## C ABI"):]
section = section[:section.index("\n## ", 1)]
out, home = pathlib.Path(sys.argv[2]), sys.argv[3]
out.mkdir(parents=True)
blocks = re.findall(r"```(\w+)\n(.*?)```", section, re.S)
(out / "send_email.c").write_text(next(body for lang, body in blocks if lang == "c"))
shells = [body for lang, body in blocks if lang == "bash"]
for i, body in enumerate(shells):
    lines = body.splitlines()
    commands = [line for line in lines if not line.startswith("#")]
    (out / f"block{i}.sh").write_text("\n".join(commands).replace("$HOME", home) + "\n")
    (out / f"block{i}.expected").write_text(
        "".join(line[2:] + "\n" for line in lines if line.startswith("# ")))
if len(shells) < 3:
    sys.exit(f"the README's C section has {len(shells)} bash blocks; expected install, shared, static")
PY
ln -s "$root/scripts" "$work/readme/scripts"
for block in "$work"/readme/block*.sh; do
  sed 's/^/  $ /' "$block"
  (cd "$work/readme" && bash -euo pipefail "$block") >"${block%.sh}.out" 2>"${block%.sh}.err" || {
    cat "${block%.sh}.out" "${block%.sh}.err"
    echo "that README block failed"
    exit 1
  }
  expected=${block%.sh}.expected
  if [ -s "$expected" ] && ! diff -u "$expected" <(tail -n "$(wc -l <"$expected")" "${block%.sh}.out"); then
    echo "that README block does not print what the README shows (diff above)"
    exit 1
  fi
done
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
  # The shipped schema, every migration in order, under the test's table name (the URL is not
  # echoed: it may hold a password); each migration is safe to run again. Two runs creating it
  # at once can collide in the catalog: the loser tries once more.
  create_table() {
    cat sql/postgres/[0-9][0-9][0-9]_*.sql | sed 's/idemkit_records/idemkit_c_test/g' |
      PGOPTIONS='-c client_min_messages=warning' psql -q -v ON_ERROR_STOP=1 "$IDEMKIT_POSTGRES_URL" >/dev/null
  }
  create_table || { sleep 1; create_table; }
fi

# The shared-library run prints the one "C tests: N passed, M failed, K skipped" line that test
# summaries count; the reruns label theirs so that they are not counted three times.
# Both run from another directory: nothing depends on the working directory.
(cd "$elsewhere" && "$work/idemkit_test" "$work/vectors.txt")
(cd "$elsewhere" && "$work/idemkit_test_static" "$work/vectors.txt") |
  sed 's/^C tests: /C tests (static library): /'

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
cd "$elsewhere"
IDEMKIT_C_TEST_UNDER_VALGRIND=1 valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=1 \
  --suppressions="$root/tests/c/valgrind.supp" \
  --show-leak-kinds=definite --log-file="$work/valgrind.log" "$work/idemkit_test" "$work/vectors.txt" |
  sed 's/^C tests: /C tests (valgrind): /' || {
  cat "$work/valgrind.log"
  exit 1
}
sed -n '/HEAP SUMMARY/,$p' "$work/valgrind.log" | sed 's/^==[0-9]*== //'
