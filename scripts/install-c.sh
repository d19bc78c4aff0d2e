#!/usr/bin/env bash
# Builds the C library (the crate in capi/) in release and installs it under a prefix:
#
#   PREFIX/lib/libidemkit.so.0          the shared library (its SONAME is libidemkit.so.0)
#   PREFIX/lib/libidemkit.so            a link to it, for `-lidemkit` at link time
#   PREFIX/lib/libidemkit.a             the static library
#   PREFIX/include/idemkit.h            the header
#   PREFIX/lib/pkgconfig/idemkit.pc     for `pkg-config --cflags --libs idemkit` (the shared
#                                       library; the static one under --static-only)
#   PREFIX/lib/pkgconfig/idemkit-static.pc
#                                       for `pkg-config [--static] --cflags --libs idemkit-static`:
#                                       the static library, named by its path, so that it is the
#                                       one linked also where libidemkit.so sits next to it
#
# Usage: scripts/install-c.sh --prefix DIR [--features LIST] [--static-only]
#   --prefix DIR     where to install (made if missing), e.g. /usr/local or "$HOME/.local"
#   --features LIST  cargo features of capi/: the stores besides `memory:` (default
#                    redis,postgres; '' for a library with the in-memory store only)
#   --static-only    install no shared library (then `-lidemkit` and idemkit.pc mean
#                    libidemkit.a too)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

usage() {
  echo "usage: scripts/install-c.sh --prefix DIR [--features LIST] [--static-only]" >&2
  exit 2
}
prefix=
features=redis,postgres
static_only=0
while (($# > 0)); do
  case $1 in
  --prefix)
    (($# >= 2)) || usage
    prefix=$2
    shift 2
    ;;
  --prefix=*)
    prefix=${1#--prefix=}
    shift
    ;;
  --features)
    (($# >= 2)) || usage
    features=$2
    shift 2
    ;;
  --features=*)
    features=${1#--features=}
    shift
    ;;
  --static-only)
    static_only=1
    shift
    ;;
  *)
    echo "scripts/install-c.sh: unknown argument \`$1\`" >&2
    usage
    ;;
  esac
done
if [ -z "$prefix" ]; then
  echo "scripts/install-c.sh: --prefix is required (where to install, e.g. --prefix /usr/local)" >&2
  usage
fi
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)

# What a program linking libidemkit.a needs from the system, exactly as rustc reports it for
# this target and these features (`note: native-static-libs: -lgcc_s -lutil ...`). This build
# of the static library alone is also what reports it.
echo "building the static library: cargo rustc --release -p idemkit-capi --features '$features' --crate-type staticlib"
cargo rustc --release -p idemkit-capi --features "$features" --crate-type staticlib \
  -- --print native-static-libs 2>&1 | tee "$prefix/.idemkit-build.log" >&2
libs_private=$(sed -n 's/^note: native-static-libs: //p' "$prefix/.idemkit-build.log" | tail -n 1)
rm -f "$prefix/.idemkit-build.log"
if [ -z "$libs_private" ]; then
  echo "scripts/install-c.sh: rustc printed no native-static-libs line (see the output above)" >&2
  exit 1
fi

echo "building the shared library: cargo build --release -p idemkit-capi --features '$features'"
cargo build --release -p idemkit-capi --features "$features"

metadata=$(cargo metadata --format-version 1 --no-deps)
field() {
  python3 -c 'import json, sys
m = json.load(sys.stdin)
print(m["target_directory"] if sys.argv[1] == "target" else
      next(p["version"] for p in m["packages"] if p["name"] == "idemkit-capi"))' "$1" <<<"$metadata"
}
lib_dir=$(field target)/release
version=$(field version)

install -d "$prefix/lib/pkgconfig" "$prefix/include"
install -m 644 include/idemkit.h "$prefix/include/idemkit.h"
install -m 644 "$lib_dir/libidemkit.a" "$prefix/lib/libidemkit.a"
if [ "$static_only" = 1 ]; then
  rm -f "$prefix"/lib/libidemkit.so*
else
  # The file is named after its SONAME (set by capi/build.rs), the name programs load.
  soname=$(readelf -d "$lib_dir/libidemkit.so" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
  if [ -z "$soname" ]; then
    echo "scripts/install-c.sh: $lib_dir/libidemkit.so has no SONAME (capi/build.rs sets it)" >&2
    exit 1
  fi
  install -m 755 "$lib_dir/libidemkit.so" "$prefix/lib/$soname"
  ln -sfn "$soname" "$prefix/lib/libidemkit.so"
fi

cat >"$prefix/lib/pkgconfig/idemkit.pc" <<EOF
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: idemkit
Description: Make side-effecting calls safe to retry (the C library)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lidemkit
Libs.private: $libs_private
EOF

# `pkg-config --static --libs idemkit` puts Libs.private after Libs, and the linker binds the
# `-lidemkit` of Libs to libidemkit.so wherever that is installed too; this module names the
# archive itself, with what it needs from the system in Libs too (so --static is optional).
cat >"$prefix/lib/pkgconfig/idemkit-static.pc" <<EOF
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: idemkit-static
Description: Make side-effecting calls safe to retry (the C library, linked statically)
Version: $version
Cflags: -I\${includedir}
Libs: \${libdir}/libidemkit.a $libs_private
EOF

echo "installed idemkit $version (features: ${features:-none}) under $prefix:"
(cd "$prefix" && ls -l lib/libidemkit.* lib/pkgconfig/idemkit*.pc include/idemkit.h | awk '{$1=$2=$3=$4=$5=$6=$7=$8=""; print " " $0}')
