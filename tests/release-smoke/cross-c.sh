#!/usr/bin/env bash
# Runs a cross-built C release archive on this machine, so that the aarch64 library is run and not
# only checked for its ELF header and exports: every examples/c program is compiled for aarch64 by
# zig (against glibc 2.17, with the flags of the archive's pkg-config file) and run under
# qemu-user. quickstart.c and query.c run offline (the scripted provider, a host tool, the
# permission callback); query.c runs again against mock-llm on loopback (the Anthropic provider's
# HTTP and SSE path).
#
# Usage: tests/release-smoke/cross-c.sh ARCHIVE    (robota-X.Y.Z-aarch64-unknown-linux-gnu.tar.gz)
# Needs: zig ($ZIG, default: the zig of scripts/release.sh's tools venv), qemu-aarch64-static and
# aarch64 glibc (Debian: qemu-user-static, libc6-arm64-cross), pkg-config, and mock-llm built for
# this host ($ROBOTA_MOCK_LLM, default $CARGO_TARGET_DIR/debug/mock-llm).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
archive="$(realpath "${1:?usage: cross-c.sh ARCHIVE}")"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
zig="${ZIG:-$target_dir/release-tools-venv/zig-shim/zig}"
mock_llm="${ROBOTA_MOCK_LLM:-$target_dir/debug/mock-llm}"
sysroot=/usr/aarch64-linux-gnu
fail() { echo "cross-c: $*" >&2; exit 1; }

case "$(basename "$archive")" in
  *-aarch64-unknown-linux-gnu.tar.gz) ;;
  *) fail "$(basename "$archive"): only aarch64-unknown-linux-gnu archives are supported" ;;
esac
[ -x "$zig" ] || fail "no zig at $zig (run scripts/release.sh once, or set ZIG)"
command -v qemu-aarch64-static >/dev/null || fail "no qemu-aarch64-static (apt-get install qemu-user-static)"
[ -e "$sysroot/lib/ld-linux-aarch64.so.1" ] || fail "no aarch64 glibc in $sysroot (apt-get install libc6-arm64-cross)"
[ -x "$mock_llm" ] || fail "no mock-llm binary at $mock_llm (cargo build -p mock-llm)"

work="$(mktemp -d)"
mock_pid=""
cleanup() {
  [ -z "$mock_pid" ] || kill "$mock_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
tar -C "$work" -xzf "$archive"
prefix="$(find "$work" -mindepth 1 -maxdepth 1 -type d)"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
libdir="$(pkg-config --variable=libdir robota)"
# Foreign programs run through qemu-user; the aarch64 glibc's loader and libraries come from the sysroot.
run() { qemu-aarch64-static -L "$sysroot" "$@"; }

for example in "$root"/examples/c/*.c; do
  name="$(basename "$example" .c)"
  # shellcheck disable=SC2046 # pkg-config prints a list of flags
  "$zig" cc -target aarch64-linux-gnu.2.17 -std=c11 -Wall -Wextra -Werror -pedantic -pthread "$example" \
    $(pkg-config --cflags --libs robota) -Wl,-rpath,"$libdir" -o "$work/$name"
  machine="$(LC_ALL=C readelf -h "$work/$name" | sed -n 's/^ *Machine: *//p')"
  [ "$machine" = AArch64 ] || fail "$name was built for '$machine', not AArch64"
  output="$(cd "$work" && run "./$name" </dev/null)" || fail "$name failed under qemu-aarch64"
  echo "$name (aarch64, offline): $(printf '%s\n' "$output" | wc -l) lines of output"
done

# query.c through the Anthropic provider against mock-llm (this host's binary, on loopback).
coproc MOCK { exec "$mock_llm"; }
mock_pid="$MOCK_PID"
read -r ready <&"${MOCK[0]}"
base_url="$(printf '%s' "$ready" | sed -n 's/.*"base_url": *"\([^"]*\)".*/\1/p')"
[ -n "$base_url" ] || fail "mock-llm did not print its base_url: $ready"
curl -fsS -X POST "$base_url/_mock/script" -H 'content-type: application/json' \
  -d '{"turns": [{"text": "hello from mock-llm"}]}' >/dev/null
result="$(cd "$work" && ROBOTA_BASE_URL="$base_url" run ./query "Say hello." </dev/null)" \
  || fail "query against mock-llm failed under qemu-aarch64"
case "$result" in
  *"hello from mock-llm"*) ;;
  *) fail "query against mock-llm did not return the scripted answer: $result" ;;
esac
echo "query (aarch64, Anthropic provider against mock-llm): the scripted answer came back"
echo "cross-c: $(basename "$archive"): every examples/c program built for aarch64 and ran under qemu"
