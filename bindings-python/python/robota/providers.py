"""Model providers.

Built-in: :class:`AnthropicProvider`, :class:`OpenAIProvider` (any OpenAI-compatible endpoint via
``base_url``), :class:`ScriptedProvider` (canned turns, for tests and demos) and
:class:`ReplayProvider` (answers recorded in a session log). Subclass :class:`Provider` to
implement a model in Python.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Union

from ._native import NativeStream
from .errors import InvalidArgumentError

__all__ = [
    "BuiltinProvider",
    "AnthropicProvider",
    "OpenAIProvider",
    "ProfileProvider",
    "ProfileProviderType",
    "ScriptedProvider",
    "ReplayProvider",
    "Provider",
    "ProviderResponse",
    "ToolCall",
    "StreamEmitter",
    "ProviderLike",
]


class BuiltinProvider:
    """Base of the engine's own providers; :meth:`to_config` is the provider as data."""

    def to_config(self) -> Dict[str, Any]:
        """The provider configuration dict (``{"type": ..., ...}``)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        config = self.to_config()
        config.pop("api_key", None)
        return f"{type(self).__name__}({config!r})"


class _HttpProvider(BuiltinProvider):
    """The options shared by the HTTP providers; subclasses name the provider ``type``."""

    _TYPE = ""

    def __init__(
        self,
        model: str,
        *,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        max_tokens: Optional[int] = None,
        max_retries: Optional[int] = None,
        idle_timeout_ms: Optional[int] = None,
        max_retry_wait_ms: Optional[int] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        """A provider for ``model``.

        Args:
            model: The model id (``claude-sonnet-4-6``, ``gpt-4.1``, ``llama3.2``, …).
            api_key: The API key (default: the provider's environment variable).
            base_url: The endpoint's base URL with its scheme; see the class for whether it
                includes ``/v1``. A URL without ``http://``/``https://`` is refused.
            max_tokens: Output token cap per model call.
            max_retries: Retries of a failed call (429, 5xx, 529, network) before it fails.
            idle_timeout_ms: How long a stream may stay silent before the call fails.
            max_retry_wait_ms: The retry budget: the longest ``retry-after`` waited out
                (default 60000); a longer one fails the call at once with the wait in the error.
            headers: Extra HTTP headers sent with every request.
        """
        config: Dict[str, Any] = {"type": self._TYPE, "model": model}
        for key, value in (
            ("api_key", api_key),
            ("base_url", base_url),
            ("max_tokens", max_tokens),
            ("max_retries", max_retries),
            ("idle_timeout_ms", idle_timeout_ms),
            ("max_retry_wait_ms", max_retry_wait_ms),
        ):
            if value is not None:
                config[key] = value
        if headers:
            config["headers"] = dict(headers)
        self._config = config

    def to_config(self) -> Dict[str, Any]:
        return dict(self._config)


class AnthropicProvider(_HttpProvider):
    """The Anthropic Messages API. ``api_key``/``base_url`` default to ``ANTHROPIC_API_KEY`` /
    ``ANTHROPIC_BASE_URL``.

    ``base_url`` has its scheme and does **not** include ``/v1``: the default is
    ``https://api.anthropic.com`` and requests go to ``<base_url>/v1/messages``.

    Prompt caching is on by default: ``cache_control`` breakpoints on the tool definitions, the
    system prompt and the conversation prefix, so each call pays full price only for what is new
    since the last one. ``prompt_caching=False`` sends none (as does the environment variable
    ``DISABLE_PROMPT_CACHING=1`` when this is not given); ``prompt_cache_ttl="1h"`` keeps the
    cache an hour instead of five minutes (cache writes then cost 2× the input price)."""

    _TYPE = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        prompt_caching: Optional[bool] = None,
        prompt_cache_ttl: Optional[Literal["5m", "1h"]] = None,
        **options: Any,
    ) -> None:
        """An Anthropic provider for ``model``.

        Args:
            model: The model id (``claude-sonnet-4-6``, …).
            prompt_caching: ``False`` sends no ``cache_control`` (default: on, unless
                ``DISABLE_PROMPT_CACHING=1`` is set).
            prompt_cache_ttl: ``"5m"`` (the default) or ``"1h"``: how long the cache is kept.
            **options: The options of every HTTP provider: ``api_key``, ``base_url``,
                ``max_tokens``, ``max_retries``, ``idle_timeout_ms``, ``max_retry_wait_ms``,
                ``headers`` (see :class:`OpenAIProvider` for their meaning; the same here).
        """
        super().__init__(model, **options)
        if prompt_caching is not None:
            self._config["prompt_caching"] = prompt_caching
        if prompt_cache_ttl is not None:
            self._config["prompt_cache_ttl"] = prompt_cache_ttl


class OpenAIProvider(_HttpProvider):
    """An OpenAI-compatible Chat Completions API (OpenAI, DeepSeek, Ollama, vLLM, … via
    ``base_url``). ``api_key``/``base_url`` default to ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``.

    ``base_url`` has its scheme and **does** include ``/v1`` (as the OpenAI SDKs' does): the
    default is ``https://api.openai.com/v1``, Ollama's ``http://localhost:11434/v1``, and requests
    go to ``<base_url>/chat/completions``."""

    _TYPE = "openai"


ProfileProviderType = Literal["gemini", "bedrock", "vertex", "deepseek", "qwen", "gemma"]
"""The provider types given as a settings profile (see :class:`ProfileProvider`)."""


class ProfileProvider(BuiltinProvider):
    """Any provider type robota builds from a settings profile — ``gemini`` (Gemini API),
    ``bedrock`` / ``vertex`` (Anthropic on Amazon Bedrock / Google Vertex AI), ``deepseek``,
    ``qwen``, ``gemma`` — built exactly as a ``providers.<name>`` profile of that type would be
    (keys, endpoints and defaults per the README's "Providers" table).

    ``options`` are the profile's provider-owned options: Bedrock's ``region`` / ``profile``,
    Vertex's ``project`` / ``region``, DeepSeek's ``thinking`` / ``reasoningEffort``, Qwen's
    ``webSearch``, …"""

    def __init__(
        self,
        type: ProfileProviderType,
        model: Optional[str] = None,
        *,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        max_tokens: Optional[int] = None,
        max_retries: Optional[int] = None,
        idle_timeout_ms: Optional[int] = None,
        max_retry_wait_ms: Optional[int] = None,
        options: Optional[Mapping[str, Any]] = None,
    ) -> None:
        """A provider of profile type ``type``.

        Args:
            type: The profile type.
            model: The model id (default: the type's default; ``gemma`` needs one).
            api_key: The key (Bedrock: a Bedrock API key; Vertex: an access token); default:
                the type's environment variables.
            base_url: The endpoint.
            max_tokens: Output token cap per model call.
            max_retries: Retries of a failed call before it fails.
            idle_timeout_ms: How long a stream may stay silent before the call fails.
            max_retry_wait_ms: The longest ``retry-after`` waited out before a retry.
            options: The profile's provider-owned options.
        """
        if not isinstance(type, str) or not type:
            raise InvalidArgumentError("ProfileProvider: `type` must name a provider type")
        config: Dict[str, Any] = {"type": type}
        for key, value in (
            ("model", model),
            ("api_key", api_key),
            ("base_url", base_url),
            ("max_tokens", max_tokens),
            ("max_retries", max_retries),
            ("idle_timeout_ms", idle_timeout_ms),
            ("max_retry_wait_ms", max_retry_wait_ms),
        ):
            if value is not None:
                config[key] = value
        if options is not None:
            config["options"] = dict(options)
        self._config = config

    def to_config(self) -> Dict[str, Any]:
        return dict(self._config)


class ScriptedProvider(BuiltinProvider):
    """Plays canned turns, one per model call (no network). Each turn is a dict:
    ``{"text": "Hi" | ["Hi", " there"], "tool_calls": [{"id", "name", "input"}], "usage": {...},
    "delay_ms_per_chunk": 5, "error": {"kind", "message"}, ...}`` or just a string (the text)."""

    def __init__(
        self, turns: Sequence[Union[str, Mapping[str, Any]]], *, context_window: Optional[int] = None
    ) -> None:
        if isinstance(turns, (str, bytes)) or not isinstance(turns, Sequence):
            raise InvalidArgumentError(f"ScriptedProvider: `turns` must be a list of turns, not {type(turns).__name__}")
        #: The turns, each as a dict (a string turn becomes ``{"text": ...}``).
        self.turns: List[Dict[str, Any]] = []
        for index, turn in enumerate(turns):
            if isinstance(turn, str):
                self.turns.append({"text": turn})
            elif isinstance(turn, Mapping):
                self.turns.append(dict(turn))
            else:
                raise InvalidArgumentError(
                    f"ScriptedProvider: `turns[{index}]` must be a dict or a string, not {type(turn).__name__}"
                )
        #: The context window to report, in tokens (``None``: the engine's default).
        self.context_window = context_window

    def to_config(self) -> Dict[str, Any]:
        config: Dict[str, Any] = {"type": "scripted", "turns": self.turns}
        if self.context_window is not None:
            config["context_window"] = self.context_window
        return config


class ReplayProvider(BuiltinProvider):
    """Replays the model answers recorded in a session log (``.robota/logs/<id>.jsonl``)."""

    def __init__(self, log_path: Union[str, "os.PathLike[str]"]) -> None:
        #: The session log replayed.
        self.log_path = os.fspath(log_path)

    def to_config(self) -> Dict[str, Any]:
        return {"type": "replay", "log_path": self.log_path}


@dataclass
class ToolCall:
    """A tool call a Python provider answers with."""

    #: The call id (any unique string).
    id: str
    #: The tool name.
    name: str
    #: The arguments.
    input: Dict[str, Any] = field(default_factory=dict)


@dataclass
class ProviderResponse:
    """What a Python provider's :meth:`Provider.stream` returns (a plain ``str`` also works)."""

    #: The answer text, when nothing was streamed through ``emit.text`` (otherwise the streamed
    #: text is the answer).
    text: str = ""
    #: Tool calls the model makes.
    tool_calls: List[ToolCall] = field(default_factory=list)
    #: ``end_turn``, ``tool_use``, ``max_tokens``, … (default: ``tool_use`` when there are tool
    #: calls, else ``end_turn``).
    stop_reason: Optional[str] = None
    #: Token counts (``input_tokens``, ``output_tokens``, …).
    usage: Dict[str, int] = field(default_factory=dict)


class StreamEmitter:
    """The ``emit`` a :meth:`Provider.stream` gets: streams answer and reasoning text into the
    engine while the model call runs."""

    __slots__ = ("_native", "streamed")

    def __init__(self, native: NativeStream) -> None:
        self._native = native
        #: The text streamed so far, piece by piece.
        self.streamed: List[str] = []

    def text(self, text: str) -> None:
        """Streams a piece of answer text."""
        self.streamed.append(text)
        self._native.send({"type": "text_delta", "text": text})

    def thinking(self, text: str) -> None:
        """Streams a piece of reasoning."""
        self._native.send({"type": "thinking_delta", "text": text})

    def tool_call_start(self, index: int, id: str, name: str) -> None:
        """Does nothing: the engine announces the tool calls of the returned
        :class:`ProviderResponse` itself (kept so older providers keep working)."""

    def tool_call_delta(self, index: int, partial_json: str) -> None:
        """Does nothing (see :meth:`tool_call_start`)."""


class Provider:
    """Base class for a model implemented in Python.

    Override :meth:`stream`: it gets the request (``{"system", "messages", "tools", ...}`` as
    dicts) and a :class:`StreamEmitter` ``emit`` whose ``text(str)`` / ``thinking(str)`` stream
    deltas, and
    returns the answer — a ``str``, a :class:`ProviderResponse` or ``None`` (the streamed text).
    Raising an exception fails the model call with that message.
    """

    #: Provider name reported in events and logs.
    name: str = "python"
    #: Model name.
    model: str = "python"
    #: The model's context window in tokens (``None``: the engine's default).
    context_window: Optional[int] = None

    async def stream(self, request: Dict[str, Any], emit: Any) -> Union[str, ProviderResponse, None]:
        """Answers one model call."""
        raise NotImplementedError("Provider subclasses must implement `async def stream(self, request, emit)`")

    def _robota_info(self) -> Dict[str, Any]:
        # robota::api::host::HostProviderInfo
        info: Dict[str, Any] = {"name": self.name, "model": self.model}
        if self.context_window is not None:
            info["context_window"] = self.context_window
        return info

    async def _robota_stream(self, request: Dict[str, Any], native: NativeStream) -> Dict[str, Any]:
        # The answer is robota::api::host::HostProviderAnswer: `text` is appended to the
        # streamed text, so it is only sent when nothing was streamed.
        emit = StreamEmitter(native)
        result = await self.stream(request, emit)
        if result is None:
            result = ProviderResponse()
        if isinstance(result, str):
            result = ProviderResponse(text=result)
        if not isinstance(result, ProviderResponse):
            raise TypeError(
                f"{type(self).__name__}.stream must return str, ProviderResponse or None, "
                f"not {type(result).__name__}"
            )
        answer: Dict[str, Any] = {
            "tool_calls": [{"id": c.id, "name": c.name, "input": c.input} for c in result.tool_calls],
        }
        if result.text and not emit.streamed:
            answer["text"] = result.text
        if result.stop_reason:
            answer["stop_reason"] = result.stop_reason
        if result.usage:
            answer["usage"] = dict(result.usage)
        return answer


#: What a ``provider=`` argument accepts.
ProviderLike = Union[BuiltinProvider, Provider, Mapping[str, Any]]


def provider_to_native(provider: ProviderLike) -> Any:
    """The value the native module takes for a provider."""
    if isinstance(provider, BuiltinProvider):
        return provider.to_config()
    if isinstance(provider, Provider):
        return provider
    if isinstance(provider, Mapping):
        return dict(provider)
    raise TypeError(
        "provider must be AnthropicProvider, OpenAIProvider, ScriptedProvider, ReplayProvider, "
        f"a Provider subclass instance or a config dict, not {type(provider).__name__}"
    )
