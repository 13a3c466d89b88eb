"""InteractiveSession end to end: streamed turns against mock-llm, tools, permissions, hooks,
commands, abort, queueing, resume, errors and concurrency."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path
from typing import Any, Dict, List

import pytest

import robota
from robota import (
    AnthropicProvider,
    CommandContext,
    CommandModule,
    CommandResult,
    Hook,
    HookResult,
    InteractiveSession,
    OpenAIProvider,
    PermissionRequest,
    ScriptedProvider,
    SystemCommand,
    TextDeltaEvent,
    ToolContext,
    allow,
    allow_session,
    allow_with_input,
    deny,
    tool,
)

from conftest import MockLlm, hermetic


def tool_call(name: str, input: Dict[str, Any], id: str = "call_1") -> Dict[str, Any]:
    return {"id": id, "name": name, "input": input}


async def test_full_turn_streams_events_from_anthropic_endpoint(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    mock_llm.script([{"text": ["Hel", "lo", " world"], "usage": {"input_tokens": 10, "output_tokens": 3}}])
    provider = AnthropicProvider("claude-test", api_key="sk-test", base_url=mock_llm.base_url, max_retries=0)
    deltas: List[str] = []
    types: List[str] = []
    async with InteractiveSession(provider=provider, **opts) as session:
        session.on("text_delta", lambda e: deltas.append(e.text))
        session.on("*", lambda e: types.append(e.type))
        result = await session.submit("Say hello")
        assert result.status == "complete"
        assert result.ok
        assert result.response == "Hello world"
        assert result.outcome is not None and result.outcome["usage"]["output_tokens"] == 3
        assert "".join(deltas) == "Hello world"
        assert types[-1] == "complete"
        assert [m["role"] for m in session.get_messages()] == ["user", "assistant"]
    sent = mock_llm.requests()
    assert len(sent) == 1
    assert sent[0]["path"] == "/v1/messages"
    assert sent[0]["headers"]["x-api-key"] == "sk-test"
    assert sent[0]["body"]["messages"][0]["content"][0]["text"] == "Say hello"


async def test_openai_provider_with_base_url_and_events_iterator(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    mock_llm.script([{"text": ["a", "b", "c"]}])
    provider = OpenAIProvider("gpt-test", api_key="sk-test", base_url=mock_llm.base_url + "/v1", max_retries=0)
    session = InteractiveSession(provider=provider, **opts)
    stream = session.events()
    result = await session.submit("letters")
    assert result.response == "abc"
    seen: List[robota.Event] = []
    async for event in stream:
        seen.append(event)
        if event.type == "complete":
            break
    stream.close()
    text = "".join(e.text for e in seen if isinstance(e, TextDeltaEvent))
    assert text == "abc"
    seqs = [e.seq for e in seen]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert all(e.session_id == session.session_id for e in seen)
    assert seen[-1].to_dict()["type"] == "complete"
    assert mock_llm.requests()[0]["path"] == "/v1/chat/completions"
    await session.shutdown()


@tool
def add(a: int, b: int) -> int:
    """Adds two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@tool(read_only=True)
async def slow_echo(text: str, ctx: ToolContext) -> str:
    """Echoes the text after a short pause."""
    await asyncio.sleep(0.01)
    return f"{text} ({ctx.tool_use_id})"


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"cannot do {reason}")


def test_tool_schema_from_type_hints_and_docstring() -> None:
    assert add.name == "add"
    assert add.description == "Adds two integers."
    assert add.input_schema == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first number."},
            "b": {"type": "integer", "description": "The second number."},
        },
        "required": ["a", "b"],
    }
    assert slow_echo.read_only
    assert "ctx" not in slow_echo.input_schema["properties"]
    assert add(2, 3) == 5


async def test_sync_and_async_tools_and_raising_tool(opts: Dict[str, Any]) -> None:
    provider = ScriptedProvider(
        [
            {"tool_calls": [tool_call("add", {"a": 2, "b": 3}, "c1"), tool_call("slow_echo", {"text": "hi"}, "c2")]},
            {"tool_calls": [tool_call("explode", {"reason": "that"}, "c3")]},
            {"text": "done"},
        ]
    )
    async with InteractiveSession(
        provider=provider, tools=[add, slow_echo, explode], permission_handler=lambda r: allow(), **opts
    ) as session:
        result = await session.submit("go")
        assert result.status == "complete"
        assert result.response == "done"
        results = {}
        for message in session.get_messages():
            for block in message.get("content", []):
                if block.get("type") == "tool_result":
                    results[block["tool_use_id"]] = block
        assert "5" in str(results["c1"]["content"])
        assert "hi (c2)" in str(results["c2"]["content"])
        assert results["c3"]["is_error"] is True
        assert "ValueError: cannot do that" in str(results["c3"]["content"])
        assert sorted(result.outcome["tools_executed"]) == ["add", "explode", "slow_echo"]  # type: ignore[index]


