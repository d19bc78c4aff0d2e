#!/usr/bin/env bash
# Builds the Java binding (native library included) and runs the agent demo on the in-memory store.
# The demo is compiled with the tests (java/idemkit/src/test/java/dev/idemkit/demo), not shipped in the jar.
#
#   scripts/demo.sh
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mvn -q -f "$REPO/java/pom.xml" -DskipTests package
CP="$REPO/java/idemkit/target/classes:$REPO/java/idemkit/target/test-classes:$(cat "$REPO/java/idemkit/target/classpath.txt")"
exec java -cp "$CP" dev.idemkit.demo.AgentDemo "$@"
