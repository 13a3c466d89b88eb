#!/usr/bin/env bash
# Runs the Swift benchmarks (figures in BENCHMARKS.md): builds `librobota_swift` with the bench
# profile (thin LTO), the benchmark executable in release mode in the trixie chroot, then
# `throughput` and `cold-start`.
#
#   run.sh [EVENTS] [RUNS]    default 200000 events, 21 cold-start runs
set -euo pipefail
# shellcheck source=env.sh
. "$(dirname "$0")/../scripts/env.sh"
cd "$repo"
"$here/scripts/swift-chroot.sh" ensure
cargo build -q -p robota-swift --profile bench --locked
export ROBOTA_SWIFT_LIB_DIR="$CARGO_TARGET_DIR/release"
scratch="$CARGO_TARGET_DIR/swift/benches"
cd "$here/benches"
"$here/scripts/swift-chroot.sh" run swift build -c release --scratch-path "$scratch"
"$here/scripts/swift-chroot.sh" run "$scratch/release/robota-bench" throughput "${1:-200000}" 3
"$here/scripts/swift-chroot.sh" run "$scratch/release/robota-bench" cold-start "${2:-21}"
