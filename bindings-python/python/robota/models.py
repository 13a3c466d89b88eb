"""The model catalog: what robota knows about a model (context window, maximum output, prices,
thinking) — :func:`get_model_info` and :func:`list_models`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Mapping, Optional

from . import _native

__all__ = ["LongPromptPrice", "ModelInfo", "ModelPrice", "get_model_info", "list_models"]


@dataclass(frozen=True)
class LongPromptPrice:
    """The rates a model charges, for every token of a call, when the call's prompt (input +
    cache read + cache write tokens) is longer than ``above_tokens``. USD per million tokens."""

    above_tokens: int
    """The prompt length, in tokens, above which these rates apply."""
    input_per_mtok: float
    """Input tokens not served from a cache."""
    output_per_mtok: float
    """Output tokens (thinking included)."""
    cache_read_per_mtok: float
    """Input tokens read from the prompt cache."""
    cache_write_per_mtok: float
    """Input tokens written to the prompt cache."""

    @classmethod
    def _from_dict(cls, data: Mapping[str, Any]) -> "LongPromptPrice":
        return cls(
            above_tokens=int(data["above_tokens"]),
            input_per_mtok=float(data["input_per_mtok"]),
            output_per_mtok=float(data["output_per_mtok"]),
            cache_read_per_mtok=float(data["cache_read_per_mtok"]),
            cache_write_per_mtok=float(data["cache_write_per_mtok"]),
        )


@dataclass(frozen=True)
class ModelPrice:
    """A model's price in USD per million tokens."""

    input_per_mtok: float
    """Input tokens not served from a cache."""
    output_per_mtok: float
    """Output tokens (thinking included)."""
    cache_read_per_mtok: float
    """Input tokens read from the prompt cache."""
    cache_write_per_mtok: float
    """Input tokens written to the prompt cache (equals ``input_per_mtok`` for providers without a
    cache-write surcharge)."""
    long_prompt: Optional[LongPromptPrice] = None
    """Different rates for calls whose prompt is longer than a threshold, when the model has them."""

    @classmethod
    def _from_dict(cls, data: Mapping[str, Any]) -> "ModelPrice":
        long_prompt = data.get("long_prompt")
        return cls(
            input_per_mtok=float(data["input_per_mtok"]),
            output_per_mtok=float(data["output_per_mtok"]),
            cache_read_per_mtok=float(data["cache_read_per_mtok"]),
            cache_write_per_mtok=float(data["cache_write_per_mtok"]),
            long_prompt=LongPromptPrice._from_dict(long_prompt) if long_prompt else None,
        )


@dataclass(frozen=True)
class ModelInfo:
    """What robota knows about a model: the catalog's figures, with robota's defaults where the
    catalog has none (named in :attr:`defaults`)."""

    model: str
    """The model id as asked."""
    known: bool
    """Whether the catalog knows the model (by exact id, or id plus a snapshot suffix such as
    ``-20250929`` or Bedrock's ``-v1:0``, after routing prefixes such as ``us.anthropic.``)."""
    context_window: int
    """Context window in tokens (robota's default when unknown); context tracking and automatic
    compaction use it."""
    thinking: bool
    """Whether the model can think (``False`` when unknown)."""
    defaults: List[str]
    """The figures robota filled in with its defaults or could not give: any of
    ``"context_window"``, ``"max_output"``, ``"price"``."""
    sources: List[str]
    """The URLs the figures come from."""
    checked: str
    """When the catalog was last checked against its sources (``YYYY-MM``)."""
    catalog_id: Optional[str] = None
    """The catalog id the model matched (``claude-sonnet-4-5`` for ``claude-sonnet-4-5-20250929``)."""
    provider: Optional[str] = None
    """The provider type that serves it (``"anthropic"``, ``"openai"``, …)."""
    max_output: Optional[int] = None
    """Most output tokens per call, when known."""
    price: Optional[ModelPrice] = None
    """USD per million tokens, when known; cost tracking reports "unknown" without it."""

    @classmethod
    def _from_dict(cls, data: Mapping[str, Any]) -> "ModelInfo":
        price = data.get("price")
        max_output = data.get("max_output")
        return cls(
            model=str(data["model"]),
            known=bool(data["known"]),
            context_window=int(data["context_window"]),
            thinking=bool(data["thinking"]),
            defaults=[str(name) for name in data.get("defaults", [])],
            sources=[str(url) for url in data.get("sources", [])],
            checked=str(data.get("checked", "")),
            catalog_id=data.get("catalog_id"),
            provider=data.get("provider"),
            max_output=int(max_output) if max_output is not None else None,
            price=ModelPrice._from_dict(price) if price else None,
        )


def get_model_info(model: str) -> ModelInfo:
    """What robota knows about ``model``: context window, maximum output, prices and thinking.

    An unknown model is not an error: it answers ``known=False`` with robota's defaults (listed in
    :attr:`ModelInfo.defaults`) and no price. An empty or blank id, or one longer than 1024 bytes,
    raises :class:`robota.InvalidArgumentError`.
    """
    return ModelInfo._from_dict(_native.model_info(model))


def list_models(provider: Optional[str] = None) -> List[ModelInfo]:
    """Every model in robota's catalog, or only those of ``provider`` (a provider type such as
    ``"anthropic"``), in catalog order."""
    return [ModelInfo._from_dict(entry) for entry in _native.list_models(provider)]
