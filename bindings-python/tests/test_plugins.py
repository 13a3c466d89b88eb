"""Plugins from Python: a local marketplace folder added and a plugin installed through the
`plugin` command, then listed with its source and state, its skill (named plugin:skill) run by a
new session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

from robota import InteractiveSession, ScriptedProvider


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


async def test_a_plugin_from_a_local_marketplace_is_installed_listed_and_its_skill_runs(
    opts: Dict[str, Any], tmp_path: Path
) -> None:
    market = tmp_path / "market"
    write(
        market / ".claude-plugin" / "marketplace.json",
        json.dumps({"name": "local", "plugins": [{"name": "hello", "source": "./hello"}]}),
    )
    write(market / "hello" / ".claude-plugin" / "plugin.json", json.dumps({"name": "hello", "version": "0.1.0"}))
    write(market / "hello" / "skills" / "hi" / "SKILL.md", "---\ndescription: Say hi.\n---\nSay hi to $0.\n")

    async with InteractiveSession(provider=ScriptedProvider([]), **opts) as session:
        assert session.list_plugins()["plugins"] == []
        added = await session.execute_command("plugin", f"marketplace add {market}")
        assert added.success, added.message
        installed = await session.execute_command("plugin", "install hello@local")
        assert installed.success, installed.message
        bad = await session.execute_command("plugin", "install nothing@local")
        assert not bad.success and "no plugin `nothing`" in bad.message

    async with InteractiveSession(provider=ScriptedProvider([{"text": "Hi!"}]), **opts) as session:
        listing = session.list_plugins()
        [plugin] = listing["plugins"]
        assert plugin["id"] == "hello@local" and plugin["version"] == "0.1.0"
        assert plugin["installed"] and plugin["enabled"] and plugin["loaded"]
        assert plugin["skills"] == ["hello:hi"]
        assert [m["name"] for m in listing["marketplaces"]] == ["local"]
        skills = {s["name"]: s["source"]["kind"] for s in session.list_skills()}
        assert skills == {"hello:hi": "plugin"}
        result = await session.execute_command("hello:hi", "Ada")
        assert result.success, result.message
        await session.wait_idle()
        assert "Say hi to Ada." in str(session.get_messages()[0])
