#!/usr/bin/env bash
# Builds the C release archive of librobota: OUT/robota-<version>-<triple>.tar.gz.
#
# Usage: ffi/package.sh [--target TRIPLE] [--profile dev|release|release-dist] [--no-build] [--out DIR]
#   --target TRIPLE   the Rust target to package (default: the host's, from `rustc -vV`); an
#                     explicit target is built and read under $CARGO_TARGET_DIR/TRIPLE/
#   --profile NAME    dev (default), release or release-dist: $CARGO_TARGET_DIR[/TRIPLE]/{debug,release,release-dist}
#   --no-build        package what is already built instead of running `cargo build`
#   --out DIR         where to write the archive (default: $CARGO_TARGET_DIR/package)
# Environment: STRIP (default: strip on the host; for another target <gnu triple>-strip, else
# llvm-strip), NM (default: nm).
#
# The archive holds one directory robota-<version>-<triple>/ with
#   include/robota.h
#   lib/librobota.so.<version>   SONAME librobota.so.<ABI major>, stripped (--strip-unneeded)
#   lib/librobota.so.<ABI major> -> librobota.so.<version>
#   lib/librobota.so             -> librobota.so.<ABI major>
#   lib/librobota.a              stripped (--strip-debug)
#   lib/pkgconfig/robota.pc      relocatable (${pcfiledir})
#   lib/cmake/robota/robota-config.cmake, robota-config-version.cmake   relocatable
#   README.txt (and the repository's license files, if any)
# It is laid out by ffi/install.sh (--versioned --strip --relocatable) and refused when the shared
# library exports anything but robota_* symbols or lacks a function include/robota.h declares.
# ELF (Linux) targets only. Needs patchelf.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
export CARGO_TARGET_DIR="$target_dir"

die() { echo "ffi/package.sh: $*" >&2; exit 1; }

target=""
profile="dev"
build=1
out="$target_dir/package"
while [ $# -gt 0 ]; do
  case "$1" in
    --target) target="${2:?--target needs a target triple}"; shift 2 ;;
    --target=*) target="${1#--target=}"; shift ;;
    --profile) profile="${2:?--profile needs dev or release}"; shift 2 ;;
    --profile=*) profile="${1#--profile=}"; shift ;;
    --no-build) build=0; shift ;;
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --out=*) out="${1#--out=}"; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "ffi/package.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$profile" in
  dev|release|release-dist) ;;
  *) echo "ffi/package.sh: --profile must be dev, release or release-dist, not '$profile'" >&2; exit 2 ;;
esac

host="$(rustc -vV 2>/dev/null | sed -n 's/^host: //p')" || true
triple="${target:-$host}"
[ -n "$triple" ] || die "no --target given and rustc cannot tell the host triple"
case "$triple" in
  *-linux-*|*-linux) ;;
  *) die "$triple is not a Linux (ELF) target: the archive's SONAME and symbol checks are ELF's" ;;
esac

# The strip for the target's objects: the host's own strip only knows the host's.
if [ -z "${STRIP:-}" ]; then
  if [ -z "$target" ] || [ "$triple" = "$host" ]; then
    STRIP=strip
  else
    arch="${triple%%-*}"
    gnu_strip="$arch-linux-gnu-strip"
    if command -v "$gnu_strip" >/dev/null 2>&1; then STRIP="$gnu_strip"
    elif command -v llvm-strip >/dev/null 2>&1; then STRIP=llvm-strip
    else die "no strip for $triple: install $gnu_strip or llvm-strip, or set STRIP"
    fi
  fi
fi
export STRIP
NM="${NM:-nm}"
command -v "$STRIP" >/dev/null 2>&1 || die "STRIP=$STRIP is not on PATH"
command -v "$NM" >/dev/null 2>&1 || die "NM=$NM is not on PATH"

version="$(sed -n 's/^version = "\([^"]*\)".*/\1/p' "$root/Cargo.toml" | head -n 1)"
[ -n "$version" ] || die "no version in $root/Cargo.toml"
abi_major="$(sed -n 's/^#define ROBOTA_ABI_VERSION_MAJOR \([0-9][0-9]*\)$/\1/p' "$root/include/robota.h")"
[ -n "$abi_major" ] || die "no ROBOTA_ABI_VERSION_MAJOR in include/robota.h"

name="robota-$version-$triple"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
top="$stage/$name"

install_args=(--prefix "$top" --profile "$profile" --versioned --strip --relocatable)
[ -n "$target" ] && install_args+=(--target "$target")
[ "$build" = 0 ] && install_args+=(--no-build)
"$root/ffi/install.sh" "${install_args[@]}" >/dev/null

lib="$top/lib/librobota.so.$version"
soname="$(LC_ALL=C readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
[ "$soname" = "librobota.so.$abi_major" ] || die "$lib has SONAME '$soname', expected librobota.so.$abi_major"

# Exports: only robota_*, and every function the header declares.
exported="$stage/exported.txt"
declared="$stage/declared.txt"
"$NM" -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u > "$exported"
[ -s "$exported" ] || die "$NM found no exported symbols in $lib"
if grep -v '^robota_' "$exported" > "$stage/foreign.txt"; then
  die "librobota.so exports symbols outside robota_*: $(tr '\n' ' ' < "$stage/foreign.txt")"
fi
# cbindgen writes each declaration from column 0 as `<return type> robota_name(`; function
# pointer typedefs start with `typedef` and are not symbols.
grep -E '^[A-Za-z_].*[ *]robota_[A-Za-z0-9_]+\(' "$root/include/robota.h" | grep -v '^typedef' \
  | sed -E 's/.*[ *](robota_[A-Za-z0-9_]+)\(.*/\1/' | sort -u > "$declared"
[ -s "$declared" ] || die "found no function declarations in include/robota.h"
missing="$(comm -23 "$declared" "$exported")"
[ -z "$missing" ] || die "include/robota.h declares functions librobota.so does not export: $(echo $missing)"

license="$(sed -n 's/^license = "\([^"]*\)".*/\1/p' "$root/Cargo.toml" | head -n 1)"
for f in "$root"/LICENSE* "$root"/COPYING*; do
  [ -f "$f" ] && install -m 0644 "$f" "$top/"
done
cat > "$top/README.txt" <<EOF
robota $version for $triple: the C library of the robota agent engine.

License: ${license:-see the repository}.
Compatibility: docs/COMPATIBILITY.md of the robota repository (the C ABI grows but does not break
within a major version; the shared library's SONAME is librobota.so.$abi_major).

include/robota.h       the header (its top comment gives the conventions)
lib/librobota.so.*     the shared library, SONAME librobota.so.$abi_major
lib/librobota.a        the static library
lib/pkgconfig/         robota.pc:  PKG_CONFIG_PATH=<this dir>/lib/pkgconfig pkg-config --cflags --libs robota
lib/cmake/robota/      find_package(robota $version): -DCMAKE_PREFIX_PATH=<this dir>

Both work wherever this directory is unpacked. Outside the linker's default paths, run programs with
LD_LIBRARY_PATH=<this dir>/lib or link them with -Wl,-rpath,<this dir>/lib (CMake does that itself).
EOF

archive="$out/$name.tar.gz"
tar -C "$stage" --owner=0 --group=0 --numeric-owner -czf "$archive" "$name"
echo "$archive"
