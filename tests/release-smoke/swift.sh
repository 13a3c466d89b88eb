#!/usr/bin/env bash
# Builds and runs the Swift quickstart against the released Swift archive (its package sources and
# `lib/librobota_swift.so`, unpacked outside the repository) in the trixie chroot, the way an app
# depends on it: `.package(path:)` to the unpacked directory. No cargo runs here.
#
# Usage: tests/release-smoke/swift.sh ARTIFACTS_DIR   (as written by scripts/release.sh)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
artifacts="$(cd "${1:?usage: swift.sh ARTIFACTS_DIR}" && pwd)"
archive="$(find "$artifacts/swift" -name "robota-swift-*-$(uname -m)-unknown-linux-gnu.tar.gz" | head -n 1)"
[ -n "$archive" ] || { echo "swift.sh: no Swift archive for $(uname -m) in $artifacts/swift" >&2; exit 1; }
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
# Under the target dir: the chroot sees it at the same path (swift-chroot.sh mounts it).
work="$target_dir/swift-archive-smoke"
rm -rf "$work"
mkdir -p "$work/app/Sources"
tar -xzf "$archive" -C "$work"
package_dir="$(find "$work" -maxdepth 1 -type d -name 'robota-swift-*' | head -n 1)"
cp -r "$repo/examples/swift/Sources/quickstart" "$work/app/Sources/"
cat > "$work/app/Package.swift" <<SWIFT
// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "ArchiveSmoke",
    platforms: [.macOS(.v13)],
    dependencies: [.package(name: "Robota", path: "$package_dir")],
    targets: [.executableTarget(name: "quickstart", dependencies: ["Robota"])]
)
SWIFT
# ROBOTA_SWIFT_LIB_DIR unset: the archive's manifest must find its own lib/.
unset ROBOTA_SWIFT_LIB_DIR
cd "$work/app"
CARGO_TARGET_DIR="$target_dir" "$repo/bindings-swift/scripts/swift-chroot.sh" run swift build --scratch-path "$work/build"
CARGO_TARGET_DIR="$target_dir" "$repo/bindings-swift/scripts/swift-chroot.sh" run "$work/build/debug/quickstart" </dev/null
echo "swift archive: the quickstart built and ran against $(basename "$archive")"
rm -rf "$work"
