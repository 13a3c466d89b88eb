#!/usr/bin/env bash
# Regenerates include/robota.h from ffi/src with the pinned cbindgen.
# Usage: ffi/generate-header.sh [output]   (default: include/robota.h)
set -euo pipefail
cd "$(dirname "$0")/.."

CBINDGEN_VERSION="0.29.0"
out="${1:-include/robota.h}"

if ! command -v cbindgen >/dev/null 2>&1 || [ "$(cbindgen --version)" != "cbindgen ${CBINDGEN_VERSION}" ]; then
  echo "error: cbindgen ${CBINDGEN_VERSION} is required: cargo install cbindgen --version =${CBINDGEN_VERSION} --locked" >&2
  exit 1
fi

cbindgen --quiet --config ffi/cbindgen.toml --crate robota-ffi --output "$out" ffi