def tool_results_of(session: InteractiveSession) -> List[Dict[str, Any]]:
    """The tool_result blocks of the session's messages, in order."""
    return [b for m in session.get_messages() for b in m.get("content", []) if b.get("type") == "tool_result"]


async def test_permission_handler_sync_async_and_deny(opts: Dict[str, Any]) -> None:
    asked: List[PermissionRequest] = []

    async def handler(request: PermissionRequest) -> robota.PermissionDecision:
        asked.append(request)
        await asyncio.sleep(0)
        if request.input.get("a") == 1:
            return deny("No ones allowed.")
        return allow()

    provider = ScriptedProvider(
        [
            {"tool_calls": [tool_call("add", {"a": 1, "b": 1}, "c1")]},
            {"tool_calls": [tool_call("add", {"a": 2, "b": 2}, "c2")]},
            {"text": "ok"},
        ]
    )
    ends: List[str] = []
    async with InteractiveSession(provider=provider, tools=[add], permission_handler=handler, **opts) as session:
        session.on("tool_end", lambda e: ends.append(e.tool.result or ""))
        result = await session.submit("go")
        assert result.status == "complete"
    assert [r.tool_name for r in asked] == ["add", "add"]
    assert asked[0].permission_mode == "default"
    assert ends == ["denied", "success"]

    # A sync handler that answers allow_session is asked only once for matching calls.
    calls = 0

    def sync_handler(request: PermissionRequest) -> robota.PermissionDecision:
        nonlocal calls
        calls += 1
        return allow_session()

    provider = ScriptedProvider(
        [
            {"tool_calls": [tool_call("add", {"a": 1, "b": 1}, "c1")]},
            {"tool_calls": [tool_call("add", {"a": 2, "b": 2}, "c2")]},
            {"text": "ok"},
        ]
    )
    async with InteractiveSession(provider=provider, tools=[add], permission_handler=sync_handler, **opts) as session:
        assert (await session.submit("go")).ok
    assert calls == 1


async def test_a_permission_handler_may_run_the_call_with_another_input(opts: Dict[str, Any]) -> None:
    def handler(request: PermissionRequest) -> robota.PermissionDecision:
        return allow_with_input({"a": 20, "b": 22})

    provider = ScriptedProvider([{"tool_calls": [tool_call("add", {"a": 1, "b": 1}, "c1")]}, {"text": "ok"}])
    async with InteractiveSession(provider=provider, tools=[add], permission_handler=handler, **opts) as session:
        assert (await session.submit("add")).ok
        tool_results = tool_results_of(session)
    assert tool_results[0]["is_error"] is False
    assert "42" in str(tool_results[0]["content"])
    with pytest.raises(TypeError):
        allow_with_input("not a dict")  # type: ignore[arg-type]


async def test_raising_permission_handler_denies(opts: Dict[str, Any]) -> None:
    def handler(request: PermissionRequest) -> bool:
        raise RuntimeError("handler bug")

    loop = asyncio.get_running_loop()
    reported: List[Dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, ctx: reported.append(ctx))
    provider = ScriptedProvider([{"tool_calls": [tool_call("add", {"a": 1, "b": 1})]}, {"text": "ok"}])
    async with InteractiveSession(provider=provider, tools=[add], permission_handler=handler, **opts) as session:
        assert (await session.submit("go")).ok
        tool_results = tool_results_of(session)
        assert tool_results[0]["is_error"] is True
        assert "handler bug" in str(tool_results[0]["content"])
    assert any("permission handler" in r["message"] for r in reported)


