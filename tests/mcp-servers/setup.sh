#!/usr/bin/env bash
# Installs the real MCP servers the MCP client tests run: the npm reference servers (pinned in
# package-lock.json) and the `mcp` Python package (pinned in requirements.txt) in a venv here.
# .ci/run calls it before the tests; run it once by hand before `cargo test`.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --loglevel=error
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q -r requirements.txt
