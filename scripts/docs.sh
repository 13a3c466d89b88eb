#!/usr/bin/env bash
# Builds the API reference of every language into $CARGO_TARGET_DIR/docs/<language> and fails on
# any warning: rustdoc (robota, robota-server, robota-remote), pdoc (the Python package `robota`),
# TypeDoc (the Node package `@robota/native`). A public item without documentation is an error in
# each of them. Swift's DocC reference: bindings-swift/scripts/docs.sh (or ROBOTA_DOCS_SWIFT=1 here).
#
# Needs, as CI leaves them after its Python and Node steps:
# - a Python venv with bindings-python/requirements-dev.txt and the `robota` package installed:
#   ROBOTA_PYTHON_VENV (default: $CARGO_TARGET_DIR/python-ci-venv, CI's);
# - bindings-node/node_modules (`npm install` in bindings-node) and the addon's generated
#   index.js / index.d.ts. The facade's declarations (dist/) are rebuilt here, so the reference
#   never shows stale ones.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
docs="$CARGO_TARGET_DIR/docs"
venv="${ROBOTA_PYTHON_VENV:-$CARGO_TARGET_DIR/python-ci-venv}"

if [ ! -x "$venv/bin/python" ]; then
  echo "docs: no Python venv at $venv; create one with bindings-python/requirements-dev.txt and install the package into it (see .ci/run, step \"Python package\"), or set ROBOTA_PYTHON_VENV" >&2
  exit 1
fi
if [ ! -x bindings-node/node_modules/.bin/typedoc ]; then
  echo "docs: bindings-node/node_modules has no typedoc; run 'npm install' in bindings-node" >&2
  exit 1
fi
rm -rf "$docs/rust" "$docs/python" "$docs/node"
mkdir -p "$docs"

echo "--- Rust (rustdoc) -> $docs/rust"
# Every feature, so the optional parts (OTLP export, the SQLite and PostgreSQL stores, the store
# conformance suite) are in the reference too. Missing docs are denied in each crate's lib.rs.
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --all-features \
  -p robota -p robota-server -p robota-remote
mkdir -p "$docs/rust"
cp -R "$CARGO_TARGET_DIR/doc/." "$docs/rust/"
# rustdoc writes no page above the crates; open on the engine's.
printf '<!DOCTYPE html>\n<meta charset="utf-8">\n<meta http-equiv="refresh" content="0; url=robota/index.html">\n<title>robota API reference (Rust)</title>\n<p><a href="robota/index.html">robota</a> · <a href="robota_server/index.html">robota-server</a> · <a href="robota_remote/index.html">robota-remote</a></p>\n' >"$docs/rust/index.html"

echo "--- Python (pdoc) -> $docs/python"
(cd bindings-python && PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" scripts/api_docs.py "$docs/python")

echo "--- Node (TypeDoc) -> $docs/node"
(
  cd bindings-node
  npm run --silent build:ts
  node_modules/.bin/typedoc --out "$docs/node"
)

# --- Swift (DocC) -> $docs/swift ----------------------------------------------------------------
# Built by bindings-swift/scripts/docs.sh, which needs the Swift toolchain's chroot (root,
# debootstrap): CI runs it after the Swift tests. Here only with ROBOTA_DOCS_SWIFT=1.
if [ "${ROBOTA_DOCS_SWIFT:-0}" = 1 ]; then
  bindings-swift/scripts/docs.sh
fi
# --- end Swift -----------------------------------------------------------------------------------

echo "API reference: $docs/rust/index.html, $docs/python/index.html, $docs/node/index.html"
