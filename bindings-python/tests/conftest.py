"""Shared fixtures: hermetic session options, and the mock-llm server (a real loopback HTTP
server speaking Anthropic/OpenAI SSE, built from `tests/mock-llm` in the workspace)."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

REPO = Path(__file__).resolve().parents[2]


def hermetic(tmp_path: Path) -> Dict[str, Any]:
    """Session options that touch nothing outside ``tmp_path``: no real HOME, no project
    context, no built-in file/shell tools."""
    work = tmp_path / "work"
    home = tmp_path / "home"
    work.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    return {
        "cwd": str(work),
        "home": str(home),
        "load_project_context": False,
        "builtin_tools": False,
    }


@pytest.fixture
def opts(tmp_path: Path) -> Dict[str, Any]:
    """Hermetic session options for this test."""
    return hermetic(tmp_path)


class MockLlm:
    """A running mock-llm process."""

    def __init__(self, process: "subprocess.Popen[str]", base_url: str) -> None:
        self.process = process
        self.base_url = base_url

    def _post(self, path: str, body: Any) -> Any:
        request = urllib.request.Request(
            self.base_url + path,
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def script(self, turns: List[Dict[str, Any]], **extra: Any) -> None:
        """Replaces the script (and clears the recordings)."""
        self._post("/_mock/reset", {})
        self._post("/_mock/script", {"turns": turns, **extra})

    def requests(self) -> List[Dict[str, Any]]:
        """The recorded model requests."""
        with urllib.request.urlopen(self.base_url + "/_mock/requests", timeout=10) as response:
            result: List[Dict[str, Any]] = json.loads(response.read())
            return result


def mock_llm_binary() -> Path:
    """The mock-llm binary, built with cargo when it is missing."""
    explicit = os.environ.get("ROBOTA_MOCK_LLM")
    if explicit:
        return Path(explicit)
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    binary = target / "debug" / "mock-llm"
    if not binary.exists():
        subprocess.run(["cargo", "build", "-q", "-p", "mock-llm"], cwd=REPO, check=True)
    return binary


def workspace_binary(name: str, env: str) -> Path:
    """A test binary of the workspace (`$<env>` when set), built with cargo when missing."""
    explicit = os.environ.get(env)
    if explicit:
        return Path(explicit)
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    binary = target / "debug" / name
    if not binary.exists():
        subprocess.run(["cargo", "build", "-q", "-p", name], cwd=REPO, check=True)
    return binary


@pytest.fixture(scope="session")
def mock_llm() -> Iterator[MockLlm]:
    """One mock-llm server for the whole test run (scripts are replaced per test)."""
    process = subprocess.Popen(
        [str(mock_llm_binary())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdin is not None
    line = process.stdout.readline()
    base_url = json.loads(line)["base_url"]
    try:
        yield MockLlm(process, base_url)
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