async def test_hooks_block_a_tool_and_add_prompt_context(opts: Dict[str, Any]) -> None:
    seen: List[str] = []

    async def pre_tool(hook_input: Dict[str, Any]) -> Any:
        seen.append(hook_input["hook_event_name"])
        if hook_input["tool_input"].get("a") == 13:
            return HookResult.block("13 is unlucky")
        return None

    def on_prompt(hook_input: Dict[str, Any]) -> str:
        seen.append(hook_input["hook_event_name"])
        return "Extra context from a hook."

    provider = ScriptedProvider(
        [{"tool_calls": [tool_call("add", {"a": 13, "b": 1})]}, {"text": "blocked"}]
    )
    async with InteractiveSession(
        provider=provider,
        tools=[add],
        permission_handler=lambda r: allow(),
        hooks=[Hook("PreToolUse", pre_tool, matcher="add")],
        **opts,
    ) as session:
        session_hooks_result = await session.submit("go")
        assert session_hooks_result.ok
        tool_results = tool_results_of(session)
        assert tool_results[0]["is_error"] is True
        assert "13 is unlucky" in str(tool_results[0]["content"])
    assert seen == ["PreToolUse"]

    provider = ScriptedProvider([{"text": "fine"}])
    async with InteractiveSession(provider=provider, hooks={"UserPromptSubmit": on_prompt}, **opts) as session:
        assert (await session.submit("hello")).ok
    assert seen[-1] == "UserPromptSubmit"


class Greet(SystemCommand):
    name = "greet"
    description = "Greets someone."
    argument_hint = "<name>"

    def __init__(self) -> None:
        self.contexts: List[CommandContext] = []

    async def execute(self, args: str, context: CommandContext) -> CommandResult:
        self.contexts.append(context)
        if not args:
            return CommandResult.error("Usage: /greet <name>")
        return CommandResult(message=f"Hello, {args}!", data={"name": args})


async def test_command_module_and_builtin_commands(opts: Dict[str, Any]) -> None:
    greet = Greet()
    module = CommandModule("greetings", [greet])
    async with InteractiveSession(provider=ScriptedProvider([]), command_modules=[module], **opts) as session:
        names = [c["name"] for c in session.list_commands()]
        assert "greet" in names and "rename" in names
        result = await session.execute_command("greet", "Ada")
        assert result.success and result.message == "Hello, Ada!" and result.data == {"name": "Ada"}
        assert greet.contexts[0].session_id == session.session_id
        failed = await session.execute_command("greet", "")
        assert not failed.success and "Usage" in failed.message
        renamed = await session.execute_command("rename", "My chat")
        assert renamed.success
        assert renamed.effects == [{"type": "session_renamed", "name": "My chat"}]
        assert session.name == "My chat"
        with pytest.raises(robota.CommandError):
            await session.execute_command("no-such-command", "")


