#!/usr/bin/env bash
# Installs librobota for C/C++ users: header, shared + static library, pkg-config file, CMake package.
#
# Usage: ffi/install.sh [--prefix DIR] [--libdir NAME] [--profile dev|release|release-dist] [--target TRIPLE]
#                       [--no-build] [--versioned] [--strip] [--relocatable]
#   --prefix DIR      where to install (default: $CARGO_TARGET_DIR/dist, i.e. target/dist)
#   --libdir NAME     library directory below the prefix (default: lib)
#   --profile NAME    dev (the debug build, default), release, or release-dist (the size-tuned profile of
#                     the release artifacts); --release is --profile release
#   --target TRIPLE   install the build for TRIPLE ($CARGO_TARGET_DIR/TRIPLE/...; cargo --target)
#   --no-build        do not run `cargo build`; install what is already built
#   --versioned       (ELF only; needs patchelf) install lib/librobota.so.<version> with SONAME
#                     librobota.so.<ABI major> and the links librobota.so.<ABI major> and
#                     librobota.so, so programs record NEEDED librobota.so.<ABI major>
#   --strip           strip the libraries ($STRIP, default strip): --strip-unneeded for the
#                     shared library, --strip-debug for the static one
#   --relocatable     robota.pc finds the prefix from its own location (${pcfiledir}) instead of
#                     naming DIR, so the tree may be moved (the CMake package always does)
#
# Result:
#   DIR/include/robota.h
#   DIR/lib/librobota.so (.dylib on macOS), DIR/lib/librobota.a
#   DIR/lib/pkgconfig/robota.pc                 -> pkg-config --cflags --libs robota
#   DIR/lib/cmake/robota/robota-config.cmake    -> find_package(robota) (CMAKE_PREFIX_PATH=DIR)
# Without --versioned the library has no SONAME. It has no rpath: outside the linker's default
# paths, run programs with LD_LIBRARY_PATH=DIR/lib or link them with -Wl,-rpath,DIR/lib (CMake
# does the latter itself). ffi/package.sh builds the release archive with this script.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
# A relative CARGO_TARGET_DIR means the caller's directory; cargo runs from the root below.
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
export CARGO_TARGET_DIR="$target_dir"

prefix="$target_dir/dist"
libdir_rel="lib"
profile="debug"
target=""
build=1
versioned=0
strip_libs=0
relocatable=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --libdir) libdir_rel="${2:?--libdir needs a name}"; shift 2 ;;
    --libdir=*) libdir_rel="${1#--libdir=}"; shift ;;
    --release) profile="release"; shift ;;
    --profile|--profile=*)
      if [ "$1" = --profile ]; then value="${2:-}"; shift 2 || shift; else value="${1#--profile=}"; shift; fi
      case "$value" in
        dev|debug) profile="debug" ;;
        release|release-dist) profile="$value" ;;
        *) echo "ffi/install.sh: --profile must be dev, release or release-dist, not '$value'" >&2; exit 2 ;;
      esac ;;
    --target) target="${2:?--target needs a target triple}"; shift 2 ;;
    --target=*) target="${1#--target=}"; shift ;;
    --no-build) build=0; shift ;;
    --versioned) versioned=1; shift ;;
    --strip) strip_libs=1; shift ;;
    --relocatable) relocatable=1; shift ;;
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

if [ "$versioned" = 1 ]; then
  if [ "$shared_name" != librobota.so ]; then
    echo "ffi/install.sh: --versioned is for ELF shared libraries (Linux), not $shared_name" >&2
    exit 2
  fi
  if ! command -v patchelf >/dev/null 2>&1; then
    echo "ffi/install.sh: --versioned needs patchelf to set the SONAME (Debian: apt-get install patchelf)" >&2
    exit 1
  fi
fi

cargo_args=(build -p robota-ffi --lib --locked)
[ "$profile" = debug ] || cargo_args+=(--profile "$profile")
built="$target_dir/$profile"
if [ -n "$target" ]; then
  cargo_args+=(--target "$target")
  built="$target_dir/$target/$profile"
fi
if [ "$build" = 1 ]; then
  (cd "$root" && cargo "${cargo_args[@]}")
fi
for f in "$shared_name" librobota.a; do
  if [ ! -f "$built/$f" ]; then
    echo "ffi/install.sh: $built/$f is missing: build it (cargo ${cargo_args[*]})" >&2
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
# The SONAME's number: the ABI major of the header (equal to the package major, ffi/src/lib.rs).
abi_major="$(sed -n 's/^#define ROBOTA_ABI_VERSION_MAJOR \([0-9][0-9]*\)$/\1/p' "$root/include/robota.h")"
if [ -z "$abi_major" ]; then
  echo "ffi/install.sh: no ROBOTA_ABI_VERSION_MAJOR in $root/include/robota.h" >&2
  exit 1
fi

libdir="$prefix/$libdir_rel"
includedir="$prefix/include"
cmakedir="$libdir/cmake/robota"
install -d "$includedir" "$libdir/pkgconfig" "$cmakedir"
install -m 0644 "$root/include/robota.h" "$includedir/robota.h"
shared_file="$shared_name"
[ "$versioned" = 1 ] && shared_file="librobota.so.$version"
rm -f "$libdir/$shared_name" "$libdir/librobota.so.$abi_major" "$libdir/$shared_file"
install -m 0755 "$built/$shared_name" "$libdir/$shared_file"
install -m 0644 "$built/librobota.a" "$libdir/librobota.a"
if [ "$strip_libs" = 1 ]; then
  strip_tool="${STRIP:-strip}"
  "$strip_tool" --strip-unneeded "$libdir/$shared_file"
  "$strip_tool" --strip-debug "$libdir/librobota.a"
fi
cmake_soname="IMPORTED_NO_SONAME TRUE"
if [ "$versioned" = 1 ]; then
  # After stripping: strip may undo what patchelf rewrote. cargo's own build keeps no SONAME, so
  # tests and examples linking target/debug with an rpath are unaffected.
  patchelf --set-soname "librobota.so.$abi_major" "$libdir/$shared_file"
  ln -s "$shared_file" "$libdir/librobota.so.$abi_major"
  ln -s "librobota.so.$abi_major" "$libdir/$shared_name"
  cmake_soname="IMPORTED_SONAME \"librobota.so.$abi_major\""
fi

# From <libdir>/cmake/robota back to the prefix: one `..` per path component.
to_prefix=""
rest="$libdir_rel/cmake/robota"
while [ -n "$rest" ]; do
  to_prefix="../$to_prefix"
  case "$rest" in */*) rest="${rest#*/}" ;; *) rest="" ;; esac
done
to_prefix="${to_prefix%/}"
pc_prefix="$prefix"
# From <libdir>/pkgconfig back to the prefix, for pkg-config's ${pcfiledir}.
[ "$relocatable" = 1 ] && pc_prefix="\${pcfiledir}/../${to_prefix#../../}"

fill() { # fill TEMPLATE OUTPUT: substitutes the @NAME@ placeholders
  sed -e "s|@PREFIX@|$pc_prefix|g" \
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
      -e "s|@SHARED_FILE@|$shared_file|g" \
      -e "s|@CMAKE_SONAME_PROPERTY@|$cmake_soname|g" \
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
