#!/usr/bin/env bash
# Builds robota's release artifacts: the Python wheels and sdist, the Node packages (main package +
# one per platform), the C archives and the Swift package's Linux archive; checks each library's
# architecture and exported symbols and prints its size. docs/RELEASING.md describes the matrix
# and what each artifact holds.
#
# Usage: scripts/release.sh [--quick] [--out DIR] [--only LIST] [--targets LIST]
#   (default)      release mode: the `release-dist` profile (Cargo.toml), every target of this host's
#                  matrix; Linux targets are cross-compiled with zig (pinned in
#                  scripts/release-requirements.txt) against glibc 2.17 / musl.
#   --quick        CI mode: the dev profile, every package for the host target, reusing what the
#                  earlier CI steps built, plus the aarch64-unknown-linux-gnu C library (built with
#                  zig, checked for architecture and exports). scripts/release-smoke.sh then
#                  installs the artifacts with no Rust toolchain on PATH.
#   --out DIR      where artifacts go (default: $CARGO_TARGET_DIR/release-artifacts), replaced.
#   --only LIST    comma-separated subset of: python,node,c,swift
#   --targets LIST comma-separated Rust target triples instead of the matrix (release mode).
#
# Result (DIR):
#   python/robota-<v>-cp310-abi3-<platform>.whl ...   python/robota-<v>.tar.gz (sdist)
#   node/robota-native-<v>.tgz                        node/robota-native-<platform>-<v>.tgz ...
#   c/robota-<v>-<triple>.tar.gz ...                  swift/robota-swift-<v>-<triple>.tar.gz
#   SIZES.md (every artifact and the stripped size of the library inside it)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
case "$CARGO_TARGET_DIR" in /*) ;; *) CARGO_TARGET_DIR="$repo/$CARGO_TARGET_DIR" ;; esac

quick=0
out=""
only="python,node,c,swift"
targets_override=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --only) only="${2:?--only needs a list}"; shift 2 ;;
    --targets) targets_override="${2:?--targets needs a list}"; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "release.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
for part in ${only//,/ }; do
  case "$part" in python|node|c|swift) ;; *) echo "release.sh: --only: unknown part '$part' (python,node,c,swift)" >&2; exit 2 ;; esac
done
wants() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

out="${out:-$CARGO_TARGET_DIR/release-artifacts}"
rm -rf "$out"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

version="$(sed -n 's/^version = "\([^"]*\)".*/\1/p' Cargo.toml | head -n 1)"
[ -n "$version" ] || { echo "release.sh: no version in Cargo.toml" >&2; exit 1; }
host="$(rustc -vV | sed -n 's/^host: //p')"

if [ "$quick" = 1 ]; then
  profile="dev"
else
  profile="release-dist"
fi
# The directory cargo writes a profile's artifacts to.
profile_dir() { case "$1" in dev) echo debug ;; *) echo "$1" ;; esac; }

# The matrix per host OS (release mode). macOS and Windows are documented in docs/RELEASING.md;
# only Linux is built and tested by CI.
case "$(uname -s)" in
  Linux)
    python_targets="x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl"
    node_targets="x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl"
    c_targets="x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl"
    swift_targets="x86_64-unknown-linux-gnu" ;;
  Darwin)
    python_targets="universal2-apple-darwin"
    node_targets="aarch64-apple-darwin x86_64-apple-darwin"
    c_targets="aarch64-apple-darwin x86_64-apple-darwin"
    swift_targets="" ;;  # bindings-swift/scripts/build-xcframework.sh
  MINGW*|MSYS*|CYGWIN*)
    python_targets="x86_64-pc-windows-msvc"
    node_targets="x86_64-pc-windows-msvc"
    c_targets=""
    swift_targets="" ;;
  *) echo "release.sh: no target matrix for $(uname -s)" >&2; exit 1 ;;
esac
if [ -n "$targets_override" ]; then
  python_targets="${targets_override//,/ }"; node_targets="$python_targets"
  c_targets="$python_targets"; swift_targets="$python_targets"
fi
if [ "$quick" = 1 ]; then
  python_targets="$host"; node_targets="$host"; swift_targets="$host"
  c_targets="$host aarch64-unknown-linux-gnu"
fi

