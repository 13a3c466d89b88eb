"""A command written in Python acts on its session through the live context — the same facade
the built-in commands use: clear, compact, change the permission mode, write settings — over
mock-llm, and a context kept past its command is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

import robota
from robota import AnthropicProvider, CommandContext, CommandModule, CommandResult, InteractiveSession, SystemCommand

from conftest import MockLlm


class Tidy(SystemCommand):
    name = "tidy"
    description = "Plan mode, compact, clear"
    lifecycle = "blocking"

    def __init__(self) -> None:
        self.kept: Optional[CommandContext] = None

    async def execute(self, args: str, context: CommandContext) -> CommandResult:
        self.kept = context
        before = await context.state()
        history = await context.history()
        path = await context.update_settings({"language": "ko", "statusLine": {"enabled": False}})
        settings = await context.read_settings()
        await context.set_permission_mode("plan")
        compacted = await context.compact("keep names")
        await context.clear()
        after = await context.state()
        auto = await context.set_auto_compact(True, 0.5)
        switched = await context.switch_model("claude-haiku-4-5")
        return CommandResult(
            message="tidied",
            data={
                "before": before,
                "history_entries": len(history),
                "path": path,
                "settings": settings,
                "compacted": compacted,
                "after": after,
                "auto": auto,
                "switched": switched,
            },
            effects=[{"type": "conversation_history_cleared"}],
        )


async def test_python_command_clears_compacts_switches_mode_and_writes_settings(
    mock_llm: MockLlm, opts: Dict[str, Any]
) -> None:
    mock_llm.script(
        [
            {"text": ["first answer"]},
            {"text": ["second answer"]},
            {"text": ["SUMMARY: two questions were answered"]},
        ]
    )
    provider = AnthropicProvider("claude-test", api_key="sk-test", base_url=mock_llm.base_url, max_retries=0)
    tidy = Tidy()
    async with InteractiveSession(provider=provider, command_modules=[CommandModule("tidy", [tidy])], **opts) as session:
        await session.submit("one")
        await session.submit("two")
        assert len(session.get_messages()) == 4
        result = await session.execute_command("tidy", "")
        assert result.success, result.message
        assert result.effects == [{"type": "conversation_history_cleared"}]
        data = result.data
        assert data["before"]["permission_mode"] == "default"
        assert data["before"]["context_state"]["message_count"] == 4
        assert data["history_entries"] >= 4
        assert data["compacted"]["messages_before"] == 4
        assert data["after"]["permission_mode"] == "plan"
        assert data["after"]["context_state"]["message_count"] == 0
        assert data["settings"] == {"language": "ko", "statusLine": {"enabled": False}}
        assert data["auto"] == {"enabled": True, "threshold": 0.5}
        assert data["switched"]["model"] == "claude-haiku-4-5"
        assert data["switched"]["context_window"] > 0
        # What the session really did.
        assert session.get_messages() == []
        assert session.permission_mode == "plan"
        local = Path(opts["cwd"]) / ".claude" / "settings.local.json"
        assert data["path"] == str(local)
        assert json.loads(local.read_text())["language"] == "ko"
    requests: List[Dict[str, Any]] = mock_llm.requests()
    assert len(requests) == 3
    assert "keep names" in json.dumps(requests[2]["body"])

    # The context works only while the command runs.
    assert tidy.kept is not None
    with pytest.raises(robota.CommandError, match="no longer valid"):
        await tidy.kept.clear()


class BadOps(SystemCommand):
    name = "bad-ops"

    def __init__(self) -> None:
        self.errors: List[BaseException] = []

    async def execute(self, args: str, context: CommandContext) -> str:
        for attempt in (
            lambda: context.set_permission_mode("yolo"),
            lambda: context.update_settings({"x": 1}, scope="nowhere"),  # type: ignore[arg-type]
            lambda: context.set_auto_compact(True, 2.0),
        ):
            try:
                await attempt()
            except Exception as exc:  # noqa: BLE001 - the test records what was raised
                self.errors.append(exc)
        return "done"


async def test_bad_context_operations_raise_typed_errors(opts: Dict[str, Any]) -> None:
    bad = BadOps()
    async with InteractiveSession(
        provider=robota.ScriptedProvider([]), command_modules=[CommandModule("bad", [bad])], **opts
    ) as session:
        result = await session.execute_command("bad-ops", "")
        assert result.success
        assert session.permission_mode == "default"
    assert isinstance(bad.errors[0], robota.InvalidArgumentError) and "yolo" in str(bad.errors[0])
    assert isinstance(bad.errors[1], robota.InvalidJsonError)
    assert isinstance(bad.errors[2], robota.InvalidArgumentError) and "(0, 1]" in str(bad.errors[2])
