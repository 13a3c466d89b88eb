"""The Claude Agent SDK for Python, unmodified, running `robota` as its CLI (cli_path) with
mock-llm as the model: the messages it parses, the control protocol both ways."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    AgentDefinition,
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    StreamEvent,
    TaskNotificationMessage,
    TaskStartedMessage,
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


def test_can_use_tool_allows_one_tool_and_denies_another(project: Path, mock_llm: Any) -> None:
    target = project / "allowed.txt"
    mock = mock_llm(
        [
            {
                "tool_calls": [
                    {
                        "id": "toolu_write",
                        "name": "Write",
                        "input": {"file_path": str(target), "content": "written\n"},
                    },
                    {
                        "id": "toolu_bash",
                        "name": "Bash",
                        "input": {"command": "touch denied.txt"},
                    },
                ]
            },
            {"text": "One of two."},
        ]
    )
    asked: list[tuple[str, dict[str, Any]]] = []

    async def can_use_tool(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        asked.append((name, tool_input))
        if name == "Write":
            return PermissionResultAllow()
        return PermissionResultDeny(message="no shell in this test")

    async def conversation() -> list[Any]:
        async with ClaudeSDKClient(options=options(project, can_use_tool=can_use_tool)) as client:
            await client.query("Write a file, then run a command")
            return [m async for m in client.receive_response()]

    messages = run(conversation())
    assert sorted(name for name, _ in asked) == ["Bash", "Write"]
    assert dict(asked)["Bash"] == {"command": "touch denied.txt"}
    assert target.read_text() == "written\n"
    assert not (project / "denied.txt").exists()
    uses = [
        block.name
        for m in messages
        if isinstance(m, AssistantMessage)
        for block in m.content
        if isinstance(block, ToolUseBlock)
    ]
    assert uses == ["Write", "Bash"]
    results = tool_results(messages)
    assert not results["toolu_write"].is_error
    assert results["toolu_bash"].is_error
    assert "no shell in this test" in str(results["toolu_bash"].content)
    assert texts(messages) == ["One of two."]
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert result.permission_denials == [
        {"tool_name": "Bash", "tool_use_id": "toolu_bash", "tool_input": {"command": "touch denied.txt"}}
    ]
    # The model was told about the denial.
    assert "no shell in this test" in str(mock.requests()[1]["body"]["messages"])


def test_can_use_tool_may_change_the_input(project: Path, mock_llm: Any) -> None:
    mock_llm(
        [
            {"tool_calls": [{"id": "toolu_b", "name": "Bash", "input": {"command": "touch asked.txt"}}]},
            {"text": "Ran it."},
        ]
    )

    async def can_use_tool(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        return PermissionResultAllow(updated_input={"command": "touch changed.txt"})

    async def conversation() -> list[Any]:
        async with ClaudeSDKClient(options=options(project, can_use_tool=can_use_tool)) as client:
            await client.query("Touch a file")
            return [m async for m in client.receive_response()]

    messages = run(conversation())
    assert (project / "changed.txt").exists()
    assert not (project / "asked.txt").exists()
    assert not tool_results(messages)["toolu_b"].is_error
    assert isinstance(messages[-1], ResultMessage) and messages[-1].subtype == "success"


def test_pre_tool_use_hook_blocks_a_command(project: Path, mock_llm: Any) -> None:
    mock_llm(
        [
            {
                "tool_calls": [
                    {"id": "toolu_ok", "name": "Bash", "input": {"command": "touch ok.txt"}},
                    {"id": "toolu_rm", "name": "Bash", "input": {"command": "touch rm-me.txt"}},
                ]
            },
            {"text": "Hook said no."},
        ]
    )
    seen: list[dict[str, Any]] = []

    async def guard(hook_input: Any, tool_use_id: Any, context: Any) -> Any:
        seen.append(dict(hook_input))
        if "rm-me" in hook_input["tool_input"]["command"]:
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "rm-me is protected",
                }
            }
        return {}

    opts = options(
        project,
        allowed_tools=["Bash"],
        hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[guard])]},
    )
    messages = run(collect("Run two commands", opts))
    assert [h["tool_input"]["command"] for h in seen] == ["touch ok.txt", "touch rm-me.txt"]
    assert all(h["hook_event_name"] == "PreToolUse" for h in seen)
    assert (project / "ok.txt").exists()
    assert not (project / "rm-me.txt").exists()
    results = tool_results(messages)
    assert results["toolu_rm"].is_error
    assert "rm-me is protected" in str(results["toolu_rm"].content)
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "Hook said no."


def test_sdk_mcp_server_tool_called_by_the_model(project: Path, mock_llm: Any) -> None:
    mock = mock_llm(
        [
            {
                "tool_calls": [
                    {"id": "toolu_add", "name": "mcp__calc__add", "input": {"a": 2, "b": 3}}
                ]
            },
            {"text": "2 + 3 = 5"},
        ]
    )
    calls: list[dict[str, Any]] = []

    @tool("add", "Add two numbers", {"a": int, "b": int})
    async def add(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"content": [{"type": "text", "text": f"sum={args['a'] + args['b']}"}]}

    server = create_sdk_mcp_server(name="calc", version="2.0.0", tools=[add])
    opts = options(project, mcp_servers={"calc": server}, allowed_tools=["mcp__calc__add"])
    messages = run(collect("Add 2 and 3", opts))

    assert calls == [{"a": 2, "b": 3}]
    init = messages[0]
    assert isinstance(init, SystemMessage)
    assert "mcp__calc__add" in init.data["tools"]
    assert {"name": "calc", "status": "connected"} in init.data["mcp_servers"]
    result = tool_results(messages)["toolu_add"]
    assert not result.is_error and "sum=5" in str(result.content)
    # The model saw the tool in its request and the result in the next one.
    requests = mock.requests()
    assert "mcp__calc__add" in [t["name"] for t in requests[0]["body"]["tools"]]
    assert "sum=5" in str(requests[1]["body"]["messages"])


def test_interrupt_stops_the_running_prompt(project: Path, mock_llm: Any) -> None:
    mock_llm(
        [
            {"text": ["slow "] * 200, "chunk_delay_ms": 50},
            {"text": "After the interrupt."},
        ]
    )

    async def conversation() -> tuple[list[Any], list[Any]]:
        opts = options(project, include_partial_messages=True)
        async with ClaudeSDKClient(options=opts) as client:
            await client.query("Write a long answer")
            interrupted = []
            async for message in client.receive_response():
                interrupted.append(message)
                # Text is streaming: stop it.
                if type(message).__name__ == "StreamEvent" and len(interrupted) == 3:
                    await client.interrupt()
            await client.query("Go on")
            after = [m async for m in client.receive_response()]
            return interrupted, after

    interrupted, after = run(conversation())
    result = interrupted[-1]
    assert isinstance(result, ResultMessage)
    assert result.subtype == "error_during_execution" and result.is_error
    # Far fewer than the 200 chunks were streamed.
    assert sum(type(m).__name__ == "StreamEvent" for m in interrupted) < 100
    assert texts(after) == ["After the interrupt."]
    assert isinstance(after[-1], ResultMessage) and after[-1].subtype == "success"


def test_permission_mode_change_takes_effect(project: Path, mock_llm: Any) -> None:
    first, second = project / "first.txt", project / "second.txt"
    mock_llm(
        [
            {"tool_calls": [{"name": "Write", "input": {"file_path": str(first), "content": "1"}}]},
            {"text": "first done"},
            {"tool_calls": [{"name": "Write", "input": {"file_path": str(second), "content": "2"}}]},
            {"text": "second done"},
        ]
    )
    asked: list[str] = []

    async def can_use_tool(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        asked.append(tool_input["file_path"])
        return PermissionResultAllow()

    async def conversation() -> None:
        async with ClaudeSDKClient(options=options(project, can_use_tool=can_use_tool)) as client:
            await client.query("Write the first file")
            [m async for m in client.receive_response()]
            await client.set_permission_mode("acceptEdits")
            await client.query("Write the second file")
            [m async for m in client.receive_response()]

    run(conversation())
    # In `default` the edit was asked about; in `acceptEdits` it was not.
    assert asked == [str(first)]
    assert first.read_text() == "1" and second.read_text() == "2"


def test_unknown_permission_mode_is_an_error(project: Path, mock_llm: Any) -> None:
    mock_llm([])

    async def conversation() -> str:
        async with ClaudeSDKClient(options=options(project)) as client:
            try:
                await client.set_permission_mode("sometimes")  # type: ignore[arg-type]
            except Exception as error:  # noqa: BLE001 - the SDK raises a plain Exception
                return str(error)
            return "no error"

    assert "sometimes" in run(conversation())


def test_resume_by_session_id(project: Path, mock_llm: Any) -> None:
    mock = mock_llm([{"text": "The code word is kiwi."}, {"text": "It was kiwi."}])
    first = run(collect("Pick a code word", options(project)))
    session_id = first[-1].session_id
    second = run(collect("Which code word?", options(project, resume=session_id)))
    assert texts(second) == ["It was kiwi."]
    assert second[-1].session_id == session_id
    history = str(mock.requests()[1]["body"]["messages"])
    assert "Pick a code word" in history and "The code word is kiwi." in history


def test_set_model_sends_later_prompts_to_that_model(project: Path, mock_llm: Any) -> None:
    mock = mock_llm([{"text": "one"}, {"text": "two"}])

    async def conversation() -> None:
        async with ClaudeSDKClient(options=options(project)) as client:
            await client.query("first")
            [m async for m in client.receive_response()]
            await client.set_model("claude-opus-4-1")
            await client.query("second")
            [m async for m in client.receive_response()]

    run(conversation())
    assert [r["body"]["model"] for r in mock.requests()] == ["claude-sonnet-4-5", "claude-opus-4-1"]


def test_unsupported_control_request_gets_an_error_reply(project: Path, mock_llm: Any) -> None:
    mock_llm([])

    async def conversation() -> str:
        async with ClaudeSDKClient(options=options(project)) as client:
            # Every request the Python SDK's API sends is supported; the TypeScript SDK's
            # `seedReadState` is not, so it goes through the SDK's own request channel.
            assert client._query is not None
            try:
                await client._query._send_control_request(
                    {"subtype": "seed_read_state", "path": "x", "mtime": 0}
                )
            except Exception as error:  # noqa: BLE001 - the SDK raises a plain Exception
                return str(error)
            return "no error"

    message = run(conversation())
    assert "seed_read_state" in message and "not support" in message


def test_session_id_thinking_budget_and_strict_mcp_config(project: Path, mock_llm: Any) -> None:
    mock = mock_llm([{"text": "thought about it"}])
    # A server in the project's settings, which --strict-mcp-config leaves out.
    settings_file = project / ".robota" / "settings.json"
    settings = json.loads(settings_file.read_text())
    settings["mcpServers"] = {"from-settings": {"command": "/nonexistent/mcp-server"}}
    settings_file.write_text(json.dumps(settings))

    @tool("ping", "Answers pong", {})
    async def ping(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "pong"}]}

    opts = options(
        project,
        session_id="chosen-session",
        max_thinking_tokens=2048,
        strict_mcp_config=True,
        mcp_servers={"tools": create_sdk_mcp_server(name="tools", tools=[ping])},
    )
    messages = run(collect("Think", opts))
    init = messages[0]
    assert isinstance(init, SystemMessage)
    assert init.data["session_id"] == "chosen-session"
    assert [s["name"] for s in init.data["mcp_servers"]] == ["tools"]
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.session_id == "chosen-session"
    [request] = mock.requests()
    assert request["body"]["thinking"] == {"type": "enabled", "budget_tokens": 2048}


def test_options_robota_cannot_honour_are_refused(project: Path, mock_llm: Any) -> None:
    mock = mock_llm([{"text": "never sent"}])
    for extra, named in [
        ({"include_hook_events": True}, "--include-hook-events"),
        ({"betas": ["context-1m-2025-08-07"]}, "--betas"),
        ({"effort": "high"}, "--effort"),
        ({"thinking": {"type": "adaptive"}}, "--thinking adaptive"),
    ]:
        # The session opens at `initialize`, whose error reply the SDK raises.
        try:
            run(collect("hi", options(project, **extra)))
            error = "no error"
        except Exception as failure:  # noqa: BLE001 - the SDK raises a plain Exception
            error = str(failure)
        assert named in error and "robota" in error, (extra, error)
    assert mock.requests() == []


def test_context_usage_and_mcp_server_control(project: Path, mock_llm: Any) -> None:
    mock_llm([{"text": "ok", "usage": {"input_tokens": 1500, "output_tokens": 2}}])

    @tool("ping", "Answers pong", {})
    async def ping(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "pong"}]}

    async def conversation() -> tuple[Any, Any, Any, str]:
        opts = options(project, mcp_servers={"tools": create_sdk_mcp_server(name="tools", tools=[ping])})
        async with ClaudeSDKClient(options=opts) as client:
            await client.query("hello")
            [m async for m in client.receive_response()]
            usage = await client.get_context_usage()
            await client.toggle_mcp_server("tools", False)
            off = await client.get_mcp_status()
            await client.toggle_mcp_server("tools", True)
            await client.reconnect_mcp_server("tools")
            on = await client.get_mcp_status()
            try:
                await client.reconnect_mcp_server("nowhere")
                error = "no error"
            except Exception as failure:  # noqa: BLE001 - the SDK raises a plain Exception
                error = str(failure)
            return usage, off, on, error

    usage, off, on, error = run(conversation())
    # The measured context of the last call: its input and output tokens.
    assert usage["totalTokens"] == 1502
    assert usage["maxTokens"] > usage["totalTokens"]
    assert usage["model"] == "claude-sonnet-4-5"
    assert 0 < usage["percentage"] < 100
    assert [t["name"] for t in usage["mcpTools"]] == ["mcp__tools__ping"]
    assert off["mcpServers"] == [{"name": "tools", "status": "disabled"}]
    assert on["mcpServers"] == [{"name": "tools", "status": "connected"}]
    assert "nowhere" in error


def test_stop_task_stops_a_background_command(project: Path, mock_llm: Any) -> None:
    command = "sleep 43.5"
    mock_llm(
        [
            {
                "tool_calls": [
                    {"id": "toolu_bg", "name": "Bash",
                     "input": {"command": command, "run_in_background": True}}
                ]
            },
            {"text": "Started it."},
        ]
    )

    async def conversation() -> tuple[bool, str, Any]:
        async with ClaudeSDKClient(options=options(project, allowed_tools=["Bash"])) as client:
            await client.query("Start the sleeper")
            messages = [m async for m in client.receive_response()]
            started = next(m for m in messages if isinstance(m, TaskStartedMessage))
            assert started.tool_use_id == "toolu_bg" and started.task_type == "local_bash"
            was_running = running(command)
            await client.stop_task(started.task_id)
            # Its end is reported as the SDK's task notification.
            async for message in client.receive_messages():
                if isinstance(message, TaskNotificationMessage):
                    ended = message
                    break
            try:
                await client.stop_task("no-such-task")
                error = "no error"
            except Exception as failure:  # noqa: BLE001 - the SDK raises a plain Exception
                error = str(failure)
            return was_running, error, ended

    was_running, error, ended = run(conversation())
    assert was_running
    assert ended.status == "stopped" and ended.tool_use_id == "toolu_bg"
    assert not running(command)
    assert "no-such-task" in error


def test_rewind_files_puts_edited_files_back(project: Path, mock_llm: Any) -> None:
    notes = project / "notes.txt"
    notes.write_text("old\n")
    mock_llm(
        [
            {"tool_calls": [{"name": "Write", "input": {"file_path": str(notes), "content": "new\n"}}]},
            {"text": "Rewrote the notes."},
        ]
    )

    async def conversation() -> tuple[str | None, str]:
        opts = options(
            project,
            permission_mode="acceptEdits",
            enable_file_checkpointing=True,
            extra_args={"replay-user-messages": None},
        )
        async with ClaudeSDKClient(options=opts) as client:
            await client.query("Rewrite the notes")
            messages = [m async for m in client.receive_response()]
            echoed = next(
                m for m in messages if isinstance(m, UserMessage) and m.content == "Rewrite the notes"
            )
            edited = notes.read_text()
            assert echoed.uuid is not None
            await client.rewind_files(echoed.uuid)
            return echoed.uuid, edited

    uuid, edited = run(conversation())
    assert uuid
    assert edited == "new\n"
    assert notes.read_text() == "old\n"


def test_partial_messages_stream_the_anthropic_events(project: Path, mock_llm: Any) -> None:
    mock_llm([{"text": ["Hel", "lo"], "usage": {"input_tokens": 3, "output_tokens": 2}}])
    messages = run(collect("Greet", options(project, include_partial_messages=True)))
    events = [m.event for m in messages if isinstance(m, StreamEvent)]
    assert [e["type"] for e in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta") == "Hello"
    assert events[5]["delta"]["stop_reason"] == "end_turn"
    assert events[5]["usage"]["output_tokens"] == 2
    assert texts(messages) == ["Hello"]


def test_disconnect_during_a_tool_call_leaves_no_process_behind(
    project: Path, mock_llm: Any
) -> None:
    command = "sleep 41.25; touch late.txt"
    mock_llm([{"tool_calls": [{"name": "Bash", "input": {"command": command}}]}])

    async def conversation() -> None:
        opts = options(project, allowed_tools=["Bash"])
        async with ClaudeSDKClient(options=opts) as client:
            await client.query("Run the slow command")
            async for message in client.receive_messages():
                if isinstance(message, AssistantMessage):
                    break
            # The command is running; give it time to start, then leave the block: the SDK
            # closes stdin, then sends SIGTERM, which must stop the command.
            await asyncio.sleep(0.5)
            assert running(command)

    run(conversation())
    assert not running(command)
    assert not (project / "late.txt").exists()


def running(command: str) -> bool:
    found = subprocess.run(["pgrep", "-f", command.split(";")[0]], capture_output=True)
    return found.returncode == 0


def test_structured_output_follows_the_json_schema(project: Path, mock_llm: Any) -> None:
    mock_llm([{"text": '{"city": "Lisbon", "population": 545000}'}])
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"],
    }
    opts = options(project, output_format={"type": "json_schema", "schema": schema})
    result = run(collect("Which city?", opts))[-1]
    assert isinstance(result, ResultMessage) and result.subtype == "success"
    assert result.structured_output == {"city": "Lisbon", "population": 545000}


def test_agents_from_the_options_run_as_subagents(project: Path, mock_llm: Any) -> None:
    mock = mock_llm(
        [
            {
                "tool_calls": [
                    {"id": "toolu_task", "name": "Task",
                     "input": {"description": "review", "prompt": "Review the change",
                               "subagent_type": "reviewer"}}
                ]
            },
            {"text": "LGTM from the reviewer."},
            {"text": "Reviewed."},
        ]
    )
    reviewer = AgentDefinition(
        description="Reviews code changes", prompt="REVIEWER-SYSTEM-PROMPT", tools=["Read", "Grep"]
    )
    opts = options(project, agents={"reviewer": reviewer}, allowed_tools=["Task"])
    messages = run(collect("Review it", opts))
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "Reviewed."
    assert "LGTM from the reviewer." in str(tool_results(messages)["toolu_task"].content)
    requests = mock.requests()
    assert "reviewer: Reviews code changes" in str(requests[0]["body"]["system"])
    assert "REVIEWER-SYSTEM-PROMPT" in str(requests[1]["body"]["system"])
    assert sorted(t["name"] for t in requests[1]["body"]["tools"]) == ["Grep", "Read"]