async def test_abort_during_tool_and_cancelled_submit(opts: Dict[str, Any]) -> None:
    started = asyncio.Event()

    @tool(read_only=True)
    async def wait_forever() -> str:
        """Waits."""
        started.set()
        await asyncio.sleep(30)
        return "never"

    provider = ScriptedProvider([{"tool_calls": [tool_call("wait_forever", {})]}, {"text": "unused"}])
    async with InteractiveSession(provider=provider, tools=[wait_forever], **opts) as session:
        task = asyncio.create_task(session.submit("go"))
        await asyncio.wait_for(started.wait(), 10)
        session.abort()
        result = await asyncio.wait_for(task, 10)
        assert result.status == "interrupted"
        messages = session.get_messages()
        assert messages[-1]["role"] == "tool"  # the tool call has a result
        assert not session.is_executing()

    # Cancelling the awaiting task (what Ctrl-C does under asyncio.run) aborts the run.
    started.clear()
    provider = ScriptedProvider([{"tool_calls": [tool_call("wait_forever", {})]}, {"text": "unused"}])
    async with InteractiveSession(provider=provider, tools=[wait_forever], **opts) as session:
        task = asyncio.create_task(session.submit("go"))
        await asyncio.wait_for(started.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(session.wait_idle(), 10)
        assert not session.is_executing()


async def test_cancelling_a_submit_cancels_only_that_prompt(opts: Dict[str, Any]) -> None:
    slow = {"text": [f"s{i} " for i in range(40)], "delay_ms_per_chunk": 50}
    # Cancelling the queued prompt's awaitable drops it; the running one completes normally.
    provider = ScriptedProvider([{"text": ["a", "b", "c"], "delay_ms_per_chunk": 60}, {"text": "unused"}])
    async with InteractiveSession(provider=provider, **opts) as session:
        seen: List[robota.Event] = []
        session.on("*", seen.append)
        running = asyncio.create_task(session.submit("one"))
        await asyncio.sleep(0.05)
        queued = asyncio.create_task(session.submit("two"))
        await asyncio.sleep(0.02)
        assert session.get_pending_prompt() == "two"
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued
        assert session.get_pending_prompt() is None
        done = await asyncio.wait_for(running, 10)
        assert (done.status, done.queued, done.response) == ("complete", False, "abc")
        assert done.event is not None and [e.seq for e in seen if e.type == "complete"] == [done.event.seq]
        assert not session.is_executing()
        assert [m["role"] for m in session.get_messages()] == ["user", "assistant"]  # "two" never ran

    # Cancelling the running prompt's awaitable interrupts it; the queued one still runs.
    provider = ScriptedProvider([slow, {"text": "after"}])
    async with InteractiveSession(provider=provider, **opts) as session:
        seen = []
        session.on("*", seen.append)
        started = asyncio.Event()
        session.on("text_delta", lambda _: started.set())
        running = asyncio.create_task(session.submit("three"))
        await asyncio.wait_for(started.wait(), 10)
        queued = asyncio.create_task(session.submit("four"))
        await asyncio.sleep(0.02)
        assert session.get_pending_prompt() == "four"
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        after = await asyncio.wait_for(queued, 10)
        assert (after.status, after.queued, after.response) == ("complete", True, "after")
        assert after.event is not None
        types = [e.type for e in seen if e.type in ("interrupted", "complete")]
        assert types == ["interrupted", "complete"]
        assert [e.seq for e in seen if e.type == "complete"] == [after.event.seq]


async def test_queueing_queue_full_and_cancel_queue(opts: Dict[str, Any]) -> None:
    provider = ScriptedProvider(
        [{"text": ["first ", "answer"], "delay_ms_per_chunk": 100}, {"text": "second answer"}, {"text": "third"}]
    )
    async with InteractiveSession(provider=provider, **opts) as session:
        first = asyncio.create_task(session.submit("one"))
        await asyncio.sleep(0.05)
        second = asyncio.create_task(session.submit("two", display_input="Two!"))
        await asyncio.sleep(0.02)
        assert session.get_pending_prompt() == "Two!"
        with pytest.raises(robota.QueueFullError):
            await session.submit("three")
        r1, r2 = await asyncio.gather(first, second)
        assert (r1.status, r1.queued, r1.response) == ("complete", False, "first answer")
        assert (r2.status, r2.queued, r2.response) == ("complete", True, "second answer")

        # A queued prompt dropped with cancel_queue resolves as cancelled.
        provider_turns = ScriptedProvider([{"text": "slow", "delay_ms_per_chunk": 200}, {"text": "x"}])
    async with InteractiveSession(provider=provider_turns, **opts) as session:
        running = asyncio.create_task(session.submit("a"))
        await asyncio.sleep(0.05)
        queued = asyncio.create_task(session.submit("b"))
        await asyncio.sleep(0.02)
        assert session.cancel_queue() == "b"
        assert (await queued).status == "cancelled"
        assert (await running).status == "complete"


async def test_resume_a_saved_session(tmp_path: Path) -> None:
    opts = hermetic(tmp_path)
    store = tmp_path / "store"
    async with InteractiveSession(
        provider=ScriptedProvider(["I will remember."]), session_store=store, **opts
    ) as first:
        assert (await first.submit("Remember 42")).ok
        first.name = "memory"
        session_id = first.session_id
    async with InteractiveSession(
        provider=ScriptedProvider(["You said 42."]), session_store=store, resume_session_id=session_id, **opts
    ) as resumed:
        assert resumed.session_id == session_id
        assert [m["role"] for m in resumed.get_messages()] == ["user", "assistant"]
        assert (await resumed.submit("What did I say?")).response == "You said 42."
        assert len(resumed.get_messages()) == 4


async def test_a_session_saved_in_sqlite_resumes_and_has_one_writer(tmp_path: Path) -> None:
    opts = hermetic(tmp_path)
    persistence = {"sqlite": {"path": str(tmp_path / "sessions.db")}}
    async with InteractiveSession(
        provider=ScriptedProvider(["I will remember."]), persistence=persistence, **opts
    ) as first:
        assert (await first.submit("Remember 42")).ok
        session_id = first.session_id
        with pytest.raises(robota.SessionLockedError):
            InteractiveSession(
                provider=ScriptedProvider([]), persistence=persistence, resume_session_id=session_id, **opts
            )
    assert (tmp_path / "sessions.db").is_file()
    assert not (tmp_path / "work" / ".robota" / "logs").exists()
    async with InteractiveSession(
        provider=ScriptedProvider(["You said 42."]), persistence=persistence, resume_session_id=session_id, **opts
    ) as resumed:
        assert [m["role"] for m in resumed.get_messages()] == ["user", "assistant"]
        assert (await resumed.submit("What did I say?")).response == "You said 42."


def test_a_postgres_store_is_picked_by_its_options_and_its_password_never_shown(tmp_path: Path) -> None:
    # No server here (the PostgreSQL store is tested against a real one in core and the CLI): an
    # unreachable database proves the option reaches the store, with a clear error.
    opts = hermetic(tmp_path)
    persistence = {"postgres": {"url": "postgres://robota:hunter2@127.0.0.1:1/none", "project": "p"}}
    with pytest.raises(robota.InvalidArgumentError) as raised:
        InteractiveSession(provider=ScriptedProvider([]), persistence=persistence, **opts)
    assert "postgres://robota@127.0.0.1:1/none" in str(raised.value)
    assert "hunter2" not in str(raised.value)
    with pytest.raises(robota.InvalidArgumentError, match="ROBOTA_NO_SUCH_VARIABLE_SET"):
        InteractiveSession(
            provider=ScriptedProvider([]),
            persistence={"postgres": {"url_env": "ROBOTA_NO_SUCH_VARIABLE_SET"}},
            **opts,
        )


async def test_resume_after_damage_reports_it_and_one_writer_at_a_time(tmp_path: Path) -> None:
    opts = hermetic(tmp_path)
    store = tmp_path / "store"
    first = InteractiveSession(provider=ScriptedProvider(["Noted."]), session_store=store, **opts)
    assert (await first.submit("Remember 42")).ok
    session_id = first.session_id
    # Open elsewhere: a second writer is refused with a typed error naming the holder.
    with pytest.raises(robota.SessionLockedError, match=rf"this process \(pid {os.getpid()}\)") as refused:
        InteractiveSession(provider=ScriptedProvider([]), session_store=store, resume_session_id=session_id, **opts)
    assert isinstance(refused.value, robota.SessionError)
    assert "fork" in str(refused.value)
    await first.shutdown()
    assert first.get_recovery_report() is None

    # A garbage snapshot, and a turn a killed process started and never finished.
    (store / "sessions" / f"{session_id}.json").write_text("garbage {{{")
    log = store / "logs" / f"{session_id}.jsonl"
    last_seq = max(json.loads(line)["seq"] for line in log.read_text().splitlines())
    with log.open("a") as f:
        f.write(json.dumps({"ts": "2026-05-01T10:00:00.000Z", "seq": last_seq + 1, "type": "pre_run",
                            "input": "count to three", "history_length": 2}) + "\n")
    recovered: List[robota.SessionRecoveredEvent] = []
    async with InteractiveSession(
        provider=ScriptedProvider(["one two three"]), session_store=store, resume_session_id=session_id, **opts
    ) as resumed:
        resumed.on("session_recovered", lambda e: recovered.append(e))
        report = resumed.get_recovery_report()
        assert report is not None
        assert report["unfinished_turn"]["prompt"] == "count to three"
        assert "corrupt" in report["snapshot"]["problem"]
        assert f"{session_id}.json.damaged-" in report["snapshot"]["moved_to"]
        assert [m["role"] for m in resumed.get_messages()] == ["user", "assistant"]
        assert (await resumed.submit(report["unfinished_turn"]["prompt"])).ok
    assert len(recovered) == 1
    event = recovered[0]
    assert event.session_id == session_id
    assert event.report == report
    assert event.unfinished_prompt == "count to three"
    assert "did not finish" in event.message


async def test_bad_input_raises_typed_errors(opts: Dict[str, Any], tmp_path: Path) -> None:
    with pytest.raises(robota.InvalidArgumentError, match="unknown provider type"):
        InteractiveSession(provider={"type": "nope"}, **opts)
    with pytest.raises(robota.InvalidJsonError, match="unknown permission mode `sometimes`"):
        InteractiveSession(provider=ScriptedProvider([]), permission_mode="sometimes", **opts)  # type: ignore[arg-type]
    with pytest.raises(robota.InvalidArgumentError, match="fork_session"):
        InteractiveSession(provider=ScriptedProvider([]), fork_session=True, **opts)
    with pytest.raises(robota.InvalidArgumentError, match="unknown hook event"):
        InteractiveSession(provider=ScriptedProvider([]), hooks={"BeforeEverything": lambda i: None}, **opts)
    with pytest.raises(TypeError):
        InteractiveSession(provider=object(), **opts)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="robota.tool"):
        InteractiveSession(provider=ScriptedProvider([]), tools=[len], **opts)  # type: ignore[list-item]
    with pytest.raises(robota.InvalidArgumentError, match="cannot replay"):
        InteractiveSession(provider=robota.ReplayProvider(tmp_path / "missing.jsonl"), **opts)
    session = InteractiveSession(provider=ScriptedProvider([]), **opts)
    with pytest.raises(TypeError):
        await session.submit(42)  # type: ignore[arg-type]
    # A model failure is reported as an `error` result, and the session stays usable.
    result = await session.submit("no turns left")
    assert result.status == "error" and result.error and "no more turns" in result.error
    await session.shutdown()
    with pytest.raises(robota.ShutDownError):
        await session.submit("after shutdown")