# --- cross-compilation tools (zig, cargo-zigbuild, maturin), pinned, in their own venv -----------
tools_venv="$CARGO_TARGET_DIR/release-tools-venv"
tools_ready=0
release_tools() {
  [ "$tools_ready" = 1 ] && return 0
  if [ ! -x "$tools_venv/bin/python" ]; then
    python3 -m venv "$tools_venv"
  fi
  "$tools_venv/bin/python" -m pip install -q -r scripts/release-requirements.txt
  # napi's --cross-compile looks for `zig` on PATH; the ziglang wheel ships it as a module.
  mkdir -p "$tools_venv/zig-shim"
  printf '#!/bin/sh\nexec "%s" -m ziglang "$@"\n' "$tools_venv/bin/python" > "$tools_venv/zig-shim/zig"
  chmod +x "$tools_venv/zig-shim/zig"
  export PATH="$tools_venv/bin:$tools_venv/zig-shim:$PATH"
  tools_ready=1
}
ensure_rust_target() {
  rustup target list --installed | grep -qx "$1" || rustup target add "$1"
}
# glibc targets are linked against glibc 2.17 (manylinux2014), the oldest glibc the wheels claim.
glibc_floor=2.17
zig_target() { case "$1" in *-linux-gnu) echo "$1.$glibc_floor" ;; *) echo "$1" ;; esac; }

# --- checks every library passes ----------------------------------------------------------------
# The ELF machine a target's libraries must have.
elf_machine() {
  case "$1" in
    x86_64-*-linux-*) echo "Advanced Micro Devices X86-64" ;;
    aarch64-*-linux-*) echo "AArch64" ;;
    *) echo "" ;;
  esac
}
# check_library FILE TARGET EXPORT_REGEX [HOST_IMPORTS]: the architecture is the target's, every
# exported (defined, dynamic) symbol matches EXPORT_REGEX, and a glibc target's library needs no
# more of glibc than its target promises.
check_library() {
  local file="$1" target="$2" allowed="$3" host_imports="${4:-^\$}" machine
  machine="$(elf_machine "$target")"
  [ -n "$machine" ] || return 0  # not ELF (macOS, Windows): checked by their own platforms
  if ! readelf -h "$file" | grep -q "Machine: *$machine\$"; then
    echo "release.sh: $file is not a $target library: $(readelf -h "$file" | grep Machine:)" >&2
    exit 1
  fi
  local unexpected
  unexpected="$(nm -D --defined-only "$file" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }' | grep -Ev "$allowed" || true)"
  if [ -n "$unexpected" ]; then
    echo "release.sh: $file exports symbols outside its API ($allowed):" >&2
    echo "$unexpected" | head -20 >&2
    exit 1
  fi
  # A glibc function newer than the glibc a library is linked for (zig's stubs) is left as an
  # unversioned, non-weak reference: the library loads, then a call to it ends the process with
  # "symbol lookup error" on an older system. The only unversioned references allowed are the
  # host's own API (HOST_IMPORTS: the Python or Node C API) and weak ones, which the standard
  # library checks before it calls them.
  case "$target" in
    *-linux-gnu)
      local unbound
      unbound="$(nm -D --undefined-only "$file" | awk '$1 == "U" && $2 !~ /@/ { print $2 }' | grep -Ev "$host_imports" || true)"
      if [ -n "$unbound" ]; then
        echo "release.sh: $file calls functions its glibc ($glibc_floor) does not have, so they would be missing at run time:" >&2
        echo "$unbound" | head -20 >&2
        echo "  (call them through libc::syscall, or look them up at run time, instead of linking them)" >&2
        exit 1
      fi ;;
  esac
  # Release builds of glibc targets promise $glibc_floor (zig_target): a newer symbol version means
  # a build step linked against another glibc, and the library would not load on older systems.
  # (Quick mode's host libraries are CI's own builds, linked against the host's glibc.)
  case "$quick:$target" in
    0:*-linux-gnu)
      local newest
      newest="$(objdump -T "$file" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/^GLIBC_//' | sort -uV | tail -n 1)"
      if [ -n "$newest" ] && [ "$(printf '%s\n' "$newest" "$glibc_floor" | sort -V | tail -n 1)" != "$glibc_floor" ]; then
        echo "release.sh: $file needs glibc $newest, newer than the $glibc_floor its target promises:" >&2
        objdump -T "$file" | grep 'GLIBC_' | grep -Fv "GLIBC_$glibc_floor" | sort -t'(' -k2 -V | tail -n 10 >&2
        exit 1
      fi ;;
  esac
}
sizes="$out/SIZES.md"
{
  echo "# robota $version release artifacts ($( [ "$quick" = 1 ] && echo "quick mode, dev profile" || echo "release-dist profile"))"
  echo
  echo "| artifact | artifact size | library | stripped library size |"
  echo "| --- | ---: | --- | ---: |"
} > "$sizes"
mb() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.1f MB", b / 1000000 }'; }
# The size budget of one stripped library in release mode (BENCHMARKS.md, "The size budget"): the
# whole engine with every package's features; the Swift library also carries uniffi's scaffolding
# of each exported function. A release that grows past it fails here, so growth is a decision
# someone makes, not a drift nobody saw.
budget_mb() { case "$1" in librobota_swift.so) echo 31 ;; *) echo 26 ;; esac; }
over_budget=""
# record ARTIFACT LIBRARY_NAME STRIPPED_COPY
record() {
  printf '| %s | %s | %s | %s |\n' "$(basename "$1")" "$(mb "$1")" "$2" "$(mb "$3")" >> "$sizes"
  if [ "$quick" = 0 ] && [ "$(stat -c %s "$3")" -gt $(($(budget_mb "$2") * 1000000)) ]; then
    over_budget="$over_budget  $(basename "$1"): $2 is $(mb "$3") stripped, over its $(budget_mb "$2") MB"$'\n'
  fi
}
# stripped_copy FILE TARGET: a stripped copy of a library (the size users load). A foreign
# architecture's library stays as built (see strip_for).
stripped_copy() {
  local file="$1" copy
  copy="$(mktemp)"
  cp "$file" "$copy"
  "$(strip_for "$2")" --strip-unneeded "$copy"
  echo "$copy"
}

