#!/usr/bin/env bash
# Builds the Java binding (native library included) and runs the agent demo on the in-memory store.
# The demo is compiled with the tests (java/idemkit/src/test/java/dev/idemkit/demo), not shipped in the jar.
#
#   scripts/demo.sh
#
# The first run compiles the Rust core into the native library (cargo, release) and downloads
# the Maven plugins and packages: several minutes on a cold machine (about 3 on 2 cores), a few
# seconds afterwards. The demo's last line, `events:`, counts how the store answered its calls.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Escape codes only on a terminal: cargo is told so, and Maven 3.8 prints colour resets even in
# batch mode, so its output is filtered.
plain() { cat; }
if [[ ! -t 1 || ! -t 2 ]]; then
    export CARGO_TERM_COLOR=never
    plain() { sed -u $'s/\e\\[[0-9;]*m//g'; }
fi

if [[ -e $REPO/java/idemkit/target/classpath.txt ]]; then
    echo "demo: building the Java binding and the native library (seconds when little changed)" >&2
else
    echo "demo: first run: compiling the Rust core into the native library (cargo build --release)" \
        "and downloading Maven's packages; this takes several minutes (about 3 on 2 cores), later runs seconds" >&2
fi
started=$SECONDS
# Maven's output (errors only, -q) goes to stderr; the demo's own to stdout.
mvn -B -q -f "$REPO/java/pom.xml" -DskipTests package 2>&1 | plain >&2
echo "demo: built in $((SECONDS - started)) s; running dev.idemkit.demo.AgentDemo" >&2
echo >&2
CP="$REPO/java/idemkit/target/classes:$REPO/java/idemkit/target/test-classes:$(cat "$REPO/java/idemkit/target/classpath.txt")"
# java.util.logging's warnings on one line, as `WARNING: <message>`.
exec java -Djava.util.logging.SimpleFormatter.format='%4$s: %5$s%6$s%n' -cp "$CP" dev.idemkit.demo.AgentDemo "$@"
