#!/usr/bin/env sh
# Makes tests/claude-agent-sdk/.venv with the pinned Claude Agent SDK and pytest.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$here/.venv/bin/python" ] || python3 -m venv "$here/.venv"
"$here/.venv/bin/python" -m pip install -q -r "$here/requirements.txt"
