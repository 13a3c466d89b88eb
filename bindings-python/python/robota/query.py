"""One-call API: ``query = create_query(provider=...); result = await query("...")``."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Literal, Mapping, Optional, Sequence, Type, TypeVar, Union, overload

from . import _native
from ._util import fspath
from .hooks import HooksLike, hooks_to_native
from .permissions import PermissionHandler, PermissionMode, permission_adapter
from .providers import ProviderLike, provider_to_native
from .structured import OutputType, output_format as _output_format, parse_structured_output
from .tools import Tool

__all__ = ["Query", "QueryResult", "create_query", "run_query"]

PathLike = Union[str, "os.PathLike[str]"]
T = TypeVar("T")


@dataclass(frozen=True)
class QueryResult:
    """What one query produced."""

    #: The final answer text.
    response: str
    #: The session's chat messages after the query.
    messages: List[Dict[str, Any]]
    #: Tokens used by this query (``input_tokens``, ``output_tokens``, …).
    usage: Dict[str, Any]
    #: Cost in USD (``None`` when the model has no known price).
    cost_usd: Optional[float]
    #: Model calls this query made (every request, a forced summary included).
    num_turns: int
    #: Wall time in milliseconds.
    duration_ms: int
    #: The session id (the same for every query of one :class:`Query`).
    session_id: str
    #: Why the query ended: ``"completed"`` (the model answered), ``"refused"`` (the model
    #: refused; see :attr:`refusal`), ``"truncated"`` (the answer was cut off at the output token
    #: limit), ``"interrupted"`` (aborted), ``"max_turns"`` (the round cap; the response is the
    #: model's summary), ``"unknown_tools"`` (the model kept calling tools that do not exist) or
    #: ``"context_limit"`` (the conversation no longer fits). A failed model call raises
    #: :class:`robota.ProviderError`.
    stop_reason: str
    #: How the query ended, in the vocabulary every binding shares: ``complete``, ``refused``,
    #: ``truncated`` or ``interrupted`` (a failed model call raises
    #: :class:`robota.ProviderError` instead).
    status: Literal["complete", "refused", "truncated", "interrupted"] = "complete"
    #: For ``refused``: ``text``, and ``category`` / ``explanation`` when the provider gave them.
    refusal: Optional[Dict[str, Any]] = None
    #: With an ``output_format``: the answer parsed and validated against its schema, as plain
    #: JSON (``None`` without one). :meth:`Query.structured` returns it typed. An answer that
    #: never matched raises :class:`robota.StructuredOutputError` instead.
    structured_output: Any = None

    @staticmethod
    def _from_dict(d: Mapping[str, Any]) -> "QueryResult":
        return QueryResult(
            response=str(d.get("response", "")),
            messages=list(d.get("messages") or []),
            usage=dict(d.get("usage") or {}),
            cost_usd=d.get("cost_usd"),
            num_turns=int(d.get("num_turns", 0)),
            duration_ms=int(d.get("duration_ms", 0)),
            session_id=str(d.get("session_id", "")),
            stop_reason=str(d.get("stop_reason", "")),
            status=_query_status(d.get("status")),
            refusal=dict(d["refusal"]) if isinstance(d.get("refusal"), dict) else None,
            structured_output=d.get("structured_output"),
        )


def _query_status(value: Any) -> Literal["complete", "refused", "truncated", "interrupted"]:
    if value == "refused":
        return "refused"
    if value == "truncated":
        return "truncated"
    if value == "interrupted":
        return "interrupted"
    return "complete"


class Query:
    """A reusable query function over one session: every call runs one full agent turn on the
    same conversation. Made by :func:`create_query`."""

    def __init__(self, native: Any) -> None:
        self._native = native

    async def __call__(self, prompt: str, *, output_format: Optional[OutputType] = None) -> QueryResult:
        """Runs one turn. Raises :class:`robota.ProviderError` when the model call fails;
        cancelling the awaiting task aborts the run. ``output_format`` (a pydantic model class,
        a dataclass or a JSON Schema dict; see :mod:`robota.structured`) shapes this turn's
        answer instead of the query's own: the result's ``structured_output`` holds it, and an
        answer that never matches raises :class:`robota.StructuredOutputError`."""
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, not {type(prompt).__name__}")
        if output_format is None:
            return QueryResult._from_dict(await self._native.query(prompt))
        return QueryResult._from_dict(await self._native.query(prompt, _output_format(output_format)))

    @overload
    async def structured(self, prompt: str, output_type: Type[T]) -> T: ...

    @overload
    async def structured(self, prompt: str, output_type: Mapping[str, Any]) -> Any: ...

    async def structured(self, prompt: str, output_type: OutputType) -> Any:
        """Runs one turn whose answer must match ``output_type`` and returns it typed: an
        instance of the pydantic model or dataclass, or plain JSON for a JSON Schema dict::

            @dataclass
            class City:
                name: str
                population: int

            city = await query.structured("Largest city of Portugal?", City)

        Raises :class:`robota.StructuredOutputError` when the answer never matched (after
        ``max_structured_output_retries`` follow-ups that told the model what was wrong)."""
        result = await self(prompt, output_format=output_type)
        if isinstance(output_type, type):
            return parse_structured_output(result.structured_output, output_type)
        return result.structured_output

    def abort(self) -> None:
        """Aborts the running query."""
        self._native.abort()

    @property
    def session_id(self) -> str:
        """The session id."""
        session_id: str = self._native.get_session_id()
        return session_id


def create_query(
    *,
    provider: ProviderLike,
    cwd: Optional[PathLike] = None,
    permission_mode: Optional[PermissionMode] = None,
    max_turns: Optional[int] = None,
    allowed_tools: Sequence[str] = (),
    disallowed_tools: Sequence[str] = (),
    system_prompt: Optional[str] = None,
    append_system_prompt: Optional[str] = None,
    on_text_delta: Optional[Callable[[str], Any]] = None,
    tools: Sequence[Tool] = (),
    permission_handler: Optional[PermissionHandler] = None,
    hooks: Optional[HooksLike] = None,
    max_budget_usd: Optional[float] = None,
    fallback_model: Optional[str] = None,
    persistence: Union[Literal["none", "project"], Mapping[str, Any], None] = None,
    home: Optional[PathLike] = None,
    settings: Optional[Mapping[str, Any]] = None,
    env: Optional[Mapping[str, str]] = None,
    builtin_tools: Optional[bool] = None,
    load_project_context: Optional[bool] = None,
    session_id: Optional[str] = None,
    output_format: Optional[OutputType] = None,
    max_structured_output_retries: Optional[int] = None,
) -> Query:
    """Builds a :class:`Query`: ``await create_query(provider=...)("prompt")`` runs one full
    agent turn; later calls continue the same conversation.

    Args:
        provider: The model: :class:`robota.AnthropicProvider`, :class:`robota.OpenAIProvider`,
            :class:`robota.ScriptedProvider`, :class:`robota.ReplayProvider` or a
            :class:`robota.Provider` subclass.
        cwd: The project directory tools work in (default: the current directory).
        permission_mode: ``"default"``, ``"acceptEdits"``, ``"plan"``, ``"dontAsk"`` or
            ``"bypassPermissions"`` (see :data:`robota.PermissionMode`); default: the settings'
            ``permissions.defaultMode``, else ``"default"``.
        max_turns: Most model/tool rounds per query (``0`` or ``None``: no cap).
        allowed_tools: Permission rules allowed without asking (``"Read"``, ``"Bash(git *)"``),
            for the whole session.
        disallowed_tools: Permission rules always denied.
        system_prompt: Replaces the system prompt assembled from the project.
        append_system_prompt: Text appended to the system prompt.
        on_text_delta: ``on_text_delta(text)``, called on the event loop for each streamed
            chunk of the answer.
        tools: Your tools, functions decorated with :func:`robota.tool`.
        permission_handler: Answers the permission prompts of calls no rule allows (sync or
            async); without one they are denied.
        hooks: Hook callbacks (see :mod:`robota.hooks`).
        max_budget_usd: Refuse further queries once the session has spent this many USD.
        fallback_model: A second model of the same provider, answering while the main model is
            overloaded (HTTP 529 or 503 after the provider's retries); see
            :class:`robota.InteractiveSession`.
        persistence: ``"none"`` (default), ``"project"`` or ``{"store": {...}}``.
        home: The home directory whose user settings are read (default: none are read).
        settings: Settings from code, a settings.json object applied above every file.
        env: Variables for ``$ENV:NAME`` references in settings.
        builtin_tools: ``False`` leaves out the built-in file, shell and web tools.
        load_project_context: ``False`` skips AGENTS.md/CLAUDE.md in the system prompt.
        session_id: The session id (default: a fresh UUID).
        output_format: Every answer must match this schema: a pydantic model class, a
            dataclass or a JSON Schema dict (see :mod:`robota.structured`); results carry the
            value as ``structured_output``. :meth:`Query.structured` sets one per call.
        max_structured_output_retries: Follow-ups an answer that does not match gets before
            the call raises :class:`robota.StructuredOutputError` (default 5).

    Invalid options raise :class:`robota.InvalidArgumentError` or
    :class:`robota.InvalidJsonError` here, naming the option.
    """
    config = {
        k: v
        for k, v in dict(
            cwd=fspath(cwd),
            permission_mode=permission_mode,
            max_turns=max_turns,
            system_prompt=system_prompt,
            append_system_prompt=append_system_prompt,
            max_budget_usd=max_budget_usd,
            fallback_model=fallback_model,
            persistence=persistence,
            home=fspath(home),
            settings=dict(settings) if settings is not None else None,
            env=dict(env) if env is not None else None,
            builtin_tools=builtin_tools,
            load_project_context=load_project_context,
            session_id=session_id,
            output_format=_output_format(output_format) if output_format is not None else None,
            max_structured_output_retries=max_structured_output_retries,
        ).items()
        if v is not None
    }
    for t in tools:
        if not isinstance(t, Tool):
            raise TypeError(f"tools must be decorated with @robota.tool; got {t!r}")
    native = _native.NativeQuery(
        config,
        provider_to_native(provider),
        list(tools),
        permission_adapter(permission_handler) if permission_handler is not None else None,
        hooks_to_native(hooks),
        list(allowed_tools),
        list(disallowed_tools),
        on_text_delta,
    )
    return Query(native)


def run_query(prompt: str, **options: Any) -> QueryResult:
    """Synchronous one-shot: ``run_query("...", provider=...)`` builds a query with
    ``options`` (see :func:`create_query`), runs it in a fresh event loop and returns the
    result. Not for use inside a running event loop (``await create_query(...)(prompt)``
    there)."""

    async def main() -> QueryResult:
        return await create_query(**options)(prompt)

    return asyncio.run(main())
