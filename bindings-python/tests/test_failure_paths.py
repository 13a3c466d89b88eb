"""The failure paths a newcomer meets first: hooks that fail closed where they guard (raising,
mis-typed, slow or unreadable callbacks), Claude Code hook JSON, tool error results and
exceptions, submission order under concurrency, construction errors that name the field, and
what a shut-down session does."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Dict, List, Tuple

import pytest

import robota
from robota import (
    Hook,
    InteractiveSession,
    OpenAIProvider,
    PermissionRequest,
    ScriptedProvider,
    ToolResult,
    allow,
    tool,
)


def call(name: str, input: Dict[str, Any], id: str = "call_1") -> Dict[str, Any]:
    return {"tool_calls": [{"id": id, "name": name, "input": input}]}


def tool_results(session: InteractiveSession) -> List[Dict[str, Any]]:
    """The tool results the model was sent, in order."""
    return [
        block
        for message in session.get_messages()
        for block in message.get("content", [])
        if block.get("type") == "tool_result"
    ]


def guarded(ran: List[str]) -> Any:
    """A tool that records that it ran."""

    @tool(read_only=True)
    def danger(what: str) -> str:
        """Does something dangerous."""
        ran.append(what)
        return "done"

    return danger


async def run_guarded(opts: Dict[str, Any], hooks: Any, caplog: pytest.LogCaptureFixture) -> Tuple[List[str], str, List[Any]]:
    """Runs one `danger` call under `hooks`; returns what ran, the result the model saw and the
    hook_error session events."""
    ran: List[str] = []
    errors: List[Any] = []
    provider = ScriptedProvider([call("danger", {"what": "x"}), "after"])
    caplog.set_level(logging.WARNING, logger="robota")
    async with InteractiveSession(provider=provider, tools=[guarded(ran)], hooks=hooks, **opts) as session:
        session.on("session", lambda e: errors.append(e.event) if e.event.get("type") == "hook_error" else None)
        result = await session.submit("go")
        assert result.ok, result
        content = str(tool_results(session)[0]["content"])
    return ran, content, errors


# -- hooks fail closed -----------------------------------------------------------------------


async def test_a_raising_pre_tool_use_hook_blocks_the_call_and_tells_the_developer(
    opts: Dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    def guard(hook_input: Dict[str, Any]) -> None:
        raise ValueError("policy database unavailable")

    ran, content, errors = await run_guarded(opts, [Hook("PreToolUse", guard)], caplog)
    assert ran == []
    assert "hook callback `guard`" in content
    assert "ValueError: policy database unavailable" in content
    # The developer is told: on the `robota` logger and as a hook_error event.
    logged = [r.getMessage() for r in caplog.records if r.name == "robota"]
    assert any("guard" in line and "blocked" in line for line in logged), logged
    assert len(errors) == 1 and errors[0]["blocked"] is True


@pytest.mark.parametrize(
    "hook, says",
    [
        (lambda: None, "TypeError"),  # wrong signature: takes no argument
        (lambda hook_input: 42, "returned a number"),
        (lambda hook_input: {"decison": "block"}, "unknown field `decison`"),
        (lambda hook_input: {"decision": "deny"}, 'decision: \\"deny\\"'),
        (lambda hook_input: object(), "returned a value of type object"),
    ],
)
async def test_mistyped_and_unrecognised_hooks_block(
    opts: Dict[str, Any], caplog: pytest.LogCaptureFixture, hook: Any, says: str
) -> None:
    ran, content, _ = await run_guarded(opts, {"PreToolUse": Hook("PreToolUse", hook, name="picky")}, caplog)
    assert ran == []
    assert "picky" in content
    assert says.replace("\\", "") in content.replace("\\", ""), content


async def test_a_slow_hook_times_out_and_blocks(opts: Dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    async def slow(hook_input: Dict[str, Any]) -> None:
        await asyncio.sleep(30)

    ran, content, _ = await run_guarded(opts, [Hook("PreToolUse", slow, timeout=0.2)], caplog)
    assert ran == []
    assert "timed out" in content


async def test_on_failure_allow_lets_the_call_through(opts: Dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    def flaky(hook_input: Dict[str, Any]) -> None:
        raise RuntimeError("metrics down")

    ran, content, errors = await run_guarded(opts, [Hook("PreToolUse", flaky, on_failure="allow")], caplog)
    assert ran == ["x"]
    assert content == "done"
    assert len(errors) == 1 and not errors[0].get("blocked")


async def test_claude_code_hook_json_and_the_claude_agent_sdk_matcher_form(
    opts: Dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    def legacy(hook_input: Dict[str, Any]) -> Dict[str, Any]:
        return {"decision": "block", "reason": "not on Fridays"}

    ran, content, _ = await run_guarded(opts, {"PreToolUse": [{"matcher": "danger", "hooks": [legacy]}]}, caplog)
    assert ran == [] and "not on Fridays" in content

    def specific(hook_input: Dict[str, Any]) -> Dict[str, Any]:
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "denied by policy",
            }
        }

    ran, content, _ = await run_guarded(opts, {"PreToolUse": specific}, caplog)
    assert ran == [] and "denied by policy" in content


async def test_a_raising_permission_request_hook_denies(opts: Dict[str, Any]) -> None:
    ran: List[str] = []
    asked: List[str] = []

    def approver(hook_input: Dict[str, Any]) -> None:
        raise KeyError("no approver")

    def handler(request: PermissionRequest) -> Any:
        asked.append(request.tool_name)
        return allow()

    @tool
    def write_it(what: str) -> str:
        """Writes."""
        ran.append(what)
        return "written"

    provider = ScriptedProvider([call("write_it", {"what": "x"}), "after"])
    async with InteractiveSession(
        provider=provider, tools=[write_it], hooks={"PermissionRequest": approver}, permission_handler=handler, **opts
    ) as session:
        await session.submit("go")
        content = str(tool_results(session)[0]["content"])
    assert ran == [] and asked == []
    assert "approver" in content and "KeyError" in content


async def test_on_failure_block_is_refused_where_nothing_can_be_blocked(opts: Dict[str, Any]) -> None:
    with pytest.raises(robota.InvalidArgumentError, match="PostToolUse"):
        InteractiveSession(
            provider=ScriptedProvider([]),
            hooks=[Hook("PostToolUse", lambda i: None, on_failure="block")],
            **opts,
        )


# -- tools -----------------------------------------------------------------------------------


async def test_tool_error_results_and_exceptions_reach_the_model_and_the_developer(
    opts: Dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    @tool(read_only=True)
    def as_dict() -> Dict[str, Any]:
        """Fails with a dict."""
        return {"content": "disk full", "is_error": True}

    @tool(read_only=True)
    def as_result() -> ToolResult:
        """Fails with a ToolResult."""
        return ToolResult.error("quota exceeded")

    @tool(read_only=True)
    def raises() -> str:
        """Raises."""
        raise PermissionError("no access to /etc")

    @tool(read_only=True)
    def data() -> Dict[str, Any]:
        """Returns data."""
        return {"temp": 21}

    caplog.set_level(logging.WARNING, logger="robota")
    provider = ScriptedProvider(
        [
            {
                "tool_calls": [
                    {"id": "a", "name": "as_dict", "input": {}},
                    {"id": "b", "name": "as_result", "input": {}},
                    {"id": "c", "name": "raises", "input": {}},
                    {"id": "d", "name": "data", "input": {}},
                ]
            },
            "ok",
        ]
    )
    ends: Dict[str, str] = {}
    async with InteractiveSession(provider=provider, tools=[as_dict, as_result, raises, data], **opts) as session:
        session.on("tool_end", lambda e: ends.__setitem__(e.tool.name, str(e.tool.result)))
        await session.submit("go")
        results = {r["tool_use_id"]: r for r in tool_results(session)}
    assert ends == {"as_dict": "error", "as_result": "error", "raises": "error", "data": "success"}
    assert results["a"]["content"] == "disk full" and results["a"]["is_error"]
    assert results["c"]["content"] == "PermissionError: no access to /etc"
    assert results["d"]["content"] == '{"temp":21}'
    logged = [r for r in caplog.records if r.name == "robota"]
    assert any("PermissionError: no access to /etc" in r.getMessage() and r.exc_info for r in logged)


# -- ordering --------------------------------------------------------------------------------


async def test_concurrent_submits_keep_submission_order(opts: Dict[str, Any]) -> None:
    for trial in range(40):
        provider = ScriptedProvider([{"text": ["a"] * 5, "delay_ms_per_chunk": 2}, "b"])
        async with InteractiveSession(provider=provider, **opts) as session:
            results = await asyncio.gather(
                session.submit("first"),
                session.submit("second"),
                session.submit("third"),
                return_exceptions=True,
            )
            first, second, third = results
            assert isinstance(first, robota.TurnResult) and first.ok and not first.queued, (trial, results)
            assert isinstance(second, robota.TurnResult) and second.ok and second.queued, (trial, results)
            assert isinstance(third, robota.QueueFullError), (trial, results)


# -- construction errors ---------------------------------------------------------------------


def test_obviously_invalid_values_fail_at_construction_naming_the_field(opts: Dict[str, Any]) -> None:
    cases: List[Tuple[Any, str]] = [
        (lambda: InteractiveSession(provider=OpenAIProvider("m", base_url="localhost:11434/v1"), **opts), "`base_url`"),
        (lambda: InteractiveSession(provider=ScriptedProvider([]), max_turns=-1, **opts), "`max_turns`"),
        (lambda: InteractiveSession(provider=ScriptedProvider([]), permission_mode="yolo", **opts), "yolo"),  # type: ignore[arg-type]
    ]
    for make, field in cases:
        with pytest.raises(robota.RobotaError) as info:
            make()
        assert field in str(info.value), str(info.value)
        assert "u32" not in str(info.value) and "Config." not in str(info.value), str(info.value)

    @tool(name="get weather")
    def bad_name() -> str:
        """."""
        return ""

    with pytest.raises(robota.InvalidArgumentError, match="invalid tool name `get weather`"):
        InteractiveSession(provider=ScriptedProvider([]), tools=[bad_name], **opts)

    @tool(name="lookup", input_schema={"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]})
    def bad_schema(a: str) -> str:
        """."""
        return a

    with pytest.raises(robota.InvalidArgumentError, match="names `b`"):
        InteractiveSession(provider=ScriptedProvider([]), tools=[bad_schema], **opts)

    @tool(name="lookup")
    def one() -> str:
        """."""
        return ""

    @tool(name="lookup")
    def two() -> str:
        """."""
        return ""

    with pytest.raises(robota.InvalidArgumentError, match="two tools have this name"):
        InteractiveSession(provider=ScriptedProvider([]), tools=[one, two], **opts)

    @tool(name="Read")
    def read(file_path: str) -> str:
        """."""
        return ""

    shadowing = dict(opts, builtin_tools=True)
    with pytest.raises(robota.InvalidArgumentError, match="replaces_builtin"):
        InteractiveSession(provider=ScriptedProvider([]), tools=[read], **shadowing)
    replacing = tool(name="Read", replaces_builtin=True)(lambda file_path: "")
    InteractiveSession(provider=ScriptedProvider([]), tools=[replacing], **shadowing)

    with pytest.raises(robota.InvalidArgumentError, match=r"`turns\[1\]` must be a dict or a string, not int"):
        ScriptedProvider(["hi", 42])  # type: ignore[list-item]
    with pytest.raises(robota.InvalidArgumentError, match="`turns` must be a list of turns, not str"):
        ScriptedProvider("hi")


async def test_an_empty_prompt_is_refused(opts: Dict[str, Any]) -> None:
    async with InteractiveSession(provider=ScriptedProvider(["hi"]), **opts) as session:
        with pytest.raises(robota.InvalidArgumentError, match="empty"):
            await session.submit("   ")


# -- events ----------------------------------------------------------------------------------


def test_an_unknown_event_name_is_an_error(opts: Dict[str, Any]) -> None:
    session = InteractiveSession(provider=ScriptedProvider([]), **opts)
    with pytest.raises(robota.InvalidArgumentError, match="did you mean 'text_delta'"):
        session.on("text_dleta", lambda e: None)  # type: ignore[call-overload]


# -- shutdown --------------------------------------------------------------------------------


async def test_after_shutdown_every_action_fails_with_shut_down_error(opts: Dict[str, Any]) -> None:
    session = InteractiveSession(provider=ScriptedProvider(["hi"]), **opts)
    assert (await session.submit("hi")).ok
    await session.shutdown()
    await session.shutdown()  # again: nothing happens
    with pytest.raises(robota.ShutDownError):
        await session.submit("hi")
    with pytest.raises(robota.ShutDownError):
        await session.execute_command("help")
    with pytest.raises(robota.ShutDownError):
        await session.compact()
    with pytest.raises(robota.ShutDownError):
        session.list_commands()
    with pytest.raises(robota.ShutDownError):
        session.name = "later"
    with pytest.raises(robota.ShutDownError):
        session.on("text_delta", lambda e: None)
    with pytest.raises(robota.ShutDownError):
        session.events()
    session.abort()
    assert session.cancel_queue() is None
    assert [m["role"] for m in session.get_messages()] == ["user", "assistant"]


def test_shutdown_from_another_event_loop(opts: Dict[str, Any]) -> None:
    seen: List[str] = []

    async def use() -> InteractiveSession:
        session = InteractiveSession(provider=ScriptedProvider(["hi"]), **opts)
        session.on("complete", lambda e: seen.append(e.response))
        assert (await session.submit("hi")).ok
        return session

    session = asyncio.run(use())
    asyncio.run(session.shutdown())  # a new loop; the first one is closed
    assert session.is_shut_down
    assert seen == ["hi"]
