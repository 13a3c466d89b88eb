"""The shared conformance scenarios (tests/conformance/scenarios/*.json), played through the
Python API with host tools and permission answers implemented in Python. The rules are those of
tests/conformance/README.md; results must equal each scenario's `expected`."""

from __future__ import annotations

import asyncio
import difflib
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

import robota
from robota import InteractiveSession, PermissionRequest, ScriptedProvider, Tool, ToolResult

from conftest import REPO

MCP_SERVERS_DIR = REPO / "tests" / "mcp-servers"


def mcp_servers(scenario: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """The scenario's MCP servers from the catalog in tests/conformance/README.md."""
    servers: Dict[str, Dict[str, Any]] = {}
    for name in scenario.get("mcp_servers", []):
        if name != "pytools":
            raise AssertionError(f"{scenario['name']}: unknown MCP server {name!r}")
        python = MCP_SERVERS_DIR / ".venv" / "bin" / "python"
        assert python.is_file(), "the MCP test servers are not installed: run tests/mcp-servers/setup.sh"
        servers[name] = {"command": str(python), "args": [str(MCP_SERVERS_DIR / "python_server.py")]}
    return servers


SCENARIOS = sorted((REPO / "tests" / "conformance" / "scenarios").glob("*.json"))
KEPT = [
    "text_delta",
    "thinking",
    "tool_start",
    "tool_end",
    "permission_request",
    "complete",
    "interrupted",
    "error",
    "skill_activation",
]
WAIT = 20.0
TOP_KEYS = {"name", "description", "provider", "host_tools", "permission_answers", "settings", "skills", "commands", "mcp_servers", "host_commands", "builtin_tools", "output_format", "max_structured_output_retries", "actions", "expected"}


def host_tool(spec: Dict[str, Any]) -> Tool:
    """A host tool that waits `delay_ms` and returns the canned result."""
    result = spec["result"]
    delay = spec.get("delay_ms", 0) / 1000

    async def run(**_input: Any) -> ToolResult:
        if delay:
            await asyncio.sleep(delay)
        return ToolResult(content=result["content"], is_error=result.get("is_error", False))

    return Tool(
        run,
        name=spec["name"],
        description=spec.get("description", ""),
        input_schema=spec.get("input_schema", {"type": "object"}),
        read_only=spec.get("read_only", False),
    )


class ScenarioCommand(robota.SystemCommand):
    """A scenario's host command: performs its operations on the live context, then answers."""

    def __init__(self, spec: Dict[str, Any]) -> None:
        self.name = spec["name"]
        self.description = spec["description"]
        self.operations: List[Dict[str, Any]] = spec["operations"]
        self.result: Dict[str, Any] = spec["result"]

    async def execute(self, args: str, context: robota.CommandContext) -> robota.CommandResult:
        for op in self.operations:
            if op["op"] == "set_permission_mode":
                await context.set_permission_mode(op["mode"])
            elif op["op"] == "clear":
                await context.clear()
            elif op["op"] == "compact":
                await context.compact(op.get("instructions"))
            else:
                raise AssertionError(f"unknown context operation {op}")
        return robota.CommandResult.from_dict({"success": True, **self.result})


def normalize_events(events: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    for e in events:
        kind = e["type"]
        if kind not in KEPT:
            continue
        if kind in ("text_delta", "thinking"):
            if out and out[-1]["type"] == kind:
                out[-1]["text"] += e["text"]
                continue
            out.append({"type": kind, "text": e["text"]})
        elif kind == "tool_start":
            out.append({"type": kind, "name": e["tool"]["name"], "first_arg": e["tool"]["first_arg"]})
        elif kind == "tool_end":
            item = {"type": kind, "name": e["tool"]["name"], "result": e["tool"].get("result")}
            if "tool_result_data" in e["tool"]:
                item["tool_result_data"] = e["tool"]["tool_result_data"]
            out.append(item)
        elif kind == "permission_request":
            out.append({"type": kind, "tool_name": e["tool_name"], "input": e["input"]})
        elif kind == "complete":
            o = e["outcome"]
            complete = {"type": kind, "response": o["response"], "stop_reason": o["stop_reason"], "tools_executed": o["tools_executed"]}
            if "structured_output" in o:
                complete["structured_output"] = o["structured_output"]
            out.append(complete)
        elif kind == "interrupted":
            out.append({"type": kind})
        elif kind == "skill_activation":
            d = e["data"]
            out.append(
                {"type": kind, "skill_name": d["skill_name"], "invocation": d["invocation"], "mode": d["mode"], "status": d["status"]}
            )
        else:
            out.append({"type": kind, "message": e.get("message")})
    return out


def normalize_message(m: Dict[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {"role": m["role"]}
    blocks = m.get("content") or []
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    if text:
        out["text"] = text
    uses = [{"name": b["name"], "input": b["input"]} for b in blocks if b.get("type") == "tool_use"]
    if uses:
        out["tool_uses"] = uses
    results = [
        {"content": b["content"], "is_error": b.get("is_error", False)} for b in blocks if b.get("type") == "tool_result"
    ]
    if results:
        out["tool_results"] = results
    if m.get("state") == "interrupted":
        out["state"] = "interrupted"
    return out


async def run_scenario(scenario: Dict[str, Any], tmp_path: Path) -> Dict[str, Any]:
    unknown = set(scenario) - TOP_KEYS
    assert not unknown, f"{scenario['name']}: unknown keys {unknown}"
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    answers = list(scenario.get("permission_answers", []))
    mismatches: List[str] = []

    def handler(request: PermissionRequest) -> robota.PermissionDecision:
        if not answers:
            mismatches.append(f"unexpected request for {request.tool_name}")
            return robota.deny("no answer left")
        answer = answers.pop(0)
        if answer["tool"] != request.tool_name:
            mismatches.append(f"expected a request for {answer['tool']}, got {request.tool_name}")
            return robota.deny("wrong tool")
        if answer["answer"] == "allow_once":
            return robota.allow()
        if answer["answer"] == "allow_session":
            return robota.allow_session()
        if answer["answer"] == "allow_with_input":
            return robota.allow_with_input(answer["input"])
        if answer["answer"] == "deny":
            return robota.deny(answer.get("message", ""))
        mismatches.append(f"unknown answer {answer['answer']}")
        return robota.deny("unknown answer")

    settings: Optional[Dict[str, Any]] = None
    if scenario.get("settings") is not None:
        s = scenario["settings"]
        permissions: Dict[str, Any] = {"allow": s.get("allow", []), "deny": s.get("deny", [])}
        if "permission_mode" in s:
            permissions["defaultMode"] = s["permission_mode"]
        settings = {"permissions": permissions}

    session = InteractiveSession(
        provider=ScriptedProvider(scenario["provider"]["turns"]),
        cwd=work,
        home=home,
        settings=settings,
        load_project_context=False,
        builtin_tools=bool(scenario.get("builtin_tools", False)),
        tools=[host_tool(t) for t in scenario.get("host_tools", [])],
        permission_handler=handler,
        skills=scenario.get("skills", []),
        custom_commands=scenario.get("commands", []),
        mcp_servers=mcp_servers(scenario),
        output_format=scenario.get("output_format"),
        max_structured_output_retries=scenario.get("max_structured_output_retries"),
        command_modules=[
            robota.CommandModule("scenario", [ScenarioCommand(c) for c in scenario.get("host_commands", [])])
        ],
    )
    stream = session.events()
    events: List[Dict[str, Any]] = []
    commands: List[Dict[str, Any]] = []
    background_tasks: List[List[Dict[str, Any]]] = []
    submits: List["asyncio.Task[robota.TurnResult]"] = []
    for action in scenario["actions"]:
        if "submit" in action:
            submits.append(asyncio.create_task(session.submit(action["submit"])))
            await asyncio.sleep(0)
        elif "abort_after_event" in action:
            wanted = action["abort_after_event"]

            async def read_until() -> None:
                async for event in stream:
                    events.append(event.to_dict())
                    if event.type == wanted:
                        return

            await asyncio.wait_for(read_until(), WAIT)
            session.abort()
        elif "command" in action:
            c = action["command"]
            result = await session.execute_command(c["name"], c.get("args", ""))
            commands.append({"name": c["name"], "success": result.success, "effects": result.effects})
        elif "wait_idle" in action:
            await asyncio.sleep(0)
            await asyncio.wait_for(session.wait_idle(), WAIT)
        elif "start_background_subagent" in action:
            a = action["start_background_subagent"]
            session.start_background_subagent(a["prompt"], agent_type=a.get("agent_type"))
        elif "list_background_tasks" in action:
            background_tasks.append(
                [
                    {"id": t.id, "kind": t.kind, "status": t.status, "command": t.command}
                    for t in session.list_background_tasks()
                ]
            )
        elif "cancel_background_task" in action:
            await asyncio.wait_for(session.cancel_background_task(action["cancel_background_task"]), WAIT)
        else:
            raise AssertionError(f"{scenario['name']}: unknown action {action}")
    await asyncio.wait_for(session.wait_idle(), WAIT)
    await asyncio.wait_for(asyncio.gather(*submits), WAIT)
    events.extend(e.to_dict() for e in stream.drain())
    stream.close()

    session_id = session.session_id
    seqs = [e["seq"] for e in events]
    assert all(e["session_id"] == session_id for e in events), f"{scenario['name']}: foreign session_id"
    assert all(a < b for a, b in zip(seqs, seqs[1:])), f"{scenario['name']}: seq not increasing: {seqs}"
    assert not mismatches, f"{scenario['name']}: permission answers: {mismatches}"

    expected = scenario["expected"]
    actual: Dict[str, Any] = {}
    if "events" in expected:
        actual["events"] = normalize_events(events)
    if "messages" in expected:
        actual["messages"] = [normalize_message(m) for m in session.get_messages()]
    if "background_tasks" in expected:
        actual["background_tasks"] = background_tasks
    if "response" in expected:
        terminal = [e for e in events if e["type"] in ("complete", "interrupted")]
        actual["response"] = (terminal[-1].get("outcome") or {}).get("response") if terminal else None
    if "commands" in expected:
        actual["commands"] = commands
    if "name" in expected:
        actual["name"] = session.name
    await session.shutdown()
    return actual


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
async def test_conformance_scenario(path: Path, tmp_path: Path) -> None:
    scenario = json.loads(path.read_text())
    assert scenario["name"] == path.stem
    actual = await run_scenario(scenario, tmp_path)
    expected = scenario["expected"]
    if actual != expected:
        e = json.dumps(expected, indent=2, sort_keys=True).splitlines()
        a = json.dumps(actual, indent=2, sort_keys=True).splitlines()
        diff = "\n".join(difflib.unified_diff(e, a, "expected", "actual", lineterm=""))
        pytest.fail(f"conformance scenario {scenario['name']} differs:\n{diff}")


def test_all_scenarios_found() -> None:
    assert len(SCENARIOS) >= 5
