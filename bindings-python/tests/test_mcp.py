"""MCP servers from Python: a real server written with the `mcp` Python package (installed by
tests/mcp-servers/setup.sh) given in `mcp_servers`, listed with its status and tools, its tool
called by the model with the result reaching the model, a server that cannot start reported
as failed while the session goes on, and a remote server that requires OAuth authorized through
the host's ``on_mcp_authorization``."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Tuple

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
        # The servers connect in the background; a short wait may end before they do.
        assert not await session.wait_for_mcp_servers(timeout=0.01)
        assert await session.wait_for_mcp_servers()
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
        results = _tool_results(session)
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


def _tool_results(session: InteractiveSession) -> List[Dict[str, Any]]:
    """The tool results in the session's messages, in order."""
    return [
        block
        for message in session.get_messages()
        for block in message.get("content", [])
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _follow(url: str) -> None:
    """A browser: follows the authorization URL (the test server approves at once) and its
    redirect to the session's listener on 127.0.0.1."""
    with urllib.request.urlopen(url, timeout=20) as answer:
        answer.read()


async def test_a_remote_server_that_requires_oauth_is_authorized_through_the_host(
    opts: Dict[str, Any],
) -> None:
    """The real OAuth-protected server (`python_server.py --http PORT --oauth`): the session asks
    the host to open the authorization URL while it starts, the tool works, the tokens are kept
    in the user's robota folder and the next session reuses them without asking."""
    port = _free_port()
    python = SERVERS / ".venv" / "bin" / "python"
    server = subprocess.Popen(
        [str(python), str(SERVERS / "python_server.py"), "--http", str(port), "--oauth"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the OAuth server did not start"
                await asyncio.sleep(0.1)
        opened: List[Tuple[str, str]] = []

        async def open_url(server_name: str, url: str) -> None:
            opened.append((server_name, url))
            await asyncio.to_thread(_follow, url)

        servers = {"secure": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}}
        settings = {"permissions": {"allow": ["mcp__secure"]}}
        for run in range(2):
            provider = ScriptedProvider(
                [
                    {"tool_calls": [{"id": f"o{run}", "name": "mcp__secure__add", "input": {"a": 40, "b": 2}}]},
                    {"text": "Done."},
                ]
            )
            async with InteractiveSession(
                provider=provider,
                mcp_servers=servers,
                settings=settings,
                on_mcp_authorization=open_url,
                **opts,
            ) as session:
                assert await session.wait_for_mcp_servers()
                listed = {s["name"]: s for s in session.list_mcp_servers()}
                assert listed["secure"]["status"] == {"state": "connected"}, listed["secure"]
                await session.submit("add")
                results = _tool_results(session)
                assert len(results) == 1 and "42" in str(results[0]), results
        # Asked once, with a PKCE authorization URL; the second session used the stored tokens.
        assert len(opened) == 1, opened
        assert opened[0][0] == "secure" and "code_challenge=" in opened[0][1], opened
        tokens = list((Path(opts["home"]) / ".robota" / "mcp-oauth").glob("secure-*.json"))
        assert len(tokens) == 1, tokens
        assert tokens[0].stat().st_mode & 0o777 == 0o600
        assert not list(Path(opts["cwd"]).rglob("*.json")), "no token in the project"
    finally:
        server.kill()
        server.wait()
