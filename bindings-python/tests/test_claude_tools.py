"""The Claude Code tools models call (TodoWrite, MultiEdit, NotebookEdit) through a real model
call against mock-llm: the todo list arrives as a typed ``todo_update`` event, the editing
tools pass the permission handler like Edit, and PreToolUse hooks see (and can block) all three."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import robota
from robota import (
    AnthropicProvider,
    ConfigWarning,
    Hook,
    HookResult,
    InteractiveSession,
    PermissionRequest,
    TodoUpdateEvent,
    allow,
)

from conftest import MockLlm


def call(name: str, input: Dict[str, Any], id: str) -> Dict[str, Any]:
    return {"tool_calls": [{"id": id, "name": name, "input": input}]}


async def test_todo_write_multi_edit_and_notebook_edit(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    work = Path(opts["cwd"])
    (work / "app.py").write_text("a = 1\nb = 2\n")
    (work / "locked.py").write_text("keep = True\n")
    (work / "nb.ipynb").write_text(
        json.dumps(
            {
                "cells": [{"cell_type": "markdown", "id": "intro", "metadata": {}, "source": "# Notes"}],
                "metadata": {},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )
    mock_llm.script(
        [
            call(
                "TodoWrite",
                {
                    "todos": [
                        {"content": "Edit app.py", "status": "in_progress", "activeForm": "Editing app.py"},
                        {"content": "Add a cell", "status": "pending", "activeForm": "Adding a cell"},
                    ]
                },
                "toolu_todo",
            ),
            call(
                "MultiEdit",
                {
                    "file_path": str(work / "app.py"),
                    "edits": [
                        {"old_string": "a = 1", "new_string": "a = 10"},
                        {"old_string": "b = 2", "new_string": "b = 20"},
                    ],
                },
                "toolu_multi",
            ),
            call(
                "NotebookEdit",
                {
                    "notebook_path": str(work / "nb.ipynb"),
                    "cell_id": "intro",
                    "new_source": "print('hi')",
                    "cell_type": "code",
                    "edit_mode": "insert",
                },
                "toolu_nb",
            ),
            call(
                "MultiEdit",
                {
                    "file_path": str(work / "locked.py"),
                    "edits": [{"old_string": "keep = True", "new_string": "keep = False"}],
                },
                "toolu_locked",
            ),
            {"text": "done"},
        ]
    )
    asked: List[str] = []

    def handler(request: PermissionRequest) -> Any:
        asked.append(request.tool_name)
        return allow()

    hooked: List[str] = []

    def pre_tool(hook_input: Dict[str, Any]) -> Any:
        hooked.append(hook_input["tool_name"])
        if "locked" in json.dumps(hook_input["tool_input"]):
            return HookResult.block("locked.py is read-only")
        return None

    options = dict(opts, builtin_tools=True)
    provider = AnthropicProvider("claude-test", api_key="sk-test", base_url=mock_llm.base_url, max_retries=0)
    updates: List[TodoUpdateEvent] = []
    async with InteractiveSession(
        provider=provider,
        permission_handler=handler,
        hooks=[Hook("PreToolUse", pre_tool, matcher="TodoWrite|MultiEdit|NotebookEdit")],
        **options,
    ) as session:
        session.on("todo_update", lambda e: updates.append(e))
        result = await session.submit("work")
        assert result.status == "complete", result
    assert len(updates) == 1
    assert isinstance(updates[0], robota.TodoUpdateEvent)
    assert [(t.content, t.status, t.active_form) for t in updates[0].todos] == [
        ("Edit app.py", "in_progress", "Editing app.py"),
        ("Add a cell", "pending", "Adding a cell"),
    ]
    assert (work / "app.py").read_text() == "a = 10\nb = 20\n"
    cells = json.loads((work / "nb.ipynb").read_text())["cells"]
    assert [c["cell_type"] for c in cells] == ["markdown", "code"]
    assert cells[1]["source"] == "print('hi')"
    # TodoWrite needs no approval; the editing tools ask like Edit does. The hook saw every call
    # with Claude Code's tool names, and the call it blocked never asked nor ran.
    assert asked == ["MultiEdit", "NotebookEdit"]
    assert hooked == ["TodoWrite", "MultiEdit", "NotebookEdit", "MultiEdit"]
    assert (work / "locked.py").read_text() == "keep = True\n"
    results = [
        block
        for request in mock_llm.requests()
        for message in request["body"]["messages"]
        for block in (message["content"] if isinstance(message["content"], list) else [])
        if block.get("type") == "tool_result"
    ]
    assert any("Todos have been modified successfully" in json.dumps(b) for b in results)
    assert any("locked.py is read-only" in json.dumps(b) and b.get("is_error") for b in results)


async def test_configuration_warnings_reach_the_host(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    """A settings rule robota cannot parse and a broken agent file in ``~/.claude/agents`` do
    not stop the session: both are warnings the host reads, and the valid rules still apply."""
    work = Path(opts["cwd"])
    home = Path(opts["home"])
    (work / ".claude").mkdir()
    (work / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["// tools we trust", "Bash*", "Bash(echo:*)"]}})
    )
    agents = home / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "broken.md").write_text("---\nname: broken\ndescription: x\ntools: [Read\n  - Grep\n---\nbody\n")
    (agents / "helper.md").write_text(
        "---\nname: helper\ndescription: |\n  Helps.\n  <example>user: \"help\"</example>\n"
        "tools:\n  - Read\n  - NotebookRead\n---\nHelp.\n"
    )
    mock_llm.script([call("Bash", {"command": "echo allowed"}, "toolu_echo"), {"text": "done"}])
    asked: List[str] = []

    def handler(request: PermissionRequest) -> Any:
        asked.append(request.tool_name)
        return allow()

    provider = AnthropicProvider("claude-test", api_key="sk-test", base_url=mock_llm.base_url, max_retries=0)
    async with InteractiveSession(
        provider=provider, permission_handler=handler, **dict(opts, builtin_tools=True)
    ) as session:
        warnings = session.get_warnings()
        assert all(isinstance(w, ConfigWarning) for w in warnings)
        rule = [w for w in warnings if w.json_path == "permissions.allow[1]"]
        assert len(rule) == 1, warnings
        assert rule[0].kind == "permission_rule"
        assert rule[0].file is not None and rule[0].file.endswith("settings.json")
        assert "invalid permission rule `Bash*`" in rule[0].message
        assert "the rule is skipped" in rule[0].message
        broken = [w for w in warnings if w.file is not None and w.file.endswith("broken.md")]
        assert len(broken) == 1, warnings
        assert broken[0].kind == "agent_definition"
        assert "line 4: agent definition skipped: invalid YAML frontmatter" in broken[0].message
        assert any("`NotebookRead`" in w.message and "does not have" in w.message for w in warnings), warnings
        result = await session.submit("echo")
        assert result.ok, result
    # The remaining rule took effect: the command ran without asking.
    assert asked == []
    system = json.dumps(mock_llm.requests()[0]["body"]["system"])
    assert "helper" in system, "the valid agent still loads"
