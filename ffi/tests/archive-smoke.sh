#!/usr/bin/env bash
# Uses a C release archive of ffi/package.sh the way a C user would: unpacks it into a fresh
# directory, builds every examples/c program against it via pkg-config and via CMake
# find_package(robota), runs them, and checks they record NEEDED librobota.so.<ABI major>.
# Run by .ci/run with PATH=/usr/bin:/bin: it proves the archive needs no Rust toolchain.
#
# Usage: ffi/tests/archive-smoke.sh ARCHIVE WORKDIR   (WORKDIR: an empty scratch directory)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
archive="${1:?usage: archive-smoke.sh ARCHIVE WORKDIR}"
work="${2:?usage: archive-smoke.sh ARCHIVE WORKDIR}"
fail() { echo "archive-smoke: $*" >&2; exit 1; }

for tool in cargo rustc; do
  if command -v "$tool" >/dev/null 2>&1; then
    fail "$tool is on PATH ($(command -v "$tool")): run this without a Rust toolchain"
  fi
done

abi_major="$(sed -n 's/^#define ROBOTA_ABI_VERSION_MAJOR \([0-9][0-9]*\)$/\1/p' "$root/include/robota.h")"
[ -n "$abi_major" ] || fail "no ROBOTA_ABI_VERSION_MAJOR in include/robota.h"

mkdir -p "$work/unpacked"
tar -C "$work/unpacked" -xzf "$archive"
prefix="$(find "$work/unpacked" -mindepth 1 -maxdepth 1 -type d)"
[ "$(printf '%s\n' "$prefix" | wc -l)" = 1 ] || fail "the archive must hold exactly one top directory"
# Programs find the library through the rpath below, never through LD_LIBRARY_PATH.
unset LD_LIBRARY_PATH

needed_check() { # needed_check PROGRAM: the program records the SONAME, not a path or librobota.so
  local needed
  needed="$(LC_ALL=C readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(librobota[^]]*\)\]/\1/p')"
  [ "$needed" = "librobota.so.$abi_major" ] || fail "$1 records NEEDED '$needed', expected librobota.so.$abi_major"
}

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
libdir="$(pkg-config --variable=libdir robota)"
for example in "$root"/examples/c/*.c; do
  name="$(basename "$example" .c)"
  # shellcheck disable=SC2046 # pkg-config prints a list of flags
  cc -std=c11 -Wall -Wextra -Werror -pedantic -pthread "$example" $(pkg-config --cflags --libs robota) \
    -Wl,-rpath,"$libdir" -o "$work/$name-pkgconfig"
  needed_check "$work/$name-pkgconfig"
  (cd "$work" && "./$name-pkgconfig" >/dev/null) || fail "$name (pkg-config build) failed"
done
unset PKG_CONFIG_PATH

cmake -S "$root/examples/c" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/build" >/dev/null
for example in "$root"/examples/c/*.c; do
  name="$(basename "$example" .c)"
  needed_check "$work/build/$name"
  (cd "$work" && "build/$name" >/dev/null) || fail "$name (CMake build) failed"
done
echo "archive-smoke: $(basename "$archive"): every examples/c program built and ran via pkg-config and CMake"
