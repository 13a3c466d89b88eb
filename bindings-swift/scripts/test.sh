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

# The MCP servers of the tests: the chroot has no Python, so they run here on the host over
# streamable HTTP, each on a free loopback port — the conformance scenarios' `pytools` server
# (tests/conformance/README.md) and the same server as its own OAuth authorization server (the
# OAuth test of McpTests).
mcp_dir="$repo/tests/mcp-servers"
mcp_pids=()
trap 'kill "${mcp_pids[@]}" 2>/dev/null || true; rm -rf "$generated"' EXIT
# Starts `python_server.py --http PORT ARGS...` and prints its /mcp URL once it listens.
start_mcp_server() {
  local python="$mcp_dir/.venv/bin/python" port log
  port="$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  log="$generated/mcp-server-$port.log"
  "$python" "$mcp_dir/python_server.py" --http "$port" "$@" >"$log" 2>&1 &
  mcp_pids+=("$!")
  for _ in $(seq 1 100); do
    if "$python" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2)' "$port" 2>/dev/null; then
      echo "http://127.0.0.1:$port/mcp"
      return
    fi
    kill -0 "${mcp_pids[-1]}" 2>/dev/null || { cat "$log" >&2; echo "the MCP test server did not start" >&2; exit 1; }
    sleep 0.1
  done
  echo "the MCP test server on port $port did not listen" >&2
  exit 1
}
if [ -x "$mcp_dir/.venv/bin/python" ]; then
  # Not in $(…): the servers must be children of this shell to be stopped at exit.
  start_mcp_server >"$generated/pytools.url"
  start_mcp_server --oauth >"$generated/oauth.url"
  ROBOTA_TEST_MCP_PYTOOLS_URL="$(cat "$generated/pytools.url")"
  ROBOTA_TEST_MCP_OAUTH_URL="$(cat "$generated/oauth.url")"
  export ROBOTA_TEST_MCP_PYTOOLS_URL ROBOTA_TEST_MCP_OAUTH_URL
else
  echo "note: tests/mcp-servers is not set up (run tests/mcp-servers/setup.sh): the MCP conformance scenario and the OAuth test will fail or skip" >&2
fi

# The chroot has no CA certificates, and the OAuth client of remote MCP servers needs the
# system's roots to start at all (the streamable HTTP client falls back to bundled ones; the
# OAuth one does not yet): give it the host's bundle, where the chroot can read it.
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  mkdir -p "$CARGO_TARGET_DIR/swift"
  cp /etc/ssl/certs/ca-certificates.crt "$CARGO_TARGET_DIR/swift/ca-certificates.crt"
  export SSL_CERT_FILE="$CARGO_TARGET_DIR/swift/ca-certificates.crt"
fi

export ROBOTA_SWIFT_LIB_DIR="$CARGO_TARGET_DIR/debug"
export ROBOTA_MOCK_LLM="$CARGO_TARGET_DIR/debug/mock-llm"
scratch="$CARGO_TARGET_DIR/swift/robota"
cd "$here"
"$here/scripts/swift-chroot.sh" run swift build --scratch-path "$scratch" --build-tests
"$here/scripts/swift-chroot.sh" run swift test --scratch-path "$scratch" --skip-build --disable-swift-testing "$@"
