"""Subagents started from Python against mock-llm: one in the foreground on a model alias (its
report names the mapped model, the model call used it), one in the background waited for and
read, a slow one cancelled with its lifecycle seen as events; bad requests raise typed errors."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List

import pytest

import robota
from robota import AnthropicProvider, BackgroundTaskEvent, InteractiveSession, SubagentReport

from conftest import MockLlm


async def test_host_runs_and_starts_subagents(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    mock_llm.script(
        [
            {"text": "FOREGROUND-REPORT"},
            {"text": "BACKGROUND-REPORT"},
            {"text": ["slow "] * 100, "chunk_delay_ms": 200},
        ]
    )
    provider = AnthropicProvider(
        "claude-sonnet-4-5", api_key="sk-test", base_url=mock_llm.base_url, max_retries=0
    )
    events: List[BackgroundTaskEvent] = []
    async with InteractiveSession(provider=provider, **dict(opts, builtin_tools=True)) as session:
        session.on("background_task_event", lambda e: events.append(e))

        report = await session.run_subagent("answer now", model="haiku")
        assert isinstance(report, SubagentReport)
        assert report.ok and report.response == "FOREGROUND-REPORT"
        assert (report.agent_type, report.model) == ("general-purpose", "claude-haiku-4-5")

        task = session.start_background_subagent("report back", agent_type="Explore")
        assert (task.id, task.kind, task.status) == ("agent_1", "agent", "running")
        assert task.origin == {"kind": "host"}
        done = await session.wait_background_task("agent_1", timeout=20)
        assert done.status == "completed"
        assert session.read_background_task_log("agent_1").text == "BACKGROUND-REPORT"

        slow = session.start_background_subagent("take your time")
        assert slow.id == "agent_2"
        assert (await session.wait_background_task("agent_2", timeout=0.3)).status == "running"
        cancelled = await session.cancel_background_task("agent_2")
        assert cancelled.status == "cancelled"

        with pytest.raises(robota.InvalidArgumentError, match="no-such-agent"):
            session.start_background_subagent("x", agent_type="no-such-agent")
        with pytest.raises(robota.InvalidArgumentError, match="isolation"):
            session.start_background_subagent("x", isolation="vm")  # type: ignore[arg-type]
        with pytest.raises(robota.InvalidArgumentError, match="prompt"):
            await session.run_subagent("  ")
        assert [t.id for t in session.list_background_tasks()] == ["agent_1", "agent_2"]

        for _ in range(100):
            if sum(1 for e in events if e.data.get("event") == "state_changed") >= 6:
                break
            await asyncio.sleep(0.02)
        transitions = [
            (e.data["task_id"], e.data["status"])
            for e in events
            if e.data.get("event") == "state_changed"
        ]
        assert transitions == [
            ("agent_1", "queued"),
            ("agent_1", "running"),
            ("agent_1", "completed"),
            ("agent_2", "queued"),
            ("agent_2", "running"),
            ("agent_2", "cancelled"),
        ]
    models = [r["body"]["model"] for r in mock_llm.requests()]
    assert models == ["claude-haiku-4-5", "claude-sonnet-4-5", "claude-sonnet-4-5"]
