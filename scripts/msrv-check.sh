#!/usr/bin/env bash
# Checks that the crate's declared `rust-version` (Cargo.toml) is still true of what it builds
# with: no package in Cargo.lock (normal, build and dev dependencies, every feature, this
# machine's platform) declares a newer `rust-version`, the lock file's format can be read by
# that cargo, and the edition is one that Rust knows. Prints each offender and exits 1.
#
#   scripts/msrv-check.sh
#
# This reads what the dependencies declare; it does not compile with the old toolchain (only
# the installed stable rustc is available here). Clippy's `incompatible_msrv` lint, run by
# scripts/test.sh, adds a check of the standard-library APIs the crate itself calls.
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
metadata=$(mktemp)
trap 'rm -f "$metadata"' EXIT
cargo metadata --format-version 1 --locked --all-features --filter-platform "$host" >"$metadata"
python3 - "$metadata" <<'PY'
import json, re, sys

def version(text):
    """(major, minor, patch) of "1.89" or "1.89.0"."""
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))

def shown(v):
    return ".".join(str(p) for p in v[:2]) if v[2] == 0 else ".".join(map(str, v))

meta = json.load(open(sys.argv[1]))
root_id = meta["resolve"]["root"]
packages = {p["id"]: p for p in meta["packages"]}
root = packages[root_id]
if not root.get("rust_version"):
    sys.exit("scripts/msrv-check.sh: Cargo.toml declares no rust-version; declare the oldest Rust the crate builds with")
ours = version(root["rust_version"])
problems = []

used = {n["id"] for n in meta["resolve"]["nodes"]}
for pid in sorted(used, key=lambda i: packages[i]["name"]):
    p = packages[pid]
    theirs = p.get("rust_version")
    if pid != root_id and theirs and version(theirs) > ours:
        problems.append(f"{p['name']} {p['version']} needs Rust {theirs}")

# The oldest cargo that reads each lock file format and each edition.
lock = open("Cargo.lock").read()
m = re.search(r"^version = (\d+)$", lock, re.M)
lock_format = int(m[1]) if m else 1
lock_needs = {1: (1, 0, 0), 2: (1, 41, 0), 3: (1, 53, 0), 4: (1, 78, 0)}.get(lock_format)
if lock_needs is None:
    problems.append(f"Cargo.lock has format version {lock_format}, unknown to this check")
elif lock_needs > ours:
    problems.append(f"Cargo.lock format version {lock_format} needs cargo {shown(lock_needs)}")
edition_needs = {"2015": (1, 0, 0), "2018": (1, 31, 0), "2021": (1, 56, 0), "2024": (1, 85, 0)}
needs = edition_needs.get(root["edition"], (999, 0, 0))
if needs > ours:
    problems.append(f"edition {root['edition']} needs Rust {shown(needs)}")

# The project's other crates (the C library in this workspace, the JNI crates in their own) say
# the same rust-version and license as the core, so a packager reading any one of them is told
# the truth.
import tomllib
for manifest in ["capi/Cargo.toml", "java/native/Cargo.toml", "java/native/testing/Cargo.toml"]:
    package = tomllib.load(open(manifest, "rb"))["package"]
    for field, want in (("rust-version", root["rust_version"]), ("license", root["license"])):
        if package.get(field) != want:
            problems.append(f"{manifest} says {field} = {package.get(field)!r}; the core says {want!r}")

if problems:
    print('scripts/msrv-check.sh: Cargo.toml says rust-version = "%s", but:' % root['rust_version'])
    for line in problems:
        print(f"  {line}")
    print("Raise rust-version in Cargo.toml (and the README), or pin an older version of each"
          " dependency named (cargo update -p NAME --precise VERSION).")
    sys.exit(1)
print(f"rust-version {root['rust_version']}: every one of {len(used) - 1} locked dependencies,"
      f" the lock file (format {lock_format}) and edition {root['edition']} fit")
PY
