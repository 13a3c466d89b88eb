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

# The conformance scenarios' MCP server (tests/conformance/README.md): the chroot has no Python,
# so the same server runs here on the host over streamable HTTP, on a free loopback port.
mcp_dir="$repo/tests/mcp-servers"
if [ -x "$mcp_dir/.venv/bin/python" ]; then
  port="$("$mcp_dir/.venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  "$mcp_dir/.venv/bin/python" "$mcp_dir/python_server.py" --http "$port" >"$generated/mcp-server.log" 2>&1 &
  mcp_pid=$!
  trap 'kill "$mcp_pid" 2>/dev/null || true; rm -rf "$generated"' EXIT
  for _ in $(seq 1 100); do
    if "$mcp_dir/.venv/bin/python" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2)' "$port" 2>/dev/null; then
      break
    fi
    kill -0 "$mcp_pid" 2>/dev/null || { cat "$generated/mcp-server.log" >&2; echo "the MCP test server did not start" >&2; exit 1; }
    sleep 0.1
  done
  export ROBOTA_TEST_MCP_PYTOOLS_URL="http://127.0.0.1:$port/mcp"
else
  echo "note: tests/mcp-servers is not set up (run tests/mcp-servers/setup.sh): the MCP conformance scenario will fail" >&2
fi

export ROBOTA_SWIFT_LIB_DIR="$CARGO_TARGET_DIR/debug"
export ROBOTA_MOCK_LLM="$CARGO_TARGET_DIR/debug/mock-llm"
scratch="$CARGO_TARGET_DIR/swift/robota"
cd "$here"
"$here/scripts/swift-chroot.sh" run swift build --scratch-path "$scratch" --build-tests
"$here/scripts/swift-chroot.sh" run swift test --scratch-path "$scratch" --skip-build --disable-swift-testing "$@"
