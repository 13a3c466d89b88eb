"""MCP servers from Python: a real server written with the `mcp` Python package (installed by
tests/mcp-servers/setup.sh) given in `mcp_servers`, listed with its status and tools, its tool
called by the model with the result reaching the model, and a server that cannot start reported
as failed while the session goes on."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

from robota import InteractiveSession, McpServerStatusEvent, ScriptedProvider

SERVERS = Path(__file__).resolve().parents[2] / "tests" / "mcp-servers"


def python_server() -> Dict[str, Any]:
    python = SERVERS / ".venv" / "bin" / "python"
    assert python.is_file(), "the MCP test servers are not installed: run tests/mcp-servers/setup.sh"
    return {"command": str(python), "args": [str(SERVERS / "python_server.py")]}


async def test_mcp_server_tools_reach_the_model(opts: Dict[str, Any]) -> None:
    provider = ScriptedProvider(
        [
            {"tool_calls": [{"id": "m1", "name": "mcp__py__add", "input": {"a": 40, "b": 2}}]},
            {"text": "Done."},
        ]
    )
    servers = {"py": python_server(), "gone": {"command": "/nonexistent/mcp-server"}}
    settings = {"permissions": {"allow": ["mcp__py"]}}
    async with InteractiveSession(provider=provider, mcp_servers=servers, settings=settings, **opts) as session:
        listed = {s["name"]: s for s in session.list_mcp_servers()}
        assert listed["py"]["status"] == {"state": "connected"}
        assert listed["py"]["transport"] == "stdio"
        assert listed["py"]["origin"] == {"kind": "host"}
        assert "mcp__py__add" in listed["py"]["tools"]
        assert listed["py"]["prompts"] == ["review"]
        assert listed["gone"]["status"]["state"] == "failed"
        assert "/nonexistent/mcp-server" in listed["gone"]["status"]["reason"]
        await session.submit("add")
        await session.wait_idle()
        results = [
            block
            for message in session.get_messages()
            for block in message.get("content", [])
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]
        assert len(results) == 1 and "42" in str(results[0]), results
        assert not results[0].get("is_error"), results
        # A status change after start-up arrives as a typed event.
        statuses: List[McpServerStatusEvent] = []
        session.on("mcp_server_status", statuses.append)
        result = await session.execute_command("mcp", "disable py")
        assert result.success, result.message
        await session.wait_idle()
        assert [(e.server, e.state) for e in statuses] == [("py", "disabled")], statuses
        assert statuses[0].reason
