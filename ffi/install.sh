#!/usr/bin/env bash
# Installs librobota for C/C++ users: header, shared + static library, pkg-config file, CMake package.
#
# Usage: ffi/install.sh [--prefix DIR] [--libdir NAME] [--release] [--no-build]
#   --prefix DIR   where to install (default: $CARGO_TARGET_DIR/dist, i.e. target/dist)
#   --libdir NAME  library directory below the prefix (default: lib)
#   --release      install the release build (default: the debug build)
#   --no-build     do not run `cargo build`; install what is already built
#
# Result:
#   DIR/include/robota.h
#   DIR/lib/librobota.so (.dylib on macOS), DIR/lib/librobota.a
#   DIR/lib/pkgconfig/robota.pc                 -> pkg-config --cflags --libs robota
#   DIR/lib/cmake/robota/robota-config.cmake    -> find_package(robota) (CMAKE_PREFIX_PATH=DIR)
# The library has no SONAME/rpath: outside the linker's default paths, run programs with
# LD_LIBRARY_PATH=DIR/lib or link them with -Wl,-rpath,DIR/lib (CMake does the latter itself).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
# A relative CARGO_TARGET_DIR means the caller's directory; cargo runs from the root below.
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
export CARGO_TARGET_DIR="$target_dir"

prefix="$target_dir/dist"
libdir_rel="lib"
profile="debug"
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --libdir) libdir_rel="${2:?--libdir needs a name}"; shift 2 ;;
    --libdir=*) libdir_rel="${1#--libdir=}"; shift ;;
    --release) profile="release"; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "ffi/install.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$libdir_rel" in
  /*|*..*) echo "ffi/install.sh: --libdir must be a relative name like lib or lib64" >&2; exit 2 ;;
esac
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"

case "$(uname -s)" in
  Darwin)
    shared_name="librobota.dylib"
    libs_private="-framework CoreFoundation -framework Security -liconv -lSystem -lc -lm"
    cmake_libs_private="-framework CoreFoundation;-framework Security;-liconv;-lSystem;-lc;-lm" ;;
  *)
    shared_name="librobota.so"
    # What the Rust standard library needs when librobota.a is linked statically
    # (`rustc --print native-static-libs`).
    libs_private="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"
    cmake_libs_private="$(printf '%s' "$libs_private" | tr ' ' ';')" ;;
esac

if [ "$build" = 1 ]; then
  if [ "$profile" = release ]; then
    (cd "$root" && cargo build -p robota-ffi --lib --locked --release)
  else
    (cd "$root" && cargo build -p robota-ffi --lib --locked)
  fi
fi
built="$target_dir/$profile"
for f in "$shared_name" librobota.a; do
  if [ ! -f "$built/$f" ]; then
    echo "ffi/install.sh: $built/$f is missing: build it (cargo build -p robota-ffi, with --release for --release)" >&2
    exit 1
  fi
done

# The workspace version: the first `version = "..."` of the root Cargo.toml ([workspace.package]).
version="$(sed -n 's/^version = "\([^"]*\)".*/\1/p' "$root/Cargo.toml" | head -n 1)"
if [ -z "$version" ]; then
  echo "ffi/install.sh: no version in $root/Cargo.toml" >&2
  exit 1
fi
version_major="${version%%.*}"
version_minor="${version#*.}"
version_minor="${version_minor%%.*}"

libdir="$prefix/$libdir_rel"
includedir="$prefix/include"
cmakedir="$libdir/cmake/robota"
install -d "$includedir" "$libdir/pkgconfig" "$cmakedir"
install -m 0644 "$root/include/robota.h" "$includedir/robota.h"
install -m 0755 "$built/$shared_name" "$libdir/$shared_name"
install -m 0644 "$built/librobota.a" "$libdir/librobota.a"

# From <libdir>/cmake/robota back to the prefix: one `..` per path component.
to_prefix=""
rest="$libdir_rel/cmake/robota"
while [ -n "$rest" ]; do
  to_prefix="../$to_prefix"
  case "$rest" in */*) rest="${rest#*/}" ;; *) rest="" ;; esac
done
to_prefix="${to_prefix%/}"

fill() { # fill TEMPLATE OUTPUT: substitutes the @NAME@ placeholders
  sed -e "s|@PREFIX@|$prefix|g" \
      -e "s|@LIBDIR@|$libdir|g" \
      -e "s|@INCLUDEDIR@|$includedir|g" \
      -e "s|@VERSION@|$version|g" \
      -e "s|@VERSION_MAJOR@|$version_major|g" \
      -e "s|@VERSION_MINOR@|$version_minor|g" \
      -e "s|@LIBS_PRIVATE@|$libs_private|g" \
      -e "s|@CMAKE_LIBS_PRIVATE@|$cmake_libs_private|g" \
      -e "s|@CMAKE_TO_PREFIX@|$to_prefix|g" \
      -e "s|@INCLUDEDIR_REL@|include|g" \
      -e "s|@LIBDIR_REL@|$libdir_rel|g" \
      -e "s|@SHARED_NAME@|$shared_name|g" \
      "$1" > "$2"
  if grep -q '@[A-Z_]*@' "$2"; then
    echo "ffi/install.sh: unfilled placeholder in $2" >&2
    exit 1
  fi
}
fill "$root/ffi/robota.pc.in" "$libdir/pkgconfig/robota.pc"
fill "$root/ffi/cmake/robota-config.cmake.in" "$cmakedir/robota-config.cmake"
fill "$root/ffi/cmake/robota-config-version.cmake.in" "$cmakedir/robota-config-version.cmake"

echo "installed robota $version ($profile) into $prefix"
