"""A small MCP server written with the `mcp` Python package (its high-level `MCPServer`, called
FastMCP before mcp 2), run over stdio by the
MCP client tests: a read-only tool, one that writes a file, one that is slow, one that crashes
the server, one with a 10 MB result, one that changes the tool list, a guard for `mcp_tool` hooks, a resource and a prompt."""

import json
import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("pytools")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def write_note(path: str, text: str) -> str:
    """Writes text to a file."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return f"wrote {len(text)} characters to {path}"


@server.tool()
def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    time.sleep(seconds)
    return "finally"


@server.tool()
def crash() -> str:
    """Exits the server process mid-call."""
    print("crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool(structured_output=False)
def huge() -> str:
    """Returns 10 MB of text."""
    return "".join(f"line {i:07d} " + "x" * 89 + "\n" for i in range(100_000))


@server.tool(structured_output=False)
def guard(path: str, session: str, log: str) -> str:
    """A PreToolUse hook's check: records the call in `log`, denies paths naming a secret."""
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps({"path": path, "session": session}) + "\n")
    if "secret" in path:
        return json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": f"the guard keeps {os.path.basename(path)} closed",
                }
            }
        )
    return "looks fine"


def multiply(a: int, b: int) -> int:
    """Multiplies two integers (offered once `grow` ran)."""
    return a * b


@server.tool()
async def grow(ctx: Context) -> str:
    """Offers `multiply` instead of `huge`, and tells the client its tools changed."""
    server.add_tool(multiply)
    server.remove_tool("huge")
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.resource("notes://today")
def today() -> str:
    """Today's notes."""
    return "buy milk"


@server.prompt()
def review(topic: str) -> str:
    """Asks for a review."""
    return f"Please review {topic} carefully."


if __name__ == "__main__":
    # `--http PORT`: the same server over streamable HTTP on loopback (for clients that cannot
    # start a Python process, such as the Swift tests in their chroot); `--sse PORT`: over the
    # legacy HTTP+SSE transport (event stream at /sse); stdio otherwise.
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif len(sys.argv) == 3 and sys.argv[1] == "--sse":
        server.run(transport="sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
