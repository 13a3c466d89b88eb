"""create_query / run_query, Python-implemented providers, evaluate_permission, and process
exit with a session still running."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

import robota
from robota import (
    InteractiveSession,
    Provider,
    ProviderResponse,
    ScriptedProvider,
    ToolCall,
    create_query,
    evaluate_permission,
    run_query,
    tool,
)

from conftest import MockLlm, hermetic


async def test_create_query_runs_turns_on_one_session(opts: Dict[str, Any]) -> None:
    deltas: List[str] = []
    query = create_query(
        provider=ScriptedProvider([{"text": ["Hi", " there"], "usage": {"input_tokens": 5, "output_tokens": 2}}, "Again"]),
        on_text_delta=deltas.append,
        **opts,
    )
    first = await query("hello")
    assert first.response == "Hi there"
    assert first.stop_reason == "completed" or first.stop_reason  # engine's RunStopReason name
    assert first.usage["output_tokens"] == 2
    assert first.num_turns == 1
    second = await query("again")
    assert second.response == "Again"
    assert second.session_id == first.session_id == query.session_id
    assert len(second.messages) == 4
    await asyncio.sleep(0.01)  # text deltas are delivered through the loop
    assert "".join(deltas) == "Hi thereAgain"


async def test_query_against_mock_llm_with_tools_and_rules(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    @tool
    def lookup(key: str) -> str:
        """Looks a key up."""
        return f"value-of-{key}"

    mock_llm.script(
        [
            {"tool_calls": [{"id": "t1", "name": "lookup", "input": {"key": "k"}}]},
            {"text": "The value is value-of-k."},
        ]
    )
    query = create_query(
        provider=robota.AnthropicProvider("claude-test", api_key="sk", base_url=mock_llm.base_url, max_retries=0),
        tools=[lookup],
        allowed_tools=["lookup"],
        **opts,
    )
    result = await query("look up k")
    assert result.response == "The value is value-of-k."
    sent = mock_llm.requests()
    assert len(sent) == 2
    tool_result = sent[1]["body"]["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result" and "value-of-k" in str(tool_result["content"])


async def test_query_provider_failure_raises(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    mock_llm.script([{"fault": {"kind": "status", "status": 401, "message": "bad key"}}])
    query = create_query(
        provider=robota.AnthropicProvider("claude-test", api_key="sk", base_url=mock_llm.base_url, max_retries=0),
        **opts,
    )
    with pytest.raises(robota.ProviderError, match="bad key"):
        await query("hi")
    with pytest.raises(robota.InvalidArgumentError):
        create_query(provider=ScriptedProvider([]), allowed_tools=["Bash(unclosed"], **opts)


def test_run_query_is_synchronous(tmp_path: Path) -> None:
    result = run_query("hi", provider=ScriptedProvider(["sync answer"]), **hermetic(tmp_path))
    assert result.response == "sync answer"


class EchoModel(Provider):
    """A model written in Python: calls `shout` once, then answers with the tool result."""

    name = "echo"
    model = "echo-1"
    context_window = 4000

    def __init__(self) -> None:
        self.requests: List[Dict[str, Any]] = []

    async def stream(self, request: Dict[str, Any], emit: Any) -> Any:
        self.requests.append(request)
        last = request["messages"][-1]
        results = [b for b in last.get("content", []) if b.get("type") == "tool_result"]
        if not results:
            emit.text("Calling shout. ")
            return ProviderResponse(tool_calls=[ToolCall("s1", "shout", {"text": "hi"})])
        for word in ["Got", " ", str(results[0]["content"])]:
            emit.text(word)
            await asyncio.sleep(0)
        return None


async def test_python_provider_subclass(opts: Dict[str, Any]) -> None:
    @tool(read_only=True)
    def shout(text: str) -> str:
        """Upper-cases text."""
        return text.upper()

    model = EchoModel()
    async with InteractiveSession(provider=model, tools=[shout], **opts) as session:
        deltas: List[str] = []
        session.on("text_delta", lambda e: deltas.append(e.text))
        result = await session.submit("go")
        assert result.status == "complete", result.error
        assert result.response.endswith("Got HI")
        assert "".join(deltas).startswith("Calling shout. ")
        assert session.get_context_state()["max_tokens"] == 4000
    assert [t["name"] for t in model.requests[0]["tools"]] == ["shout"] or "shout" in [
        t["name"] for t in model.requests[0]["tools"]
    ]


async def test_python_provider_that_raises(opts: Dict[str, Any]) -> None:
    class Broken(Provider):
        async def stream(self, request: Dict[str, Any], emit: Any) -> str:
            raise ConnectionError("model offline")

    async with InteractiveSession(provider=Broken(), **opts) as session:
        result = await session.submit("hi")
        assert result.status == "error"
        assert result.error is not None and "model offline" in result.error


async def test_python_provider_streams_thinking_and_hook_labels(opts: Dict[str, Any]) -> None:
    class Thinker(Provider):
        name = "thinker"
        model = "thinker-1"

        def __init__(self) -> None:
            self.calls = 0

        async def stream(self, request: Dict[str, Any], emit: Any) -> Any:
            self.calls += 1
            if self.calls == 1:
                emit.thinking("let me see")
                emit.text("Hel")
                emit.text("lo")
                emit.tool_call_start(0, "c1", "slow")  # a no-op: the response's calls count
                # The same text again: the streamed text is the answer, nothing is doubled.
                return ProviderResponse(text="Hello", tool_calls=[ToolCall("c1", "slow", {})])
            return "done"

    @tool(read_only=True)
    async def slow() -> str:
        """Takes its time."""
        await asyncio.sleep(30)
        return "never"

    async def sleepy_hook(hook_input: Dict[str, Any]) -> None:
        await asyncio.sleep(30)

    hooks = [robota.Hook("PreToolUse", sleepy_hook, timeout=0.2, name="sleepy")]
    async with InteractiveSession(provider=Thinker(), tools=[slow], hooks=hooks, **opts) as session:
        result = await session.submit("go")
        assert result.status == "complete", result.error
        assert result.response == "done"
        blocks = [b for m in session.get_messages() for b in m.get("content") or [] if isinstance(b, dict)]
        assert {"type": "thinking", "thinking": "let me see"} in [
            {k: b[k] for k in ("type", "thinking")} for b in blocks if b["type"] == "thinking"
        ]
        assert [b["text"] for b in blocks if b["type"] == "text"] == ["go", "Hello", "done"]
        [tool_result] = [b for b in blocks if b["type"] == "tool_result"]
        assert tool_result["is_error"] is True and "hook callback `sleepy` timed out" in tool_result["content"]


def test_evaluate_permission(tmp_path: Path) -> None:
    allowed = evaluate_permission("Bash", {"command": "git status"}, cwd=tmp_path, allow=["Bash(git *)"])
    assert allowed["decision"] == "allow"
    denied = evaluate_permission("Bash", {"command": "rm -rf /"}, cwd=tmp_path, deny=["Bash(rm *)"])
    assert denied["decision"] == "deny"
    ask = evaluate_permission("Write", {"file_path": str(tmp_path / "a.txt"), "content": "x"}, cwd=tmp_path)
    assert ask["decision"] == "ask"
    assert evaluate_permission("Read", {"file_path": str(tmp_path / "a.txt")}, cwd=tmp_path)["decision"] == "allow"
    with pytest.raises(robota.InvalidJsonError, match="permission context"):
        robota.evaluate_permission("Read", {}, cwd=tmp_path, context={"mode": "sometimes"})


EXIT_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys, tempfile, time
    import robota

    @robota.tool(read_only=True)
    async def hang() -> str:
        '''Never returns in time.'''
        await asyncio.sleep(60)
        return "late"

    session = None

    async def main():
        global session
        d = tempfile.mkdtemp()
        provider = robota.ScriptedProvider([
            {"text": ["tok "] * 5, "delay_ms_per_chunk": 1, "tool_calls": [{"id": "a", "name": "hang"}]},
            {"text": "never"},
        ])
        session = robota.InteractiveSession(provider=provider, cwd=d, home=d, load_project_context=False,
                                            builtin_tools=False, tools=[hang])
        session.on("text_delta", lambda e: None)
        task = asyncio.create_task(session.submit("go"))
        while not session.get_active_tools():
            await asyncio.sleep(0.01)
        print("RUNNING", flush=True)
        if sys.argv[1] == "exit":
            sys.exit(0)          # leave with the run (and its tool) still going
        await task               # the parent sends SIGINT (Ctrl-C) now

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        # Ctrl-C cancelled the awaited submit(): that must abort the run.
        deadline = time.monotonic() + 10
        while session.is_executing() and time.monotonic() < deadline:
            time.sleep(0.01)
        print("ABORTED" if not session.is_executing() else "STILL RUNNING", flush=True)
        raise
    """
)