# --- Python: abi3 wheels + sdist ----------------------------------------------------------------
build_python() {
  local target wheel
  release_tools
  mkdir -p "$out/python"
  for target in $python_targets; do
    if [ "$quick" = 1 ]; then
      # The dev build the CI's Python step already made; the wheel carries the host's glibc tag.
      maturin build -m bindings-python/Cargo.toml --profile dev --locked --out "$out/python"
    else
      local compat="manylinux2014"
      case "$target" in *-musl) compat="musllinux_1_2" ;; *-darwin|*-windows-*) compat="" ;; esac
      [ "$target" = universal2-apple-darwin ] || ensure_rust_target "$target"
      if [ -n "$compat" ]; then
        maturin build -m bindings-python/Cargo.toml --profile "$profile" --locked --target "$target" \
          --zig --compatibility "$compat" --out "$out/python"
      else
        maturin build -m bindings-python/Cargo.toml --profile "$profile" --locked --target "$target" --out "$out/python"
      fi
    fi
  done
  maturin sdist -m bindings-python/Cargo.toml --out "$out/python"
  for wheel in "$out"/python/*.whl; do
    local unpacked target_of_wheel
    unpacked="$(mktemp -d)"
    python3 -m zipfile -e "$wheel" "$unpacked"
    case "$wheel" in
      *aarch64*) target_of_wheel="aarch64-unknown-linux-gnu" ;;
      *x86_64*) target_of_wheel="x86_64-unknown-linux-gnu" ;;
      *) target_of_wheel="" ;;
    esac
    local lib
    lib="$(find "$unpacked" -name '_native*.so' | head -n 1)"
    if [ -n "$lib" ]; then
      check_library "$lib" "$target_of_wheel" '^PyInit_(_native|pyo3_async_runtimes)$' '^_?Py'
      local copy; copy="$(stripped_copy "$lib" "$target_of_wheel")"
      record "$wheel" "robota/_native.abi3.so" "$copy"
      rm -f "$copy"
    fi
    rm -rf "$unpacked"
  done
}

# --- Node: one package per platform + the main package -------------------------------------------
# The napi platform name of a target (as in bindings-node/npm/<name>).
napi_platform() {
  case "$1" in
    x86_64-unknown-linux-gnu) echo linux-x64-gnu ;;
    aarch64-unknown-linux-gnu) echo linux-arm64-gnu ;;
    x86_64-unknown-linux-musl) echo linux-x64-musl ;;
    aarch64-unknown-linux-musl) echo linux-arm64-musl ;;
    x86_64-apple-darwin) echo darwin-x64 ;;
    aarch64-apple-darwin) echo darwin-arm64 ;;
    x86_64-pc-windows-msvc) echo win32-x64-msvc ;;
    *) echo "release.sh: no Node platform package for $1" >&2; return 1 ;;
  esac
}
build_node() {
  local target platform stage addon
  mkdir -p "$out/node"
  [ -d bindings-node/node_modules ] || (cd bindings-node && npm install --no-audit --no-fund)
  for target in $node_targets; do
    platform="$(napi_platform "$target")"
    stage="$(mktemp -d)"
    if [ "$quick" = 1 ]; then
      # The addon the CI's Node step built (napi build, debug), without its debug info.
      addon="bindings-node/robota.$platform.node"
      [ -f "$addon" ] || { echo "release.sh: $addon is missing: run 'npm run build:native' in bindings-node" >&2; exit 1; }
      cp "$addon" "$stage/"
      strip --strip-debug "$stage/robota.$platform.node"
    else
      ensure_rust_target "$target"
      local cross=()
      case "$target" in *-linux-*) release_tools; cross=(--cross-compile) ;; esac
      # `zig_target`: napi passes a versioned target to cargo-zigbuild (glibc 2.17, as the others).
      (cd bindings-node && npx napi build --platform --profile "$profile" --target "$(zig_target "$target")" "${cross[@]}" \
        --output-dir "$stage" --no-js --dts unused.d.ts -- --locked)
      rm -f "$stage/unused.d.ts"
    fi
    addon="$stage/robota.$platform.node"
    check_library "$addon" "$target" '^(napi_register_module_v1|node_api_module_get_api_version_v1)$' '^(napi_|node_api_)'
    cp bindings-node/npm/"$platform"/package.json bindings-node/npm/"$platform"/README.md "$stage/"
    local tarball
    tarball="$(cd "$stage" && npm pack --silent --pack-destination "$out/node" | tail -n 1)"
    if ! tar -tzf "$out/node/$tarball" | grep -qx "package/robota.$platform.node"; then
      echo "release.sh: $tarball has no robota.$platform.node" >&2
      exit 1
    fi
    local copy; copy="$(stripped_copy "$addon" "$target")"
    record "$out/node/$tarball" "robota.$platform.node" "$copy"
    rm -f "$copy"
    rm -rf "$stage"
  done
  # The main package: the JS loader, the facade and its types, no addon. optionalDependencies
  # name every platform package of the matrix at this version; npm installs the one that fits.
  [ -f bindings-node/dist/esm/index.js ] || (cd bindings-node && npm run build:ts)
  stage="$(mktemp -d)"
  cp -r bindings-node/package.json bindings-node/README.md bindings-node/index.js bindings-node/index.d.ts \
    bindings-node/dist "$stage/"
  mkdir -p "$stage/scripts"
  cp bindings-node/scripts/prepack-check.cjs "$stage/scripts/"
  node -e '
    const fs = require("node:fs");
    const [file, version, ...platforms] = process.argv.slice(1);
    const pkg = JSON.parse(fs.readFileSync(file, "utf8"));
    pkg.optionalDependencies = Object.fromEntries(platforms.map((p) => [`@robota/native-${p}`, version]));
    delete pkg.devDependencies;
    fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + "\n");
  ' "$stage/package.json" "$version" $(for t in x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu \
      x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-apple-darwin aarch64-apple-darwin \
      x86_64-pc-windows-msvc; do napi_platform "$t"; done)
  local main_tarball
  main_tarball="$(cd "$stage" && npm pack --silent --pack-destination "$out/node" | tail -n 1)"
  if tar -tzf "$out/node/$main_tarball" | grep -q '\.node$'; then
    echo "release.sh: $main_tarball must not carry an addon (they are in the platform packages)" >&2
    exit 1
  fi
  printf '| %s | %s | (JavaScript and types) | |\n' "$main_tarball" "$(mb "$out/node/$main_tarball")" >> "$sizes"
  rm -rf "$stage"
}

# --- C: one archive per target --------------------------------------------------------------------
build_c() {
  local target
  mkdir -p "$out/c"
  for target in $c_targets; do
    if [ "$target" = "$host" ] && [ "$quick" = 1 ]; then
      cargo build -p robota-ffi --lib --locked
      ffi/package.sh --profile dev --no-build --out "$out/c"
    else
      ensure_rust_target "$target"
      if [ "$target" != "$host" ] || [ "$quick" = 0 ]; then
        release_tools
        (
          # Rust's musl targets link statically by default and then refuse a cdylib; the shared
          # library links musl's libc.so like any other program of a musl system.
          case "$target" in
            *-musl) export "CARGO_TARGET_$(echo "$target" | tr 'a-z-' 'A-Z_')_RUSTFLAGS=-C target-feature=-crt-static" ;;
          esac
          cargo zigbuild -p robota-ffi --lib --locked --profile "$profile" --target "$(zig_target "$target")"
        )
      fi
      STRIP="$(strip_for "$target")" ffi/package.sh --target "$target" --profile "$profile" --no-build --out "$out/c"
    fi
    local archive="$out/c/robota-$version-$target.tar.gz" unpacked lib
    unpacked="$(mktemp -d)"
    tar -xzf "$archive" -C "$unpacked"
    lib="$unpacked/robota-$version-$target/lib/librobota.so.$version"
    check_library "$lib" "$target" '^robota_'
    record "$archive" "librobota.so.$version" "$lib"
    rm -rf "$unpacked"
  done
}
# The strip for a target's libraries. The host's binutils only strip the host's objects; a
# cross-built library needs none: the `release-dist` profile strips symbols at link time, and quick mode's
# cross build is only checked, not measured.
strip_for() {
  if [ "$1" = "$host" ]; then echo strip; else echo true; fi
}

# --- Swift: the Linux library the package links, with the package's sources ---------------------
build_swift() {
  local target stage name lib_dir
  mkdir -p "$out/swift"
  for target in $swift_targets; do
    if [ "$quick" = 1 ]; then
      cargo build -p robota-swift --lib --locked
      lib_dir="$CARGO_TARGET_DIR/debug"
    else
      ensure_rust_target "$target"
      release_tools
      cargo zigbuild -p robota-swift --lib --locked --profile "$profile" --target "$(zig_target "$target")"
      lib_dir="$CARGO_TARGET_DIR/$target/$(profile_dir "$profile")"
    fi
    name="robota-swift-$version-$target"
    stage="$(mktemp -d)"
    mkdir -p "$stage/$name/lib"
    cp -r bindings-swift/Sources "$stage/$name/"
    cp "$lib_dir/librobota_swift.so" "$stage/$name/lib/"
    "$(strip_for "$target")" --strip-unneeded "$stage/$name/lib/librobota_swift.so"
    check_library "$stage/$name/lib/librobota_swift.so" "$target" '^(uniffi_|ffi_robota_swift_|UNIFFI_)'
    # The archive's manifest links the library next to it instead of the workspace's target dir,
    # and has no test target (the tests stay in the repository).
    sed -e 's|?? "\\(packageDir)/../target/debug"|?? "\\(packageDir)/lib"|' -e '/\.testTarget(/d' \
      bindings-swift/Package.swift > "$stage/$name/Package.swift"
    if ! grep -q '"\\(packageDir)/lib"' "$stage/$name/Package.swift" || grep -q 'testTarget' "$stage/$name/Package.swift"; then
      echo "release.sh: bindings-swift/Package.swift's library directory or test target changed; update this script" >&2
      exit 1
    fi
    tar -czf "$out/swift/$name.tar.gz" -C "$stage" "$name"
    record "$out/swift/$name.tar.gz" "librobota_swift.so" "$stage/$name/lib/librobota_swift.so"
    rm -rf "$stage"
  done
}

wants c && build_c
wants python && build_python
wants node && build_node
wants swift && [ -n "$swift_targets" ] && build_swift
echo
cat "$sizes"
echo
echo "release.sh: artifacts of robota $version in $out"
if [ -n "$over_budget" ]; then
  echo "release.sh: over the size budget per stripped library (BENCHMARKS.md, \"The size budget\"):" >&2
  printf '%s' "$over_budget" >&2
  echo "  find what grew (nm -S --size-sort on an unstripped build), or raise the budget in this script and BENCHMARKS.md with the reason" >&2
  exit 1
fi
