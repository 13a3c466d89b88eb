"""Anthropic prompt caching from Python: on by default (breakpoints on the tool definitions and
the conversation's end), off with ``prompt_caching=False``, one-hour TTL on request;
cache reads come back in the usage."""

from __future__ import annotations

import json
from typing import Any, Dict

import robota
from robota import InteractiveSession

from conftest import MockLlm


async def test_prompt_caching_on_off_and_ttl(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    cache = {"chars_per_token": 4, "min_tokens": 0}
    for setting, marker in (
        ({}, {"type": "ephemeral"}),
        ({"prompt_cache_ttl": "1h"}, {"type": "ephemeral", "ttl": "1h"}),
        ({"prompt_caching": False}, None),
    ):
        mock_llm.script([{"text": "one"}, {"text": "two"}], prompt_cache=cache)
        provider = robota.AnthropicProvider(
            "claude-test", api_key="sk", base_url=mock_llm.base_url, max_retries=0, **setting
        )
        async with InteractiveSession(provider=provider, **opts) as session:
            await session.submit("first")
            second = await session.submit("second")
        sent = [request["body"] for request in mock_llm.requests()]
        assert len(sent) == 2
        if marker is None:
            assert "cache_control" not in json.dumps(sent), setting
            assert second.outcome is not None
            assert second.outcome["usage"].get("cache_read_input_tokens", 0) == 0
            continue
        for body in sent:
            assert body["tools"][-1]["cache_control"] == marker, setting
            assert body["messages"][-1]["content"][-1]["cache_control"] == marker, setting
        assert second.outcome is not None
        assert second.outcome["usage"]["cache_read_input_tokens"] > 0, setting
