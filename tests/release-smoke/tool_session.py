"""A tool-using session against mock-llm, run from an installed robota wheel (no source tree).

The scripted model writes a file with the built-in Write tool, reads it back with Read, then
answers; the check is the file on disk, the tool result the model was sent, and the outcome.

    ROBOTA_MOCK_LLM=path/to/mock-llm python tool_session.py
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

import robota
from robota import AnthropicProvider, InteractiveSession


def post(base_url: str, path: str, body: object) -> None:
    request = urllib.request.Request(
        base_url + path, data=json.dumps(body).encode(), headers={"content-type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10):
        pass


async def main() -> int:
    mock = subprocess.Popen([os.environ["ROBOTA_MOCK_LLM"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert mock.stdout is not None and mock.stdin is not None
    base_url = json.loads(mock.stdout.readline())["base_url"]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work, home = Path(tmp, "work"), Path(tmp, "home")
            work.mkdir()
            home.mkdir()
            target = work / "notes.txt"
            post(base_url, "/_mock/script", {"turns": [
                {"tool_calls": [{"id": "w1", "name": "Write", "input": {"file_path": str(target), "content": "from the wheel\n"}}]},
                {"tool_calls": [{"id": "r1", "name": "Read", "input": {"file_path": str(target)}}]},
                {"text": "Wrote and read notes.txt."},
            ]})
            provider = AnthropicProvider("claude-test", api_key="sk-test", base_url=base_url, max_retries=0)
            async with InteractiveSession(
                provider=provider, cwd=str(work), home=str(home), load_project_context=False, permission_mode="acceptEdits"
            ) as session:
                result = await session.submit("Write notes.txt, then read it back.")
            with urllib.request.urlopen(base_url + "/_mock/requests", timeout=10) as response:
                sent = json.loads(response.read())
            problems = []
            if result.status != "complete" or result.response != "Wrote and read notes.txt.":
                problems.append(f"outcome: {result.status} {result.response!r}")
            if not target.exists() or target.read_text() != "from the wheel\n":
                problems.append("notes.txt was not written by the Write tool")
            if len(sent) != 3 or "from the wheel" not in json.dumps(sent[2]["body"]["messages"][-1]):
                problems.append("the Read tool's result did not reach the model")
            if problems:
                print("tool session FAILED: " + "; ".join(problems), file=sys.stderr)
                return 1
            print(f"tool session: robota {robota.__version__} from {Path(robota.__file__).parent}: Write + Read ran, file on disk")
            return 0
    finally:
        mock.stdin.close()
        mock.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
