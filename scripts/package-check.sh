#!/usr/bin/env bash
# Checks what `cargo package` would ship: the crate's own files only, never the Java binding
# (java/), CI (.ci/), scripts or a build directory. Prints the offenders and exits 1.
#
#   scripts/package-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(cargo package --list --allow-dirty --quiet)
bad=$(grep -E '^(java/|\.ci/|scripts/|\.idemkit-run/)|(^|/)target/' <<<"$files" || true)
if [[ -n $bad ]]; then
  echo "scripts/package-check.sh: the package would ship files it must not; fix \`include\` in Cargo.toml:" >&2
  echo "$bad" >&2
  exit 1
fi
for needed in Cargo.toml README.md LICENSE-APACHE LICENSE-MIT src/lib.rs sql/postgres/001_idemkit_records.sql; do
  if ! grep -qx "$needed" <<<"$files"; then
    echo "scripts/package-check.sh: the package lacks $needed; add it to \`include\` in Cargo.toml" >&2
    exit 1
  fi
done
echo "the package ships $(wc -l <<<"$files") files, none from java/, .ci/, scripts/ or a target directory"
