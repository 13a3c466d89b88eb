"""Edit checkpoints and project memory from Python, against mock-llm: the model writes, edits
and (through a Python tool that declares ``mutates_files``) deletes files in a temp git repo
over two prompts; the checkpoints are listed, inspected, restored to the first prompt and
rolled back; the ``rewind`` and ``memory`` commands run, and a secret is refused."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Dict

import pytest

import robota
from robota import AnthropicProvider, InteractiveSession, tool

from conftest import MockLlm


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


async def test_checkpoints_restore_and_roll_back_edits(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    work = Path(opts["cwd"]).resolve()
    git(work, "init", "-q")
    git(work, "config", "user.email", "t@example.com")
    git(work, "config", "user.name", "t")
    (work / "a.txt").write_text("one\n")
    (work / "gone.txt").write_text("doomed\n")
    (work / ".gitignore").write_text(".robota/\n")
    git(work, "add", ".")
    git(work, "commit", "-qm", "start")

    @tool(mutates_files=["path"])
    def remove_file(path: str) -> str:
        """Deletes a file."""
        (work / path).unlink()
        return "removed"

    mock_llm.script(
        [
            {"tool_calls": [{"id": "w", "name": "Write", "input": {"file_path": str(work / "new.txt"), "content": "created\n"}}]},
            {"text": "one"},
            {
                "tool_calls": [
                    {"id": "e", "name": "Edit", "input": {"file_path": str(work / "a.txt"), "old_string": "one", "new_string": "two"}},
                    {"id": "r", "name": "remove_file", "input": {"path": "gone.txt"}},
                ]
            },
            {"text": "two"},
        ]
    )
    provider = AnthropicProvider("claude-test", api_key="sk-test", base_url=mock_llm.base_url, max_retries=0)
    options = {**opts, "builtin_tools": True, "permission_mode": "bypassPermissions", "sandbox": False}
    async with InteractiveSession(provider=provider, tools=[remove_file], **options) as session:
        assert (await session.submit("create")).ok
        assert (await session.submit("edit and delete")).ok
        assert (work / "a.txt").read_text() == "two\n" and not (work / "gone.txt").exists()

        ids = [c["id"] for c in session.list_edit_checkpoints()]
        assert ids == ["turn-0001", "turn-0002"]
        inspected = session.inspect_edit_checkpoint("turn-0002")
        assert [f["display_path"] for f in inspected["files"]] == ["a.txt", "gone.txt"]
        assert inspected["rollback_range"] == ["turn-0002"]
        with pytest.raises(robota.InvalidArgumentError):
            session.inspect_edit_checkpoint("turn-0099")

        report = session.restore_edit_checkpoint("turn-0001")
        assert report["rolled_back"] == ["turn-0002"]
        assert (work / "a.txt").read_text() == "one\n"
        assert (work / "gone.txt").read_text() == "doomed\n"
        assert (work / "new.txt").read_text() == "created\n"
        listed = await session.execute_command("rewind", "list")
        assert listed.success and "Bash" in listed.message
        report = session.rollback_edit_checkpoint("turn-0001")
        assert report["deleted"] == ["new.txt"]
        assert git(work, "status", "--porcelain") == ""
        history = [e for e in session.get_full_history() if e.get("type") == "edit-checkpoint-restore"]
        assert [e["data"]["mode"] for e in history] == ["restore", "rollback"]


async def test_memory_command_saves_dedupes_and_refuses_secrets(opts: Dict[str, Any]) -> None:
    work = Path(opts["cwd"])
    async with InteractiveSession(provider=robota.ScriptedProvider([]), **opts) as session:
        added = await session.execute_command("memory", "add project build Run make check first")
        assert added.success, added.message
        again = await session.execute_command("memory", "add project build run make CHECK first.")
        assert again.success and again.data is not None and again.data["deduplicated"] is True
        secret = await session.execute_command("memory", "add user me my password is hunter2!!")
        assert not secret.success and secret.data is not None and secret.data["category"] == "password"
        assert "hunter2" not in (work / ".robota" / "memory" / "MEMORY.md").read_text()
        shown = await session.execute_command("memory", "show build")
        assert "Run make check first" in shown.message
        events = [e["data"]["action"] for e in session.get_full_history() if e.get("type") == "memory-event"]
        assert events == ["added", "added", "refused", "show"]
