"""Custom slash commands from Python: `.claude/commands` of the project and the home folder, a
folder and a command given as data registered by the host, listing with sources (and
namespaces), and running one with arguments as the user's `/name args`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pytest

from robota import InteractiveSession, ScriptedProvider


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


async def test_custom_commands_are_listed_with_their_source_and_run_with_arguments(
    opts: Dict[str, Any], tmp_path: Path
) -> None:
    work, home = Path(opts["cwd"]), Path(opts["home"])
    write(work / ".claude" / "commands" / "git" / "review.md", "---\ndescription: Review a file.\n---\nReview $1 for $2.\n")
    write(home / ".claude" / "commands" / "standup.md", "Write my standup.\n")
    write(tmp_path / "hosted" / "deploy.md", "---\ndescription: Deploy.\n---\nDEPLOY $ARGUMENTS\n")
    provider = ScriptedProvider([{"text": "Reviewed."}])
    commands: List[Any] = [tmp_path / "hosted", {"name": "greet", "content": "Say hi to $1."}]
    async with InteractiveSession(provider=provider, custom_commands=commands, **opts) as session:
        listed = {c["name"]: c for c in session.list_commands()}
        assert listed["review"]["source"] == {"kind": "project"}
        assert listed["review"]["descriptor"]["description"] == "Review a file. (project:git)"
        assert listed["standup"]["source"] == {"kind": "user"}
        assert listed["deploy"]["source"] == {"kind": "host"}
        assert listed["greet"]["source"] == {"kind": "host"}
        assert listed["help"]["source"] == {"kind": "builtin"}
        result = await session.execute_command("review", 'main.py "error handling"')
        assert result.success, result.message
        await session.wait_idle()
        assert "Review main.py for error handling." in str(session.get_messages()[0])


def test_custom_commands_must_be_paths_or_mappings(opts: Dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        InteractiveSession(provider=ScriptedProvider([]), custom_commands=[42], **opts)  # type: ignore[list-item]