async def test_listener_that_raises_and_listener_that_calls_back(opts: Dict[str, Any]) -> None:
    loop = asyncio.get_running_loop()
    reported: List[Dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, ctx: reported.append(ctx))
    texts: List[str] = []
    streaming: List[str] = []
    provider = ScriptedProvider([{"text": ["x", "y"]}, {"text": "second"}])
    async with InteractiveSession(provider=provider, **opts) as session:

        def bad(event: robota.Event) -> None:
            raise RuntimeError("listener bug")

        def reentrant(event: TextDeltaEvent) -> None:
            texts.append(event.text)
            streaming.append(session.get_streaming_text())
            session.set_name("named from a listener")
            session.is_executing()

        async def async_listener(event: robota.Event) -> None:
            await asyncio.sleep(0)
            # Calling into the session from a listener, including awaited calls, works.
            await session.execute_command("rename", "renamed from listener")

        session.on("text_delta", bad)
        session.on("text_delta", reentrant)
        session.on("complete", async_listener)
        assert (await session.submit("one")).ok
        assert (await session.submit("two")).ok
        assert session.off("text_delta", bad)
        assert not session.off("text_delta", bad)
    assert "".join(texts).endswith("second")
    assert "listener bug" in str(reported[0]["exception"])
    assert session.name == "renamed from listener"


