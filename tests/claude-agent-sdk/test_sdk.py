"""The Claude Agent SDK for Python, unmodified, running `robota` as its CLI (cli_path) with
mock-llm as the model: the messages it parses, the control protocol both ways."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)

from conftest import ROBOTA_BIN, sdk_env


def options(project: Path, **extra: Any) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(cli_path=ROBOTA_BIN, cwd=str(project), env=sdk_env(project), **extra)


def run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, timeout=60))


async def collect(prompt: str, opts: ClaudeAgentOptions) -> list[Any]:
    return [message async for message in query(prompt=prompt, options=opts)]


def texts(messages: list[Any]) -> list[str]:
    return [
        block.text
        for message in messages
        if isinstance(message, AssistantMessage)
        for block in message.content
        if isinstance(block, TextBlock)
    ]


def tool_results(messages: list[Any]) -> dict[str, ToolResultBlock]:
    return {
        block.tool_use_id: block
        for message in messages
        if isinstance(message, UserMessage) and isinstance(message.content, list)
        for block in message.content
        if isinstance(block, ToolResultBlock)
    }


def test_query_with_a_plain_prompt(project: Path, mock_llm: Any) -> None:
    mock = mock_llm(
        [{"text": ["Hello ", "from robota."], "usage": {"input_tokens": 12, "output_tokens": 5}}]
    )
    messages = run(collect("Say hello", options(project)))

    init = messages[0]
    assert isinstance(init, SystemMessage) and init.subtype == "init"
    assert init.data["cwd"] == str(project)
    assert texts(messages) == ["Hello from robota."]
    assistant = next(m for m in messages if isinstance(m, AssistantMessage))
    assert assistant.model == "claude-sonnet-4-5"
    assert assistant.usage is not None and assistant.usage["output_tokens"] == 5
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert result.subtype == "success" and not result.is_error
    assert result.result == "Hello from robota."
    assert result.num_turns == 1
    assert result.usage is not None
    assert result.usage["input_tokens"] == 12 and result.usage["output_tokens"] == 5
    assert result.session_id == init.data["session_id"]
    # The prompt reached the model.
    [request] = mock.requests()
    assert "Say hello" in str(request["body"]["messages"])


def test_client_multi_turn_conversation_keeps_the_context(project: Path, mock_llm: Any) -> None:
    mock = mock_llm([{"text": "Noted: 42."}, {"text": "You said 42."}])

    async def conversation() -> list[list[Any]]:
        turns = []
        async with ClaudeSDKClient(options=options(project)) as client:
            for prompt in ("Remember 42", "What did I say?"):
                await client.query(prompt)
                turns.append([m async for m in client.receive_response()])
        return turns

    first, second = run(conversation())
    assert texts(first) == ["Noted: 42."]
    assert texts(second) == ["You said 42."]
    assert isinstance(first[-1], ResultMessage) and isinstance(second[-1], ResultMessage)
    assert first[-1].session_id == second[-1].session_id
    # The second request carries the first exchange.
    second_request = str(mock.requests()[1]["body"]["messages"])
    assert "Remember 42" in second_request and "Noted: 42." in second_request
