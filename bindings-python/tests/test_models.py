"""The model catalog (``get_model_info``, ``list_models``) and ``fallback_model`` against mock-llm."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

import robota
from robota import AnthropicProvider, InteractiveSession, InvalidArgumentError, ModelInfo, ModelPrice, SessionEvent

from conftest import MockLlm


def test_a_snapshot_of_a_known_model_has_the_catalog_figures() -> None:
    info = robota.get_model_info("claude-sonnet-4-5-20250929")
    assert isinstance(info, ModelInfo)
    assert info.model == "claude-sonnet-4-5-20250929"
    assert info.known
    assert info.catalog_id == "claude-sonnet-4-5"
    assert info.provider == "anthropic"
    assert info.context_window == 200000
    assert info.max_output == 64000
    assert info.thinking
    assert isinstance(info.price, ModelPrice)
    assert info.price.input_per_mtok == 3.0
    assert info.price.output_per_mtok == 15.0
    assert info.defaults == []
    assert info.sources and all(url.startswith("https://") for url in info.sources)
    assert len(info.checked) == 7  # YYYY-MM
    with pytest.raises(AttributeError):
        info.known = False  # type: ignore[misc]


def test_a_bedrock_id_matches_the_catalog_model() -> None:
    info = robota.get_model_info("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    assert info.known
    assert info.catalog_id == "claude-sonnet-4-5"
    assert info.context_window == 200000
    assert info.price is not None and info.price.input_per_mtok == 3.0


def test_an_unknown_model_gets_the_defaults_and_no_price() -> None:
    info = robota.get_model_info("my-local-llama")
    assert not info.known
    assert info.catalog_id is None and info.provider is None
    assert info.price is None and info.max_output is None
    assert not info.thinking
    assert info.context_window > 0
    assert set(info.defaults) == {"context_window", "max_output", "price"}
    assert info.sources == []


@pytest.mark.parametrize("model", ["", "   ", "x" * 1025])
def test_an_empty_or_overlong_model_id_is_an_invalid_argument(model: str) -> None:
    with pytest.raises(InvalidArgumentError, match="model id"):
        robota.get_model_info(model)


def test_list_models_filters_by_provider() -> None:
    everything = robota.list_models()
    anthropic = robota.list_models("anthropic")
    assert anthropic and len(anthropic) < len(everything)
    assert all(info.known and info.provider == "anthropic" for info in anthropic)
    assert any(info.catalog_id == "claude-sonnet-4-5" for info in anthropic)
    assert robota.list_models("no-such-provider") == []


async def test_the_fallback_model_answers_when_the_main_model_is_overloaded(
    mock_llm: MockLlm, opts: Dict[str, Any]
) -> None:
    mock_llm.script([{"fault": {"kind": "status", "status": 529}}, {"text": "from the fallback"}])
    provider = AnthropicProvider("claude-opus-4-6", api_key="sk-test", base_url=mock_llm.base_url, max_retries=0)
    warnings: List[Dict[str, Any]] = []

    def on_session(event: SessionEvent) -> None:
        if event.event.get("type") == "warning":
            warnings.append(event.event)

    async with InteractiveSession(provider=provider, fallback_model="claude-haiku-4-5", **opts) as session:
        session.on("session", on_session)
        result = await session.submit("hello")
        assert result.ok, result
        assert result.response == "from the fallback"
    models = [request["body"]["model"] for request in mock_llm.requests()]
    assert models == ["claude-opus-4-6", "claude-haiku-4-5"]
    assert [w["source"] for w in warnings] == ["fallback_model"], warnings
    assert "claude-haiku-4-5" in warnings[0]["message"]


async def test_query_takes_a_fallback_model(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    mock_llm.script([{"fault": {"kind": "status", "status": 529}}, {"text": "from the fallback"}])
    provider = AnthropicProvider("claude-opus-4-6", api_key="sk-test", base_url=mock_llm.base_url, max_retries=0)
    query = robota.create_query(provider=provider, fallback_model="claude-haiku-4-5", **opts)
    result = await query("hello")
    assert result.response == "from the fallback"
    assert [request["body"]["model"] for request in mock_llm.requests()] == ["claude-opus-4-6", "claude-haiku-4-5"]


async def test_profile_types_are_providers_too(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    """A Gemini provider given as a profile: the session reaches mock-llm's Gemini endpoint with
    the key where the Gemini API expects it, and the catalog's window applies."""
    mock_llm.script([{"text": "from gemini"}])
    provider = robota.ProfileProvider(
        "gemini", "gemini-2.5-pro", api_key="g-key", base_url=mock_llm.base_url, max_retries=0
    )
    async with InteractiveSession(provider=provider, **opts) as session:
        result = await session.submit("hello")
        assert result.ok, result
        assert result.response == "from gemini"
        assert session.get_context_state()["max_tokens"] == 1048576
    request = mock_llm.requests()[0]
    assert request["path"] == "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    assert request["headers"]["x-goog-api-key"] == "g-key"
    # A gemma profile must name its model: the error says so when the session is created.
    with pytest.raises(InvalidArgumentError, match="model"):
        async with InteractiveSession(provider=robota.ProfileProvider("gemma"), **opts):
            pass