@pytest.mark.parametrize("mode", ["exit", "sigint"])
def test_interpreter_exit_with_a_running_session(tmp_path: Path, mode: str) -> None:
    script = tmp_path / "exit_script.py"
    script.write_text(EXIT_SCRIPT)
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, str(script), mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "RUNNING"
    if mode == "sigint":
        proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 20
    if mode == "exit":
        assert proc.returncode == 0, err
    else:
        assert "ABORTED" in out, (out, err)
        assert "KeyboardInterrupt" in err
        assert proc.returncode in (1, 130, -signal.SIGINT), err
    assert "panicked" not in err and "Fatal Python error" not in err


CLEAN_EXIT_SCRIPT = textwrap.dedent(
    """
    import asyncio, tempfile
    import robota

    async def main():
        d = tempfile.mkdtemp()
        provider = robota.ScriptedProvider([{"text": ["a", "b"]}])
        async with robota.InteractiveSession(provider=provider, cwd=d, home=d, load_project_context=False,
                                             builtin_tools=False) as session:
            session.on("text_delta", lambda e: None)
            stream = session.events()
            await session.submit("go")
            stream.close()

    asyncio.run(main())
    print("done")
    """
)


def test_clean_exit_after_normal_use(tmp_path: Path) -> None:
    """Regression: an event-batch future completed by an engine thread while the interpreter
    starts finalizing used to crash the process (~1 run in 4) after a normal `asyncio.run`."""
    script = tmp_path / "clean_exit.py"
    script.write_text(CLEAN_EXIT_SCRIPT)
    for _ in range(8):
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0 and proc.stdout.strip() == "done", proc.stderr
        assert "Fatal Python error" not in proc.stderr
