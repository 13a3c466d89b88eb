"""RemoteSession end to end: a real ``robota serve`` process whose sessions talk to mock-llm."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import AsyncIterator, Iterator, List

import pytest

import robota
from robota import (
    NotFoundError,
    PathOutsideRootsError,
    RemoteConnectionError,
    RemoteSession,
    UnauthorizedError,
)

from conftest import REPO, MockLlm

TOKEN = "python-remote-test-token-0123456789"
ENDS = {"complete", "refused", "truncated", "error", "interrupted"}


def robota_binary() -> Path:
    """The ``robota`` binary (``$ROBOTA_BIN`` when set), built with cargo when missing."""
    explicit = os.environ.get("ROBOTA_BIN")
    if explicit:
        return Path(explicit)
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    binary = target / "debug" / "robota"
    if not binary.exists():
        subprocess.run(["cargo", "build", "-q", "-p", "robota-cli"], cwd=REPO, check=True)
    return binary


class Serve:
    """A running ``robota serve`` with one project root."""

    def __init__(self, process: "subprocess.Popen[str]", url: str, project: Path) -> None:
        self.process = process
        self.url = url
        self.project = project


@pytest.fixture
def serve(mock_llm: MockLlm, tmp_path: Path) -> Iterator[Serve]:
    project = tmp_path / "project"
    home = tmp_path / "home"
    (project / ".robota").mkdir(parents=True)
    home.mkdir()
    settings = {
        "currentProvider": "mock",
        "providers": {
            "mock": {
                "type": "anthropic",
                "model": "claude-sonnet-4-5",
                "apiKey": "test-key",
                "baseURL": mock_llm.base_url,
                "options": {"maxRetries": 0},
            }
        },
    }
    (project / ".robota" / "settings.json").write_text(json.dumps(settings))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update({"ROBOTA_PY_TEST_TOKEN": TOKEN, "HOME": str(home), "USERPROFILE": str(home)})
    binary = robota_binary()
    process = subprocess.Popen(
        [str(binary), "serve", "--port", "0", "--token-env", "ROBOTA_PY_TEST_TOKEN", "--root", str(project)],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    found: List[str] = []
    seen: List[str] = []
    ready = threading.Event()

    def read_stderr() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            seen.append(line)
            match = re.search(r"listening on (\S+)", line)
            if match and not found:
                found.append(match.group(1))
                ready.set()
        ready.set()

    threading.Thread(target=read_stderr, daemon=True).start()
    ready.wait(60)
    if not found:
        process.kill()
        pytest.fail("robota serve printed no `listening on` line:\n" + "".join(seen))
    try:
        yield Serve(process, found[0], project)
    finally:
        process.kill()
        process.wait(10)


async def until_prompt_end(stream: AsyncIterator[robota.Event]) -> List[robota.Event]:
    events: List[robota.Event] = []
    async for event in stream:
        events.append(event)
        if event.type in ENDS:
            return events
    raise AssertionError(f"the stream ended early after {events}")


async def test_commands_state_names_fork_and_close_work_over_http(serve: Serve, mock_llm: MockLlm) -> None:
    mock_llm.script([{"text": "hello"}])
    session = await RemoteSession.create(serve.url, token=TOKEN, cwd=serve.project)
    assert (await session.submit("hi")).ok
    attached = await RemoteSession.connect(serve.url, session.session_id, token=TOKEN)
    assert len(attached.get_full_history()) >= 2
    assert any(c["name"] == "rename" for c in attached.list_commands())
    renamed = await attached.execute_command("rename", "remote one")
    assert renamed.success, renamed
    assert session.get_name() == "remote one"
    session.set_name("second")
    assert attached.get_name() == "second"
    assert isinstance(session.get_context_state()["used_tokens"], int)
    assert await session.pending_permissions() == []
    copy = await session.fork("copy")
    assert copy.session_id != session.session_id
    assert copy.get_name() == "copy"
    await copy.close()

    stream = session.events()
    await stream.ready()
    await session.close()
    # The stream ends once the session is closed.
    async for _ in stream:
        pass
    with pytest.raises(NotFoundError) as raised:
        session.info()
    assert raised.value.code == "not_found"


async def test_a_permission_request_is_answered_over_http(serve: Serve, mock_llm: MockLlm) -> None:
    mock_llm.script(
        [
            {
                "tool_calls": [
                    {"id": "w1", "name": "Write", "input": {"file_path": "out.txt", "content": "written remotely"}}
                ]
            },
            {"text": "Wrote it."},
        ]
    )
    async with await RemoteSession.create(serve.url, token=TOKEN, cwd=serve.project) as session:
        stream = session.events()
        submitted = asyncio.ensure_future(session.submit("write out.txt"))
        request_id = None
        async for event in stream:
            assert event.type not in ENDS, f"the prompt ended without asking: {event}"
            if isinstance(event, robota.PermissionRequestEvent):
                assert event.tool_name == "Write"
                request_id = event.request_id
                break
        stream.close()
        assert request_id is not None
        pending = await session.pending_permissions()
        assert [p["request_id"] for p in pending] == [request_id]
        with pytest.raises(NotFoundError):
            await session.answer_permission("no-such-request", robota.allow())
        await session.answer_permission(request_id, robota.allow())
        result = await asyncio.wait_for(submitted, 30)
        assert result.ok, result
    assert (serve.project / "out.txt").read_text() == "written remotely"


async def test_a_wrong_token_is_unauthorized_and_bad_targets_fail_clearly(serve: Serve) -> None:
    with pytest.raises(UnauthorizedError) as raised:
        await RemoteSession.create(serve.url, token="not-the-token", cwd=serve.project)
    assert "token" in str(raised.value)
    assert raised.value.code == "unauthorized"
    with pytest.raises(NotFoundError):
        await RemoteSession.connect(serve.url, "no-such-session", token=TOKEN)
    with tempfile.TemporaryDirectory() as outside:
        with pytest.raises(PathOutsideRootsError):
            await RemoteSession.create(serve.url, token=TOKEN, cwd=outside)
    with pytest.raises(RemoteConnectionError):
        await RemoteSession.connect("http://127.0.0.1:9", "any", token=TOKEN, timeout=5)
    with pytest.raises(robota.InvalidArgumentError):
        await RemoteSession.connect("not a url", "any", token=TOKEN)


# -- one body of code, a local and a remote session ------------------------------------------


async def drive_a_session(session: "robota.InteractiveSession | RemoteSession") -> None:
    """Code written once against the session surface: it runs unchanged on a local
    :class:`robota.InteractiveSession` and on a :class:`robota.RemoteSession`."""
    async with session.events() as stream:
        result = await session.submit("Read notes.txt")
        assert result.status == "complete", result
        assert result.response == "All read."
        assert [t.name for t in result.tool_summaries] == ["Read"]
        events = await until_prompt_end(stream)
    assert {"tool_start", "tool_end", "text_delta", "complete"} <= {e.type for e in events}
    assert [e.seq for e in events] == list(range(events[0].seq, events[0].seq + len(events)))
    text = "".join(e.text for e in events if isinstance(e, robota.TextDeltaEvent))
    # The engine separates the rounds' texts with a blank line.
    assert text.lstrip() == "All read."
    assert isinstance(events[-1], robota.CompleteEvent)
    assert not session.is_executing()
    assert session.get_pending_prompt() is None

    assert any(c["name"] == "rename" for c in session.list_commands())
    renamed = await session.execute_command("rename", "shared code")
    assert renamed.success, renamed
    assert session.get_name() == "shared code"
    session.set_name("renamed")
    assert session.name == "renamed"
    session.name = "third"
    assert session.get_name() == "third"

    messages = session.get_messages()
    assert messages[0]["role"] == "user"
    assert any(entry["category"] == "event" for entry in session.get_full_history())
    assert session.get_context_state()["used_tokens"] > 0

    # abort() is a plain call on both: the running prompt ends interrupted.
    async with session.events() as stream:
        running = asyncio.ensure_future(session.submit("Say something slowly"))
        async for event in stream:
            if event.type == "text_delta":
                break
            assert event.type not in ENDS, f"the prompt ended before streaming: {event}"
        assert session.is_executing()
        session.abort()
        aborted = await asyncio.wait_for(running, 30)
    assert aborted.status == "interrupted", aborted
    assert not session.is_executing()
    await session.shutdown()


def script_for_drive_a_session(mock_llm: MockLlm) -> None:
    mock_llm.script(
        [
            {"tool_calls": [{"id": "t1", "name": "Read", "input": {"file_path": "notes.txt"}}]},
            {"text": ["All ", "read."], "chunk_delay_ms": 20},
            {"text": ["slow "] * 200, "chunk_delay_ms": 50},
        ]
    )


async def test_the_same_code_drives_a_local_and_a_remote_session(
    serve: Serve, mock_llm: MockLlm, tmp_path: Path
) -> None:
    (serve.project / "notes.txt").write_text("shared notes\n")
    # Local: the same project folder and the same model as the server's sessions.
    script_for_drive_a_session(mock_llm)
    provider = robota.AnthropicProvider(
        "claude-sonnet-4-5", api_key="test-key", base_url=mock_llm.base_url, max_retries=0
    )
    await drive_a_session(robota.InteractiveSession(provider=provider, cwd=serve.project, home=tmp_path / "home"))
    # Remote: only the constructor differs.
    script_for_drive_a_session(mock_llm)
    await drive_a_session(await RemoteSession.create(serve.url, token=TOKEN, cwd=serve.project))
