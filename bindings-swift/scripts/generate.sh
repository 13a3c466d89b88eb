#!/usr/bin/env bash
# Regenerates the uniffi Swift bindings of `robota-swift` into the package:
#   Sources/RobotaNative/robota_swift.swift and Sources/robota_swiftFFI/include/robota_swiftFFI.h
# with the repo-local `uniffi-bindgen` (the same uniffi version as the library), in library mode.
# The result is committed; `scripts/test.sh` fails when it is stale.
#
#   generate.sh [OUT_DIR]   write there instead of into the package (for the staleness check)
set -euo pipefail
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"
cd "$repo"
target_dir="$CARGO_TARGET_DIR"
cargo build -q -p robota-swift -p robota-uniffi-bindgen --locked
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# --no-format: swift-format is not part of the toolchain everywhere; unformatted output is stable.
"$target_dir/debug/uniffi-bindgen" generate --no-format --language swift \
  --out-dir "$out" "$target_dir/debug/librobota_swift.so" >/dev/null
if [ $# -gt 0 ]; then
  mkdir -p "$1/RobotaNative" "$1/robota_swiftFFI/include"
  dest="$1"
else
  dest="$here/Sources"
fi
cp "$out/robota_swift.swift" "$dest/RobotaNative/robota_swift.swift"
cp "$out/robota_swiftFFI.h" "$dest/robota_swiftFFI/include/robota_swiftFFI.h"
