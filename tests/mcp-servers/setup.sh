#!/usr/bin/env bash
# Installs the real MCP servers the MCP client tests run: the npm reference servers (pinned in
# package-lock.json) and the `mcp` Python package (pinned in requirements.txt) in a venv here.
# README's test command (and so .ci/run) runs it before `cargo test`; it is quick once installed.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v npm >/dev/null 2>&1; then
  echo "tests/mcp-servers/setup.sh: npm is not installed (Debian: apt-get install nodejs npm)" >&2
  exit 1
fi
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  echo "tests/mcp-servers/setup.sh: python3 with venv is not installed (Debian: apt-get install python3-venv)" >&2
  exit 1
fi
npm ci --no-audit --no-fund --loglevel=error
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q -r requirements.txt