async def test_tool_that_calls_back_into_the_session(opts: Dict[str, Any]) -> None:
    holder: Dict[str, InteractiveSession] = {}

    @tool(read_only=True)
    async def introspect() -> str:
        """Reports how many messages the session has."""
        session = holder["s"]
        assert session.is_executing()
        return f"{len(session.get_messages())} messages, tools: {[t['name'] for t in session.get_active_tools()]}"

    provider = ScriptedProvider([{"tool_calls": [tool_call("introspect", {})]}, {"text": "ok"}])
    async with InteractiveSession(provider=provider, tools=[introspect], **opts) as session:
        holder["s"] = session
        assert (await session.submit("go")).ok
        tool_results = tool_results_of(session)
        assert "2 messages, tools: ['introspect']" in str(tool_results[0]["content"])


@pytest.mark.timeout(120)
async def test_many_concurrent_sessions(tmp_path: Path) -> None:
    @tool(read_only=True)
    async def ping(n: int) -> str:
        """Answers pong."""
        await asyncio.sleep(0)
        return f"pong {n}"

    def handler(request: PermissionRequest) -> bool:
        return True

    async def one(i: int) -> str:
        provider = ScriptedProvider([{"tool_calls": [tool_call("ping", {"n": i})]}, {"text": ["done ", str(i)]}])
        opts = hermetic(tmp_path / f"s{i}")
        count = 0

        def on_delta(event: TextDeltaEvent) -> None:
            nonlocal count
            count += 1

        async with InteractiveSession(provider=provider, tools=[ping], permission_handler=handler, **opts) as s:
            s.on("text_delta", on_delta)
            result = await s.submit(f"session {i}")
            assert count >= 1
            return result.response

    (tmp_path / "x").mkdir()
    for i in range(120):
        (tmp_path / f"s{i}").mkdir()
    responses = await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(120))), 100)
    assert responses == [f"\n\ndone {i}" if r.startswith("\n\n") else f"done {i}" for i, r in enumerate(responses)]


async def test_callbacks_run_on_the_event_loop_thread(opts: Dict[str, Any]) -> None:
    loop_thread = threading.get_ident()
    threads: Dict[str, int] = {}

    @tool(read_only=True)
    async def where() -> str:
        """Reports nothing."""
        threads["async_tool"] = threading.get_ident()
        return "here"

    def handler(request: PermissionRequest) -> bool:
        threads["permission"] = threading.get_ident()
        return True

    provider = ScriptedProvider([{"tool_calls": [tool_call("where", {}, "a"), tool_call("add", {"a": 1, "b": 2}, "b")]}, {"text": "ok"}])
    async with InteractiveSession(provider=provider, tools=[where, add], permission_handler=handler, **opts) as session:
        session.on("complete", lambda e: threads.__setitem__("listener", threading.get_ident()))
        assert (await session.submit("go")).ok
    assert threads == {"async_tool": loop_thread, "permission": loop_thread, "listener": loop_thread}


