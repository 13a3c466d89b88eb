"""Fixtures: a mock-llm process serving a script, and a temp project whose settings point
robota's Anthropic provider at it. The SDK runs the debug `robota` binary as its CLI.

Environment: ROBOTA_BIN (the robota binary) and MOCK_LLM_BIN (the mock-llm binary); both
default to target/debug under CARGO_TARGET_DIR (or the workspace's target/)."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
ROBOTA_BIN = os.environ.get("ROBOTA_BIN", str(TARGET / "debug" / "robota"))
MOCK_LLM_BIN = os.environ.get("MOCK_LLM_BIN", str(TARGET / "debug" / "mock-llm"))


class Mock:
    """A running mock-llm: its base URL and the requests it received."""

    def __init__(self, process: subprocess.Popen[str], base_url: str) -> None:
        self.process = process
        self.base_url = base_url

    def requests(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{self.base_url}/_mock/requests") as response:
            data: list[dict[str, Any]] = json.load(response)
        return data


@pytest.fixture
def project(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "project"
    work.mkdir()
    return work


def start_mock(tmp_path: Path, turns: list[dict[str, Any]]) -> Mock:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": turns}))
    process = subprocess.Popen(
        [MOCK_LLM_BIN, "--script", str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = json.loads(process.stdout.readline())
    return Mock(process, first["base_url"])


@pytest.fixture
def mock_llm(tmp_path: Path, project: Path) -> Iterator[Any]:
    """Call with the script's turns: starts mock-llm and points the project at it."""
    started: list[Mock] = []

    def start(turns: list[dict[str, Any]]) -> Mock:
        mock = start_mock(tmp_path, turns)
        started.append(mock)
        settings_dir = project / ".robota"
        settings_dir.mkdir(exist_ok=True)
        (settings_dir / "settings.json").write_text(
            json.dumps(
                {
                    "currentProvider": "mock",
                    "providers": {
                        "mock": {
                            "type": "anthropic",
                            "model": "claude-sonnet-4-5",
                            "apiKey": "test-key",
                            "baseURL": mock.base_url,
                            "options": {"maxRetries": 0},
                        }
                    },
                }
            )
        )
        return mock

    yield start
    for mock in started:
        mock.process.terminate()
        mock.process.wait(timeout=10)


@pytest.fixture(autouse=True)
def no_provider_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """robota must take its provider from the project's settings, not the outer environment."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def sdk_env(project: Path) -> dict[str, str]:
    """The environment robota runs with: the temp home."""
    return {"HOME": str(project.parent / "home")}
