"""Skills from Python: SKILL.md folders in the project and the home folder, a folder and a skill
given as data registered by the host, listing with sources, running one as the user's
`/name args`, and typed skill_activation events."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pytest

import robota
from robota import InteractiveSession, ScriptedProvider, SkillActivationEvent


def write_skill(root: Path, name: str, text: str) -> None:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(text)


async def test_skills_are_listed_with_their_source_and_run_by_name(opts: Dict[str, Any], tmp_path: Path) -> None:
    work, home = Path(opts["cwd"]), Path(opts["home"])
    write_skill(work / ".claude" / "skills", "review", "---\ndescription: Review code.\n---\nReview $0 now.\n")
    write_skill(home / ".claude" / "skills", "notes", "---\ndescription: Take notes.\n---\nNOTES\n")
    write_skill(work / ".claude" / "skills", "broken", "---\ndescription: [x\n  - : :\n---\nB\n")
    hosted = tmp_path / "hosted"
    write_skill(hosted, "from-folder", "---\ndescription: From a host folder.\n---\nFOLDER\n")
    provider = ScriptedProvider([{"text": "Reviewed."}])
    skills: List[Any] = [hosted, {"name": "greet", "content": "---\ndescription: Greet.\n---\nHi $0"}]
    async with InteractiveSession(provider=provider, skills=skills, **opts) as session:
        listed = {s["name"]: s["source"]["kind"] for s in session.list_skills()}
        assert listed == {"review": "project", "notes": "user", "from-folder": "host", "greet": "host"}
        seen: List[SkillActivationEvent] = []
        session.on("skill_activation", seen.append)
        result = await session.execute_command("review", "lib.py")
        assert result.success, result.message
        # wait_idle() returns after the listeners have had every event of the skill's run.
        await session.wait_idle()
        assert len(seen) == 2, "both skill_activation events were delivered by wait_idle()"
        messages = session.get_messages()
        assert "Review lib.py now." in str(messages[0])
        assert [(e.skill_name, e.invocation, e.mode, e.status) for e in seen] == [
            ("review", "user_slash", "inject", "started"),
            ("review", "user_slash", "inject", "completed"),
        ]
        assert seen[0].source == "project" and seen[0].arguments == "lib.py" and seen[0].error is None
        history = [e for e in session.get_full_history() if e.get("type") == "skill-activation"]
        assert len(history) == 1 and history[0]["data"]["skill_name"] == "review"


def test_skills_must_be_paths_or_mappings(opts: Dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        InteractiveSession(provider=ScriptedProvider([]), skills=[42], **opts)  # type: ignore[list-item]
    with pytest.raises(robota.RobotaError):
        InteractiveSession(provider=ScriptedProvider([]), skills=[{"nope": 1}], **opts)
