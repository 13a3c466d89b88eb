#!/usr/bin/env bash
# Builds `RobotaFFI.xcframework` for Apple apps (run on a Mac with Xcode and rustup): the static
# library `librobota_swift.a` for macOS (arm64 + x86_64), iOS and the iOS simulator, with the
# uniffi header and module map, plus the generated Swift in `dist/Sources/`.
#
#   build-xcframework.sh [OUT_DIR]     default: bindings-swift/dist
#
# An app then uses a package whose `robota_swiftFFI` target is
#   .binaryTarget(name: "robota_swiftFFI", path: "RobotaFFI.xcframework")
# (or a URL + checksum from `swift package compute-checksum`), and whose `RobotaNative` and
# `Robota` targets hold `dist/Sources/RobotaNative` and `Sources/Robota` (see README.md).
# Linux CI cannot run this script; it proves the same sources with `scripts/test.sh`.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(cd "$here/.." && pwd)"
out="${1:-$here/dist}"
[ "$(uname -s)" = Darwin ] || { echo "build-xcframework.sh: needs macOS with Xcode (xcodebuild, lipo)" >&2; exit 1; }

targets=(aarch64-apple-darwin x86_64-apple-darwin aarch64-apple-ios aarch64-apple-ios-sim x86_64-apple-ios)
cd "$repo"
rustup target add "${targets[@]}"
for target in "${targets[@]}"; do
  cargo build -p robota-swift --release --locked --target "$target"
done
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
lib() { echo "$target_dir/$1/release/librobota_swift.a"; }

rm -rf "$out" && mkdir -p "$out/headers" "$out/macos" "$out/ios-sim" "$out/Sources/RobotaNative"
# The headers and module map of the C module the generated Swift imports (`robota_swiftFFI`).
cargo build -p robota-uniffi-bindgen --locked
generated="$(mktemp -d)"
"$target_dir/debug/uniffi-bindgen" generate --no-format --language swift --out-dir "$generated" "$(lib aarch64-apple-darwin)"
cp "$generated/robota_swiftFFI.h" "$out/headers/"
cp "$generated/robota_swiftFFI.modulemap" "$out/headers/module.modulemap"
cp "$generated/robota_swift.swift" "$out/Sources/RobotaNative/"

lipo -create "$(lib aarch64-apple-darwin)" "$(lib x86_64-apple-darwin)" -output "$out/macos/librobota_swift.a"
lipo -create "$(lib aarch64-apple-ios-sim)" "$(lib x86_64-apple-ios)" -output "$out/ios-sim/librobota_swift.a"
xcodebuild -create-xcframework \
  -library "$out/macos/librobota_swift.a" -headers "$out/headers" \
  -library "$(lib aarch64-apple-ios)" -headers "$out/headers" \
  -library "$out/ios-sim/librobota_swift.a" -headers "$out/headers" \
  -output "$out/RobotaFFI.xcframework"
rm -rf "$out/macos" "$out/ios-sim" "$generated"
echo "built $out/RobotaFFI.xcframework and $out/Sources/RobotaNative"