async def test_replay_provider_replays_a_saved_session(tmp_path: Path) -> None:
    opts = hermetic(tmp_path)
    store = tmp_path / "store"
    async with InteractiveSession(
        provider=ScriptedProvider([{"text": ["recorded ", "answer"]}]), session_store=store, **opts
    ) as first:
        assert (await first.submit("question")).ok
        session_id = first.session_id
    log = store / "logs" / f"{session_id}.jsonl"
    assert log.exists()
    async with InteractiveSession(provider=robota.ReplayProvider(log), **opts) as replay:
        result = await replay.submit("question")
        assert result.status == "complete" and result.response == "recorded answer"


async def test_permission_handler_that_aborts_the_session(opts: Dict[str, Any]) -> None:
    holder: Dict[str, InteractiveSession] = {}

    def handler(request: PermissionRequest) -> robota.PermissionDecision:
        holder["s"].abort()  # calling back into the session from a callback
        return deny("aborting")

    provider = ScriptedProvider([{"tool_calls": [tool_call("add", {"a": 1, "b": 1})]}, {"text": "never"}])
    async with InteractiveSession(provider=provider, tools=[add], permission_handler=handler, **opts) as session:
        holder["s"] = session
        result = await asyncio.wait_for(session.submit("go"), 10)
        assert result.status == "interrupted"
        assert (await session.execute_command("rename", "still usable")).success


async def test_abort_while_the_permission_handler_waits(opts: Dict[str, Any]) -> None:
    asked = asyncio.Event()
    cancelled = asyncio.Event()

    async def handler(request: PermissionRequest) -> robota.PermissionDecision:
        asked.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()  # the engine stopped waiting: the handler's task is cancelled
            raise
        return allow()

    provider = ScriptedProvider([{"tool_calls": [tool_call("add", {"a": 1, "b": 1})]}, {"text": "never"}])
    async with InteractiveSession(provider=provider, tools=[add], permission_handler=handler, **opts) as session:
        task = asyncio.create_task(session.submit("go"))
        await asyncio.wait_for(asked.wait(), 10)
        session.abort()
        result = await asyncio.wait_for(task, 10)
        assert result.status == "interrupted"
        await asyncio.wait_for(cancelled.wait(), 10)
        assert not session.is_executing()


async def test_session_start_and_end_hooks(opts: Dict[str, Any]) -> None:
    fired: List[str] = []

    async def record(hook_input: Dict[str, Any]) -> None:
        fired.append(hook_input["hook_event_name"])

    hooks = [Hook("SessionStart", record), Hook("SessionEnd", record), Hook("Stop", record)]
    async with InteractiveSession(provider=ScriptedProvider(["hi"]), hooks=hooks, **opts) as session:
        assert (await session.submit("hello")).ok
    assert fired == ["SessionStart", "Stop", "SessionEnd"]


async def test_abort_cancels_the_queued_submit_and_listeners_saw_the_final_event(opts: Dict[str, Any]) -> None:
    provider = ScriptedProvider([{"text": ["slow ", "answer"], "delay_ms_per_chunk": 100}, {"text": "x"}])
    async with InteractiveSession(provider=provider, **opts) as session:
        seen: List[robota.Event] = []
        session.on("*", seen.append)
        running = asyncio.create_task(session.submit("a"))
        await asyncio.sleep(0.05)
        queued = asyncio.create_task(session.submit("b"))
        await asyncio.sleep(0.02)
        session.abort()
        dropped, aborted = await asyncio.wait_for(asyncio.gather(queued, running), 10)
        assert (dropped.status, dropped.queued, dropped.event) == ("cancelled", True, None)
        assert aborted.status == "interrupted" and aborted.event is not None
        assert aborted.event.type == "interrupted" and aborted.event.session_id == session.session_id
        # Listeners had the event that ended the prompt before `submit` returned.
        assert [e.seq for e in seen if e.type == "interrupted"] == [aborted.event.seq]

        before = len(seen)
        done = await asyncio.wait_for(session.submit("c"), 10)
        assert (done.status, done.response) == ("complete", "x") and done.event is not None
        assert done.event.type == "complete" and done.event.to_dict()["outcome"] == done.outcome
        assert [e.seq for e in seen[before:] if e.type == "complete"] == [done.event.seq]


