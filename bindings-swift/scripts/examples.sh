#!/usr/bin/env bash
# Builds and runs the Swift examples (examples/swift) in the trixie chroot against the library
# `test.sh` built. Each example must exit 0.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(cd "$here/.." && pwd)"
cd "$repo"
if [ -z "${CARGO_TARGET_DIR:-}" ]; then
  CARGO_TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
fi
export CARGO_TARGET_DIR
export ROBOTA_SWIFT_LIB_DIR="$CARGO_TARGET_DIR/debug"
scratch="$CARGO_TARGET_DIR/swift/examples"
cd "$repo/examples/swift"
"$here/scripts/swift-chroot.sh" run swift build --scratch-path "$scratch"
for example in quickstart editor-command; do
  echo "--- examples/swift: $example"
  "$here/scripts/swift-chroot.sh" run "$scratch/debug/$example" </dev/null
done
