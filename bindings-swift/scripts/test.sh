#!/usr/bin/env bash
# Builds and tests the Swift package on Linux: builds the Rust library and mock-llm on the host,
# checks that the committed generated bindings are current, then runs `swift build` and
# `swift test` inside the Debian trixie chroot (created on first use, see swift-chroot.sh).
# The chroot shares the host's network, so the tests reach mock-llm on loopback.
#
#   test.sh [SWIFT TEST ARGS...]   e.g. test.sh --filter SessionTests
set -euo pipefail
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"
cd "$repo"

"$here/scripts/swift-chroot.sh" ensure
cargo build -q -p robota-swift -p robota-uniffi-bindgen -p mock-llm --locked

generated="$(mktemp -d)"
trap 'rm -rf "$generated"' EXIT
"$here/scripts/generate.sh" "$generated"
for file in RobotaNative/robota_swift.swift robota_swiftFFI/include/robota_swiftFFI.h; do
  if ! diff -q "$here/Sources/$file" "$generated/$file" >/dev/null; then
    echo "bindings-swift/Sources/$file is stale: run bindings-swift/scripts/generate.sh and commit it" >&2
    exit 1
  fi
done

export ROBOTA_SWIFT_LIB_DIR="$CARGO_TARGET_DIR/debug"
export ROBOTA_MOCK_LLM="$CARGO_TARGET_DIR/debug/mock-llm"
scratch="$CARGO_TARGET_DIR/swift/robota"
cd "$here"
"$here/scripts/swift-chroot.sh" run swift build --scratch-path "$scratch" --build-tests
"$here/scripts/swift-chroot.sh" run swift test --scratch-path "$scratch" --skip-build --disable-swift-testing "$@"
