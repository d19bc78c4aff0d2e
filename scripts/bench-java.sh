#!/usr/bin/env bash
# JMH benchmarks of the Java binding against plain-Java baselines, in one run.
#
#   scripts/bench-java.sh                 all of DispatchBenchmark (about 2 minutes)
#   scripts/bench-java.sh 'idemkit_hit'   a subset (JMH regex), extra JMH options after it
#
# Results: java/idemkit/target/jmh-result.json and the table JMH prints.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mvn -q -f "$REPO/java/pom.xml" -Pbench -DskipTests package
CP="$REPO/java/idemkit/target/classes:$(cat "$REPO/java/idemkit/target/classpath.txt")"
FILTER="${1:-dev.idemkit.DispatchBenchmark}"
shift || true
exec java -cp "$CP" org.openjdk.jmh.Main "$FILTER" -rf json -rff "$REPO/java/idemkit/target/jmh-result.json" "$@"