async def test_results_carry_the_prompt_report_and_raw_input_reaches_hooks(opts: Dict[str, Any]) -> None:
    prompts: List[str] = []

    def on_prompt(hook_input: Dict[str, Any]) -> None:
        prompts.append(hook_input["prompt"])

    @tool(description="Probes a path.")
    def probe(path: str) -> str:
        return f"probed {path}"

    provider = ScriptedProvider([{"tool_calls": [tool_call("probe", {"path": "a.txt"})]}, {"text": "done"}])
    async with InteractiveSession(
        provider=provider,
        tools=[probe],
        permission_handler=lambda r: allow(),
        hooks={"UserPromptSubmit": on_prompt},
        **opts,
    ) as session:
        completes: List[robota.CompleteEvent] = []
        session.on("complete", completes.append)
        result = await session.submit("Probe a.txt thoroughly.", display_input="/probe", raw_input="/probe a.txt")
        assert result.ok and result.response == "done"
        assert prompts == ["/probe a.txt"]
        events = [e["type"] for e in result.history if e["category"] == "event"]
        assert events == ["tool-start", "tool-end", "tool-summary"]
        assert result.history[0]["type"] == "user"
        assert [(t.name, t.first_arg, t.result) for t in result.tool_summaries] == [("probe", "a.txt", "success")]
        assert result.context_state is not None and result.context_state["used_tokens"] > 0
        assert completes[0].tool_summaries[0].name == "probe"
        assert completes[0].history == result.history


async def test_hook_dict_output_rejects_a_prompt(opts: Dict[str, Any]) -> None:
    def gate(hook_input: Dict[str, Any]) -> Dict[str, Any]:
        return {"decision": "block", "reason": "prompts about X are not allowed"}

    async with InteractiveSession(provider=ScriptedProvider(["hi"]), hooks={"UserPromptSubmit": gate}, **opts) as session:
        result = await session.submit("X")
        assert result.status == "error"
        assert result.error is not None and "prompts about X are not allowed" in result.error
        assert session.get_messages() == []


async def test_unresolvable_file_reference_is_rejected_and_session_stays_aligned(opts: Dict[str, Any]) -> None:
    async with InteractiveSession(provider=ScriptedProvider(["after"]), **opts) as session:
        with pytest.raises(robota.InvalidArgumentError):
            await session.submit("summarize @./missing-file.txt")
        # The rejected prompt's `error` event must not be taken as the end of the next prompt.
        result = await asyncio.wait_for(session.submit("hello"), 10)
        assert (result.status, result.response) == ("complete", "after")


async def test_rejected_prompt_while_another_runs_does_not_end_it(opts: Dict[str, Any]) -> None:
    provider = ScriptedProvider([{"text": ["slow ", "answer"], "delay_ms_per_chunk": 100}])
    async with InteractiveSession(provider=provider, **opts) as session:
        running = asyncio.create_task(session.submit("first"))
        await asyncio.sleep(0.05)
        with pytest.raises(robota.InvalidArgumentError):
            await session.submit("and @./missing.txt")
        result = await asyncio.wait_for(running, 10)
        assert (result.status, result.response) == ("complete", "slow answer")


async def test_sandbox_status_is_typed_and_follows_the_mode(tmp_path: Path) -> None:
    options = dict(hermetic(tmp_path), builtin_tools=True)
    outside = tmp_path / "outside.txt"
    provider = ScriptedProvider(
        [
            {"tool_calls": [tool_call("Bash", {"command": f"echo x > {outside}"})]},
            "done",
        ]
    )
    async with InteractiveSession(
        provider=provider, permission_mode="bypassPermissions", **options
    ) as session:
        status = session.sandbox_status()
        assert isinstance(status, robota.SandboxStatus)
        assert status.enabled and status.active, status.reason
        assert status.backend in ("bwrap", "landlock")
        assert status.guarantees.writes_confined
        assert status.network.mode == "none"
        assert str(Path(options["cwd"]).resolve()) in status.writable_roots
        result = await session.submit("write outside")
        assert result.status == "complete"
    assert not outside.exists(), "the sandboxed Bash call wrote outside the workspace"

    async with InteractiveSession(
        provider=ScriptedProvider(["ok"]), permission_mode="bypassPermissions", sandbox=False, **options
    ) as session:
        status = session.sandbox_status()
        assert not status.enabled and not status.active
        assert status.reason is not None and "turned off" in status.reason
