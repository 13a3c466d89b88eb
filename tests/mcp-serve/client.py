"""Drives `robota mcp-serve` with the official MCP Python client (the `mcp` package).

Usage:
  client.py stdio ROBOTA_BIN PROJECT_DIR [robota mcp-serve flags…]
  client.py http URL TOKEN
  client.py resume ROBOTA_BIN PROJECT_DIR SESSION_ID [robota mcp-serve flags…]

Checks, failing with a message (exit 1) on the first one that does not hold:
  - tools/list has `prompt` and the session commands as `command_<name>` tools;
  - `prompt` runs a prompt (the model's tool call writes a file) and answers the model's text,
    with the session id in the structured content;
  - a second `prompt` with that `session_id` goes on in the same session;
  - a command tool runs in that session;
  - bad arguments and an unknown session are tool errors, not crashes.
`resume` runs one `prompt` in the saved session SESSION_ID (in a new server process) and checks it
ran there.
Prints one JSON line with what it saw (the caller checks the model's requests and the files).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def exercise(session: ClientSession) -> dict[str, Any]:
    await session.initialize()
    tools = await session.list_tools()
    names = sorted(tool.name for tool in tools.tools)
    check("prompt" in names, f"no `prompt` tool in {names}")
    commands = [n for n in names if n.startswith("command_")]
    check("command_context" in commands, f"no `command_context` tool in {names}")
    prompt_tool = next(tool for tool in tools.tools if tool.name == "prompt")
    check(
        prompt_tool.input_schema.get("required") == ["prompt"],
        f"prompt schema: {prompt_tool.input_schema}",
    )

    first = await session.call_tool("prompt", {"prompt": "write hello.txt"})
    check(not first.is_error, f"first prompt failed: {text_of(first)}")
    check(text_of(first) == "Wrote it.", f"first answer: {text_of(first)!r}")
    structured = first.structured_content or {}
    session_id = structured.get("session_id")
    check(isinstance(session_id, str) and session_id != "", f"no session id: {structured}")
    check(structured.get("status") == "complete", f"status: {structured}")

    second = await session.call_tool(
        "prompt", {"prompt": "and now?", "session_id": session_id}
    )
    check(not second.is_error, f"second prompt failed: {text_of(second)}")
    check(text_of(second) == "Second answer.", f"second answer: {text_of(second)!r}")
    check(
        (second.structured_content or {}).get("session_id") == session_id,
        f"the second prompt ran elsewhere: {second.structured_content}",
    )

    context = await session.call_tool("command_context", {"session_id": session_id})
    check(not context.is_error, f"command_context failed: {text_of(context)}")
    check(text_of(context).strip() != "", "command_context answered nothing")
    check(
        (context.structured_content or {}).get("session_id") == session_id,
        f"the command ran elsewhere: {context.structured_content}",
    )

    bad = await session.call_tool("prompt", {"text": "wrong field"})
    check(bool(bad.is_error), f"bad arguments were accepted: {text_of(bad)}")
    check("prompt" in text_of(bad), f"bad-arguments message: {text_of(bad)!r}")
    unknown = await session.call_tool(
        "prompt", {"prompt": "x", "session_id": "no-such-session"}
    )
    check(bool(unknown.is_error), f"an unknown session was accepted: {text_of(unknown)}")
    missing = await session.call_tool("command_nope", {})
    check(bool(missing.is_error), "an unknown tool was accepted")

    return {
        "tools": names,
        "session_id": session_id,
        "answers": [text_of(first), text_of(second)],
        "unknown_session": text_of(unknown),
    }


async def over_stdio(robota: str, project: str, flags: list[str]) -> dict[str, Any]:
    params = StdioServerParameters(
        command=robota, args=["mcp-serve", *flags], cwd=project, env=None
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            return await exercise(session)


async def resume(robota: str, project: str, session_id: str, flags: list[str]) -> dict[str, Any]:
    params = StdioServerParameters(
        command=robota, args=["mcp-serve", *flags], cwd=project, env=None
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool(
                "prompt", {"prompt": "still there?", "session_id": session_id}
            )
            check(not result.is_error, f"the resumed prompt failed: {text_of(result)}")
            check(
                (result.structured_content or {}).get("session_id") == session_id,
                f"the prompt ran elsewhere: {result.structured_content}",
            )
            return {"answer": text_of(result)}


async def over_http(url: str, token: str) -> dict[str, Any]:
    # Without the token the endpoint answers 401 and nothing else.
    async with httpx2.AsyncClient() as plain:
        refused = await plain.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        check(refused.status_code == 401, f"no token: HTTP {refused.status_code}")
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                return await exercise(session)


def main() -> int:
    args = sys.argv[1:]
    try:
        if len(args) >= 3 and args[0] == "stdio":
            seen = anyio.run(over_stdio, args[1], args[2], args[3:])
        elif len(args) >= 4 and args[0] == "resume":
            seen = anyio.run(resume, args[1], args[2], args[3], args[4:])
        elif len(args) == 3 and args[0] == "http":
            seen = anyio.run(over_http, args[1], args[2])
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except AssertionError as error:
        print(f"mcp-serve client: {error}", file=sys.stderr)
        return 1
    print(json.dumps(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
