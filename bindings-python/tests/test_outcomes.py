"""How a prompt ends, against mock-llm over loopback: a refusal, a cut-off answer and a failed
model call each end the prompt with their own status (never ``complete``), with the provider's
explanation or the error's kind, HTTP status and retry advice."""

from __future__ import annotations

from typing import Any, Dict, List

import robota
from robota import InteractiveSession, create_query
from robota.events import ErrorEvent, RefusedEvent, TruncatedEvent

from conftest import MockLlm


def anthropic(mock_llm: MockLlm) -> robota.AnthropicProvider:
    return robota.AnthropicProvider("claude-test", api_key="sk", base_url=mock_llm.base_url, max_retries=0)


async def test_a_refusal_is_refused_with_the_providers_explanation(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    details = {"type": "refusal", "category": "cyber", "explanation": "Working malware."}
    mock_llm.script([{"refusal": ["I can't ", "help with that."], "stop_details": details}])
    seen: List[Any] = []
    async with InteractiveSession(provider=anthropic(mock_llm), **opts) as session:
        session.on("refused", seen.append)
        result = await session.submit("write malware")
        assert result.status == "refused"
        assert not result.ok
        assert result.stop_reason == "refused"
        assert result.response == "I can't help with that."
        assert result.refusal == {
            "text": "I can't help with that.",
            "category": "cyber",
            "explanation": "Working malware.",
        }
        assert isinstance(result.event, RefusedEvent)
        assert result.event.refusal["category"] == "cyber"
        assert len(seen) == 1 and isinstance(seen[0], RefusedEvent)
        assert len(mock_llm.requests()) == 1, "a refusal is never re-asked"


async def test_a_cut_off_answer_is_truncated(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    mock_llm.script([{"text": ["Half of ", "it"], "stop_reason": "max_tokens"}, {"text": " and the rest."}])
    async with InteractiveSession(provider=anthropic(mock_llm), **opts) as session:
        result = await session.submit("write a lot")
        assert result.status == "truncated"
        assert result.response == "Half of it"
        assert isinstance(result.event, TruncatedEvent)
        # The host chooses to continue: the model sees the cut-off answer and is asked to go on.
        after = await session.continue_answer()
        assert after.status == "complete" and after.response == " and the rest."
        sent = str(mock_llm.requests()[1]["body"]["messages"])
        assert "Half of it" in sent and "cut off" in sent


async def test_a_failed_model_call_is_an_error_with_kind_status_and_retry_advice(
    mock_llm: MockLlm, opts: Dict[str, Any]
) -> None:
    mock_llm.script([{"fault": {"kind": "status", "status": 401, "message": "invalid x-api-key"}}])
    async with InteractiveSession(provider=anthropic(mock_llm), **opts) as session:
        result = await session.submit("hi")
        assert result.status == "error"
        assert result.error is not None and "invalid x-api-key" in result.error
        assert result.error_details is not None
        assert result.error_details["kind"] == "auth"
        assert result.error_details["status"] == 401
        assert result.error_details["provider"] == "anthropic"
        assert not result.retryable
        assert isinstance(result.event, ErrorEvent)
        assert result.event.error["kind"] == "auth"

        mock_llm.script([{"fault": {"kind": "status", "status": 429, "retry_after": "7"}}])
        result = await session.submit("again")
        assert result.status == "error"
        assert result.error_details is not None
        assert result.error_details["kind"] == "rate_limit"
        assert result.error_details["retry_after_ms"] == 7000
        assert result.retryable


async def test_query_results_carry_the_status(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    mock_llm.script([{"refusal": "No.", "stop_details": {"type": "refusal", "explanation": "Policy."}}])
    query = create_query(provider=anthropic(mock_llm), **opts)
    result = await query("do harm")
    assert result.status == "refused"
    assert result.stop_reason == "refused"
    assert result.refusal is not None and result.refusal["explanation"] == "Policy."
    mock_llm.script([{"text": "cut", "stop_reason": "max_tokens"}])
    result = await query("long")
    assert (result.status, result.response) == ("truncated", "cut")
