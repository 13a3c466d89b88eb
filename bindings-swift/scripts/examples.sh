#!/usr/bin/env bash
# Builds and runs the Swift examples (examples/swift) in the trixie chroot against the library
# `test.sh` built. Each example must exit 0.
set -euo pipefail
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"
cd "$repo"
export ROBOTA_SWIFT_LIB_DIR="$CARGO_TARGET_DIR/debug"
scratch="$CARGO_TARGET_DIR/swift/examples"
cd "$repo/examples/swift"
"$here/scripts/swift-chroot.sh" run swift build --scratch-path "$scratch"
for example in quickstart editor-command host-extensions; do
  echo "--- examples/swift: $example"
  "$here/scripts/swift-chroot.sh" run "$scratch/debug/$example" </dev/null
done
