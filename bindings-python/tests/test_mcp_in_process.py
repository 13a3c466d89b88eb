"""In-process MCP servers from Python (``create_sdk_mcp_server`` with ``@tool(name, description,
schema)``, as in the Claude Agent SDK): a model driven through mock-llm calls the server's tools
as ``mcp__<server>__<tool>``; the handler's answer reaches the model, a handler that raises is a
tool error, a deny rule keeps a call from the handler, and a name shared with a configured
server is refused."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

from robota import (
    AnthropicProvider,
    InteractiveSession,
    InvalidArgumentError,
    ScriptedProvider,
    create_sdk_mcp_server,
    tool,
)

from conftest import MockLlm

calls: List[Dict[str, Any]] = []


@tool("add", "Adds two numbers", {"a": float, "b": float})
async def add(args: Dict[str, Any]) -> Dict[str, Any]:
    calls.append(args)
    return {"content": [{"type": "text", "text": f"sum = {args['a'] + args['b']}"}]}


@tool("divide", "Divides a by b", {"a": float, "b": float})
def divide(args: Dict[str, Any]) -> Any:
    return args["a"] / args["b"]


@tool("stats", "Statistics", {"type": "object", "properties": {}}, annotations={"readOnlyHint": True})
async def stats(args: Dict[str, Any]) -> Dict[str, Any]:
    return {"mean": 2.5}


def results(requests: List[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """Every tool result the model received, by call id."""
    found: Dict[str, Dict[str, Any]] = {}
    for request in requests:
        for message in request["body"]["messages"]:
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_result":
                    found[block["tool_use_id"]] = block
    return found


def text(block: Dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])


async def test_in_process_server_tools_reach_the_model(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    calls.clear()
    mock_llm.script(
        [
            {"tool_calls": [{"id": "t1", "name": "mcp__calc__add", "input": {"a": 40, "b": 2}}]},
            {"tool_calls": [{"id": "t2", "name": "mcp__calc__divide", "input": {"a": 1, "b": 0}}]},
            {"tool_calls": [{"id": "t3", "name": "mcp__calc__stats", "input": {}}]},
            {"text": "done"},
        ]
    )
    provider = AnthropicProvider("claude-test", api_key="sk-test", base_url=mock_llm.base_url, max_retries=0)
    server = create_sdk_mcp_server("calculator", "2.0.0", tools=[add, divide, stats])
    settings = {"permissions": {"allow": ["mcp__calc"]}}
    async with InteractiveSession(
        provider=provider, mcp_servers={"calc": server}, settings=settings, **opts
    ) as session:
        assert await session.wait_for_mcp_servers()
        listed = {s["name"]: s for s in session.list_mcp_servers()}
        assert listed["calc"]["status"] == {"state": "connected"}
        assert listed["calc"]["transport"] == "sdk"
        assert listed["calc"]["tools"] == ["mcp__calc__add", "mcp__calc__divide", "mcp__calc__stats"]
        await session.submit("compute")
        await session.wait_idle()
    requests = mock_llm.requests()
    offered = [t["name"] for t in requests[0]["body"]["tools"]]
    assert "mcp__calc__add" in offered
    add_schema = next(t for t in requests[0]["body"]["tools"] if t["name"] == "mcp__calc__add")["input_schema"]
    assert add_schema["required"] == ["a", "b"]
    found = results(requests)
    assert text(found["t1"]) == "sum = 42"
    assert not found["t1"].get("is_error")
    assert found["t2"].get("is_error") is True
    assert "ZeroDivisionError" in text(found["t2"])
    assert text(found["t3"]) == '{"mean":2.5}'
    assert calls == [{"a": 40, "b": 2}]


async def test_a_deny_rule_keeps_calls_from_the_handler(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    calls.clear()
    mock_llm.script(
        [
            {"tool_calls": [{"id": "t1", "name": "mcp__calc__add", "input": {"a": 1, "b": 1}}]},
            {"text": "done"},
        ]
    )
    provider = AnthropicProvider("claude-test", api_key="sk-test", base_url=mock_llm.base_url, max_retries=0)
    server = create_sdk_mcp_server("calc", tools=[add, divide])
    settings = {"permissions": {"allow": ["mcp__calc"], "deny": ["mcp__calc__add"]}}
    async with InteractiveSession(
        provider=provider, mcp_servers={"calc": server}, settings=settings, **opts
    ) as session:
        await session.submit("add")
        await session.wait_idle()
    requests = mock_llm.requests()
    offered = [t["name"] for t in requests[0]["body"]["tools"]]
    assert "mcp__calc__add" not in offered and "mcp__calc__divide" in offered
    assert results(requests)["t1"].get("is_error") is True
    assert calls == []


async def test_a_name_shared_with_a_configured_server_is_refused(opts: Dict[str, Any]) -> None:
    server = create_sdk_mcp_server("calc", tools=[add])
    settings = {"mcpServers": {"calc": {"command": "true"}}}
    with pytest.raises(InvalidArgumentError, match="calc"):
        InteractiveSession(
            provider=ScriptedProvider([{"text": "x"}]),
            mcp_servers={"calc": server},
            settings=settings,
            **opts,
        )


def test_bad_tools_are_refused() -> None:
    with pytest.raises(TypeError):
        create_sdk_mcp_server("calc", tools=[lambda args: args])  # type: ignore[list-item]
