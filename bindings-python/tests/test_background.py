"""Background tasks from Python against mock-llm: the model starts a process with Bash
``run_in_background``; the host lists it, reads its log, sees its lifecycle events, cancels it
(its process gone, checked by pid) and closes it."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, Dict, List

import pytest

import robota
from robota import AnthropicProvider, BackgroundTask, BackgroundTaskEvent, InteractiveSession, allow

from conftest import MockLlm


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 1 :].split()[0] not in ("Z", "X")


async def test_host_lists_reads_cancels_and_closes_a_background_task(
    mock_llm: MockLlm, opts: Dict[str, Any]
) -> None:
    work = Path(opts["cwd"])
    mock_llm.script(
        [
            {
                "tool_calls": [
                    {
                        "id": "toolu_bg",
                        "name": "Bash",
                        "input": {
                            "command": "echo $$ > shell.pid; while :; do echo tick; sleep 0.05; done",
                            "run_in_background": True,
                        },
                    }
                ]
            },
            {"text": "started"},
        ]
    )
    provider = AnthropicProvider("claude-test", api_key="sk-test", base_url=mock_llm.base_url, max_retries=0)
    events: List[BackgroundTaskEvent] = []
    async with InteractiveSession(
        provider=provider, permission_handler=lambda _request: allow(), **dict(opts, builtin_tools=True)
    ) as session:
        session.on("background_task_event", lambda e: events.append(e))
        result = await session.submit("start it")
        assert result.status == "complete", result

        tasks = session.list_background_tasks()
        assert [t.id for t in tasks] == ["bash_1"]
        task = tasks[0]
        assert isinstance(task, BackgroundTask)
        assert task.status == "running" and task.is_running
        assert task.origin == {"kind": "tool", "name": "Bash", "tool_use_id": "toolu_bg"}
        for _ in range(200):
            if (work / "shell.pid").exists() and session.read_background_task_log("bash_1").text:
                break
            await asyncio.sleep(0.02)
        pid = int((work / "shell.pid").read_text())
        assert task.pid == pid
        page = session.read_background_task_log("bash_1", "stdout", 0, 5)
        assert page.text == "tick\n" and page.next_offset == 5

        # Still running after a short wait; cancel stops it with its process.
        waited = await session.wait_background_task("bash_1", timeout=0.1)
        assert waited.status == "running"
        with pytest.raises(robota.InvalidArgumentError, match="still running"):
            session.close_background_task("bash_1")
        cancelled = await session.cancel_background_task("bash_1")
        assert cancelled.status == "cancelled"
        assert not alive(pid)
        got = session.get_background_task("bash_1")
        assert got is not None and got.status == "cancelled" and not got.is_running

        await session.wait_idle()
        for _ in range(100):
            if len(events) >= 3:
                break
            await asyncio.sleep(0.02)
        assert [(e.task_id, e.status) for e in events] == [
            ("bash_1", "queued"),
            ("bash_1", "running"),
            ("bash_1", "cancelled"),
        ]

        closed = session.close_background_task("bash_1")
        assert closed.id == "bash_1"
        assert session.list_background_tasks() == []
        assert session.get_background_task("bash_1") is None
        with pytest.raises(robota.InvalidArgumentError, match="No background task `bash_1`"):
            await session.cancel_background_task("bash_1")
