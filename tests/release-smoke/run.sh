#!/usr/bin/env bash
# Installs robota's built artifacts the way a user does, with no Rust toolchain on PATH, and runs
# them: the host's Python wheel in a fresh venv (the examples, then a tool-using session against
# mock-llm), the sdist without Rust (it must refuse with a message saying what to install), the
# Node tarballs in a fresh project (the examples, a CommonJS require, the tool-using session), and
# the `prepack` check refusing to pack an unbuilt Node package.
#
# Usage: tests/release-smoke/run.sh ARTIFACTS_DIR    (as written by scripts/release.sh --quick)
# Needs: the mock-llm binary ($ROBOTA_MOCK_LLM, default $CARGO_TARGET_DIR/debug/mock-llm), python3
# with venv, node and npm.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
artifacts="$(cd "${1:?usage: run.sh ARTIFACTS_DIR}" && pwd)"
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
mock_llm="${ROBOTA_MOCK_LLM:-$target_dir/debug/mock-llm}"
[ -x "$mock_llm" ] || { echo "run.sh: no mock-llm binary at $mock_llm (cargo build -p mock-llm)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The mock-llm binary is copied in: the smoke runs only what a user's machine would have.
cp "$mock_llm" "$work/mock-llm"
export ROBOTA_MOCK_LLM="$work/mock-llm"

# PATH without any directory that holds cargo, rustc or rustup.
clean_path=""
IFS=: read -r -a path_dirs <<< "$PATH"
for dir in "${path_dirs[@]}"; do
  [ -n "$dir" ] || continue
  if [ -e "$dir/cargo" ] || [ -e "$dir/rustc" ] || [ -e "$dir/rustup" ]; then
    continue
  fi
  clean_path="${clean_path:+$clean_path:}$dir"
done
export PATH="$clean_path"
unset CARGO RUSTC RUSTUP_HOME CARGO_HOME CARGO_TARGET_DIR
if command -v cargo >/dev/null 2>&1 || command -v rustc >/dev/null 2>&1; then
  echo "run.sh: cargo or rustc is still on PATH ($PATH)" >&2
  exit 1
fi
echo "no Rust toolchain on PATH: $PATH"

# --- Python ---------------------------------------------------------------------------------------
host_arch="$(uname -m)"
wheel="$(find "$artifacts/python" -name "robota-*-abi3-*$host_arch.whl" | head -n 1)"
sdist="$(find "$artifacts/python" -name 'robota-*.tar.gz' | head -n 1)"
[ -n "$wheel" ] || { echo "run.sh: no $host_arch wheel in $artifacts/python" >&2; exit 1; }
[ -n "$sdist" ] || { echo "run.sh: no sdist in $artifacts/python" >&2; exit 1; }
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --no-index "$wheel"
mkdir -p "$work/python"
cp "$repo"/examples/python/*.py "$here/tool_session.py" "$work/python/"
(
  cd "$work/python"
  for example in "$repo"/examples/python/*.py; do
    echo "--- python $(basename "$example")"
    "$work/venv/bin/python" "$(basename "$example")" </dev/null >/dev/null
  done
  "$work/venv/bin/python" tool_session.py
)
# The sdist, where pip would fall back to it: with no Rust, the build must stop and say what to do.
"$work/venv/bin/pip" install -q "maturin==$(sed -n 's/^maturin==//p' "$repo/bindings-python/requirements-dev.txt")"
if "$work/venv/bin/pip" install --no-index --no-build-isolation --no-deps --force-reinstall "$sdist" > "$work/sdist.log" 2>&1; then
  echo "run.sh: the sdist built without a Rust toolchain?" >&2
  exit 1
fi
if ! grep -q "pip install --only-binary=:all: robota" "$work/sdist.log" || ! grep -q "https://rustup.rs" "$work/sdist.log"; then
  echo "run.sh: the sdist's failure without Rust does not say what to install:" >&2
  cat "$work/sdist.log" >&2
  exit 1
fi
echo "sdist without Rust: refused, naming the wheel and rustup"

# --- Node -----------------------------------------------------------------------------------------
case "$host_arch" in x86_64) node_platform="linux-x64-gnu" ;; aarch64) node_platform="linux-arm64-gnu" ;; *) node_platform="" ;; esac
main_tarball="$(find "$artifacts/node" -name 'robota-native-[0-9]*.tgz' | head -n 1)"
platform_tarball="$(find "$artifacts/node" -name "robota-native-$node_platform-[0-9]*.tgz" | head -n 1)"
[ -n "$main_tarball" ] && [ -n "$platform_tarball" ] || { echo "run.sh: Node tarballs missing in $artifacts/node" >&2; exit 1; }
mkdir -p "$work/node"
(
  cd "$work/node"
  npm init -y >/dev/null
  # The main package names every platform package in optionalDependencies; the ones that do not
  # exist in the registry (or do not fit this machine) are skipped, this platform's comes from its
  # tarball.
  npm install --no-audit --no-fund "$main_tarball" "$platform_tarball" >/dev/null
  if [ -n "$(find node_modules/@robota/native -name '*.node')" ]; then
    echo "run.sh: the main package carries an addon" >&2; exit 1
  fi
  for example in "$repo"/examples/node/*.mjs; do
    echo "--- node $(basename "$example")"
    cp "$example" .
    node "$(basename "$example")" </dev/null >/dev/null
  done
  node -e '
    const { InteractiveSession, ScriptedProvider } = require("@robota/native");
    const s = new InteractiveSession({ cwd: process.cwd(), loadProjectContext: false, provider: new ScriptedProvider([{ text: "cjs ok" }]) });
    s.submit("hi").then((r) => { if (r.outcome.response !== "cjs ok") process.exit(1); console.log("require(): ok"); return s.shutdown(); });
  '
  cp "$here/tool-session.mjs" .
  node tool-session.mjs
)
# `npm pack` of a package without its built files must refuse (the prepack check).
unbuilt="$work/unbuilt"
mkdir -p "$unbuilt/scripts"
cp "$repo/bindings-node/package.json" "$unbuilt/"
cp "$repo/bindings-node/scripts/prepack-check.cjs" "$unbuilt/scripts/"
# Not `--silent`: npm 9 (Debian's) then drops the prepack script's message along with npm's own.
if (cd "$unbuilt" && npm pack > "$work/pack.log" 2>&1); then
  echo "run.sh: npm pack packed a package with no built files" >&2
  exit 1
fi
grep -q "cannot be packed" "$work/pack.log" || { cat "$work/pack.log" >&2; exit 1; }
echo "npm pack of an unbuilt package: refused ($(grep -c '  - ' "$work/pack.log") problems named)"

echo "release smoke: installed and ran the wheel and the Node tarballs with no Rust toolchain"
