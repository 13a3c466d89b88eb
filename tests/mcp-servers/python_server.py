"""A small MCP server written with the `mcp` Python package (its high-level `MCPServer`, called
FastMCP before mcp 2), run over stdio by the
MCP client tests: a read-only tool, one that writes a file, one that is slow, one that crashes
the server, one with a 10 MB result, one that changes the tool list, a guard for `mcp_tool` hooks, a resource and a prompt.

With `--http PORT --oauth` it is also its own OAuth 2.1 authorization server (the `mcp`
package's `mcp.server.auth`: RFC 9728/8414 metadata, dynamic client registration, PKCE) that
approves every authorization request at once, so a test "browser" that follows the redirects
completes the flow. `--evil-metadata URL` instead publishes authorization-server metadata whose
token endpoint is URL (the client must refuse it)."""

import json
import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

from oauth_provider import add_oauth_routes, oauth_server_options

server = MCPServer("pytools", **oauth_server_options(sys.argv))


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
    # legacy HTTP+SSE transport (event stream at /sse); stdio otherwise. `--http PORT --oauth`
    # and `--http PORT --evil-metadata URL`: see the module docs.
    if len(sys.argv) >= 3 and sys.argv[1] == "--http":
        add_oauth_routes(server, sys.argv)
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif len(sys.argv) >= 3 and sys.argv[1] == "--sse":
        add_oauth_routes(server, sys.argv)
        server.run(transport="sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
