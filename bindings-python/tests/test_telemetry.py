"""OpenTelemetry export from Python: a session with ``telemetry`` and a ``traceparent`` sends its
spans to a real OTLP receiver (tests/otlp-receiver, started here), in the host's trace; a
per-prompt ``traceparent`` on ``submit`` moves that prompt into another trace."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from typing import Any, Dict, Iterator, List

import pytest

from robota import AnthropicProvider, InteractiveSession, InvalidArgumentError

from conftest import MockLlm, workspace_binary

SESSION_TRACE = "0af7651916cd43dd8448eb211c80319c"
SESSION_PARENT = "b7ad6b7169203331"
PROMPT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PROMPT_PARENT = "00f067aa0ba902b7"


class Receiver:
    """A running otlp-receiver: its endpoints and the spans it printed."""

    def __init__(self, process: "subprocess.Popen[str]") -> None:
        self.process = process
        assert process.stdout is not None
        ready = json.loads(process.stdout.readline())
        self.http: str = ready["http"]
        self.grpc: str = ready["grpc"]
        self.lines: "queue.Queue[Dict[str, Any]]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))

    def spans_until(self, names: List[str], timeout: float = 10.0) -> List[Dict[str, Any]]:
        """The spans received until every name in ``names`` (with repeats) has arrived."""
        spans: List[Dict[str, Any]] = []
        wanted = list(names)
        while wanted:
            try:
                item = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"spans {wanted} never arrived; got {[s['name'] for s in spans]}")
            if item["type"] != "span":
                continue
            spans.append(item)
            if item["name"] in wanted:
                wanted.remove(item["name"])
        return spans


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    process = subprocess.Popen(
        [str(workspace_binary("otlp-receiver", "ROBOTA_OTLP_RECEIVER"))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield Receiver(process)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
async def test_spans_join_the_hosts_trace(
    mock_llm: MockLlm, opts: Dict[str, Any], receiver: Receiver, protocol: str
) -> None:
    mock_llm.script(
        [
            {"text": "first", "usage": {"input_tokens": 11, "output_tokens": 2}},
            {"text": "second", "usage": {"input_tokens": 13, "output_tokens": 3}},
        ]
    )
    provider = AnthropicProvider("claude-test", api_key="sk-test", base_url=mock_llm.base_url, max_retries=0)
    endpoint = receiver.http if protocol == "http" else receiver.grpc
    async with InteractiveSession(
        provider=provider,
        telemetry={"endpoint": endpoint, "protocol": protocol, "serviceName": "py-host"},
        traceparent=f"00-{SESSION_TRACE}-{SESSION_PARENT}-01",
        **opts,
    ) as session:
        assert (await session.submit("one")).ok
        second = await session.submit(
            "two", traceparent=f"00-{PROMPT_TRACE}-{PROMPT_PARENT}-01", tracestate="host=py"
        )
        assert second.ok
        assert await session.flush_telemetry()
    spans = receiver.spans_until(["invoke_agent robota", "invoke_agent robota", "chat claude-test", "chat claude-test"])
    prompts = [s for s in spans if s["name"] == "invoke_agent robota"]
    by_trace = {p["trace_id"]: p for p in prompts}
    assert set(by_trace) == {SESSION_TRACE, PROMPT_TRACE}, prompts
    assert by_trace[SESSION_TRACE]["parent_span_id"] == SESSION_PARENT
    assert by_trace[PROMPT_TRACE]["parent_span_id"] == PROMPT_PARENT
    assert by_trace[PROMPT_TRACE]["trace_state"] == "host=py"
    assert all(p["service_name"] == "py-host" for p in prompts)
    assert all(p["transport"] == protocol for p in spans)
    chats = [s for s in spans if s["name"] == "chat claude-test"]
    parents = {p["span_id"] for p in prompts}
    assert {c["parent_span_id"] for c in chats} == parents
    assert sorted(c["attributes"]["gen_ai.usage.input_tokens"] for c in chats) == [11, 13]
    assert all(c["attributes"]["gen_ai.operation.name"] == "chat" for c in chats)


async def test_a_malformed_traceparent_is_refused(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    provider = AnthropicProvider("claude-test", api_key="sk-test", base_url=mock_llm.base_url, max_retries=0)
    with pytest.raises(InvalidArgumentError, match="W3C"):
        InteractiveSession(provider=provider, traceparent="00-nope", **opts)
    async with InteractiveSession(provider=provider, **opts) as session:
        with pytest.raises(InvalidArgumentError, match="W3C"):
            await session.submit("hi", traceparent="garbage")
