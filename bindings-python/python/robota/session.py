"""The interactive session: prompts, events, commands and state."""

from __future__ import annotations

import asyncio
import difflib
import inspect
import os
from dataclasses import dataclass
from types import TracebackType
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Dict,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Type,
    TypeVar,
    Union,
    overload,
)

from . import _native
from ._util import fspath, report_callback_error
from .background import BackgroundTask, BackgroundTaskLogPage, SubagentReport
from .commands import CommandModule, CommandResult
from .events import (
    EVENT_TYPES,
    BackgroundTaskEvent,
    CompactionEvent,
    CompleteEvent,
    ContextUpdateEvent,
    ErrorEvent,
    Event,
    InterruptedEvent,
    PermissionRequestEvent,
    RefusedEvent,
    ServerToolResultEvent,
    ServerToolUseEvent,
    SessionEvent,
    SessionRecoveredEvent,
    SkillActivationEvent,
    TextDeltaEvent,
    ThinkingEvent,
    TodoUpdateEvent,
    McpServerStatusEvent,
    ToolEndEvent,
    ToolStartEvent,
    ToolState,
    TruncatedEvent,
    event_from_dict,
)
from .hooks import HooksLike, hooks_to_native
from .permissions import PermissionHandler, PermissionMode, permission_adapter
from .providers import ProviderLike, provider_to_native
from .sandbox import SandboxStatus
from .stores import SessionStore
from .structured import OutputType, output_format as _output_format, parse_structured_output
from .tools import SdkMcpServer, Tool

__all__ = ["InteractiveSession", "TurnResult", "EventStream", "EventListener", "EventType", "ConfigWarning"]

#: An event listener: sync or async, gets a typed event.
EventListener = Callable[[Any], Any]

#: The names :meth:`InteractiveSession.on` accepts: an event ``type``, or ``"*"`` for every event.
EventType = Literal[
    "text_delta",
    "thinking",
    "server_tool_use",
    "server_tool_result",
    "tool_start",
    "tool_end",
    "permission_request",
    "context_update",
    "compaction",
    "complete",
    "error",
    "interrupted",
    "skill_activation",
    "background_task_event",
    "session_recovered",
    "todo_update",
    "mcp_server_status",
    "session",
    "*",
]

PathLike = Union[str, "os.PathLike[str]"]
T = TypeVar("T")


@dataclass(frozen=True)
class TurnResult:
    """How a submitted prompt ended (what ``await session.submit(...)`` returns)."""

    #: How the prompt ended, in the vocabulary every binding shares: ``complete`` (the model
    #: answered), ``refused`` (the model refused; see :attr:`refusal`), ``truncated`` (the answer
    #: was cut off at the output token limit; a follow-up prompt lets the model go on),
    #: ``error`` (a model call failed — auth, network, retries exhausted — or the prompt could
    #: not run; see ``error`` and ``error_details``), ``interrupted`` (aborted) or ``cancelled``
    #: (it was queued and dropped by abort/cancel_queue before it ran).
    status: Literal["complete", "refused", "truncated", "error", "interrupted", "cancelled"]
    #: True when the prompt waited for another one to finish first.
    queued: bool
    #: The final answer text (what streamed until the abort, for ``interrupted``).
    response: str
    #: The error message, for ``error``.
    error: Optional[str]
    #: For ``error``: ``kind`` (``auth``, ``rate_limit``, ``overloaded``, ``context_length``,
    #: ``network``, ``invalid_request``, ``provider``, ``prompt_rejected``, …), ``message``,
    #: ``provider``, ``status`` (the HTTP status), ``retryable`` (whether sending the prompt
    #: again may help) and ``retry_after_ms`` (the wait the provider asked for), when known.
    error_details: Optional[Dict[str, Any]]
    #: The run's outcome (``usage``, ``stop_reason``, ``tools_executed``, ``rounds``, …) when
    #: there is one.
    outcome: Optional[Dict[str, Any]]
    #: The event that ended the prompt (``None`` for ``cancelled``), as subscribers got it,
    #: ``seq`` included; ``on()`` listeners have had every event up to it when ``submit``
    #: returns.
    event: Optional[Event]

    @property
    def ok(self) -> bool:
        """True when the prompt completed."""
        return self.status == "complete"

    @property
    def refusal(self) -> Optional[Dict[str, Any]]:
        """For ``refused``: ``text``, and ``category`` / ``explanation`` when the provider gave
        them."""
        refusal = (self.outcome or {}).get("refusal")
        return dict(refusal) if isinstance(refusal, dict) else None

    @property
    def history(self) -> List[Dict[str, Any]]:
        """The history entries this prompt added (its user message, answers, tool results and
        event entries such as ``tool-start``, ``tool-end``, ``tool-summary``, ``usage-summary``,
        ``error``); empty for ``cancelled``."""
        return [dict(e) for e in self._report("history") or []]

    @property
    def tool_summaries(self) -> List[ToolState]:
        """The prompt's tool calls as they ended (``complete`` and ``interrupted``)."""
        return [ToolState.from_dict(t) for t in self._report("tool_summaries") or []]

    @property
    def context_state(self) -> Optional[Dict[str, Any]]:
        """How full the context window is after the prompt (``complete`` and ``interrupted``)."""
        state = self._report("context_state")
        return dict(state) if isinstance(state, dict) else None

    @property
    def usage(self) -> Optional[Dict[str, Any]]:
        """The prompt's usage snapshot (``total_tokens``, ``prompt_tokens``, ``completion_tokens``,
        ``context_used_percentage``, ``cost_status``, …) when the provider reported any."""
        usage = self._report("usage")
        return dict(usage) if isinstance(usage, dict) else None

    def _report(self, key: str) -> Any:
        return None if self.event is None else self.event.to_dict().get(key)

    @property
    def retryable(self) -> bool:
        """True when the prompt failed in a way that sending it again may fix."""
        return bool((self.error_details or {}).get("retryable", False))

    @property
    def structured_output(self) -> Any:
        """With an ``output_format``: the answer parsed and validated against its schema, as
        plain JSON (``None`` without one, or when it never matched: then ``status`` is
        ``error`` and ``outcome["structured_output_errors"]`` lists the last problems)."""
        return (self.outcome or {}).get("structured_output")

    def parse(self, output_type: Type[T]) -> T:
        """:attr:`structured_output` as an instance of ``output_type`` (the pydantic model or
        dataclass given as ``output_format``). Raises :class:`robota.StructuredOutputError` when
        the prompt has no structured output (it failed, or had no ``output_format``)."""
        if self.structured_output is None:
            raise _native.StructuredOutputError(
                self.error or f"the prompt ended {self.status} without a structured output"
            )
        return parse_structured_output(self.structured_output, output_type)

    @property
    def stop_reason(self) -> Optional[str]:
        """Why the run ended: ``"completed"`` (the model answered), ``"interrupted"`` (aborted),
        ``"max_turns"`` (the round cap; the response is the model's summary), ``"unknown_tools"``
        (the model kept calling tools that do not exist), ``"context_limit"`` (the conversation
        no longer fits) or ``"error"`` (a model call failed); ``None`` when there is no outcome."""
        return None if self.outcome is None else self.outcome.get("stop_reason")

    @staticmethod
    def _from_native(value: Dict[str, Any]) -> "TurnResult":
        queued = value.get("status") == "queued"
        raw = value.get("event") or {}
        kind: Literal["complete", "refused", "truncated", "error", "interrupted", "cancelled"]
        tag = raw.get("type")
        if tag == "complete":
            kind = "complete"
        elif tag == "refused":
            kind = "refused"
        elif tag == "truncated":
            kind = "truncated"
        elif tag == "interrupted":
            kind = "interrupted"
        elif tag == "error":
            kind = "error"
        else:
            return TurnResult("cancelled", queued, "", None, None, None, None)
        event = event_from_dict(raw)
        outcome = raw.get("outcome")
        response = str((outcome or {}).get("response", ""))
        error = raw.get("message") if kind == "error" else None
        details = raw.get("error") if kind == "error" else None
        return TurnResult(
            kind, queued, response, error, dict(details) if isinstance(details, dict) else None, outcome, event
        )


@dataclass(frozen=True)
class ConfigWarning:
    """A configuration problem the session worked around when it opened (what
    :meth:`InteractiveSession.get_warnings` returns): a settings entry it skipped or made ask,
    an agent definition file it could not use, a tool an agent lists that it does not have."""

    #: The file concerned (a settings file, an agent definition), when there is one.
    file: Optional[str]
    #: The JSON path of the entry (``permissions.allow[3]``; ``tools`` for an agent's tool
    #: list), empty when it is about the whole file.
    json_path: str
    #: What kind of problem: ``permission_rule``, ``unknown_key``, ``hook_config``,
    #: ``agent_definition``, …
    kind: str
    #: A sentence for the user: the problem and what robota did about it.
    message: str

    @staticmethod
    def _from_dict(data: Dict[str, Any]) -> "ConfigWarning":
        file = data.get("file")
        return ConfigWarning(
            None if file is None else str(file),
            str(data.get("json_path", "")),
            str(data.get("kind", "")),
            str(data.get("message", "")),
        )


class EventStream:
    """``async for event in session.events()``: every event from the moment it was created, in
    order. Ends when the session shuts down (after the events already queued) or on
    :meth:`close`. Also an async context manager that closes it."""

    def __init__(self, session: "InteractiveSession", native: _native.NativeEvents) -> None:
        self._session = session
        self._native = native
        self._buffer: List[Dict[str, Any]] = []
        self._index = 0
        self._closed = False

    def __aiter__(self) -> "EventStream":
        return self

    async def __anext__(self) -> Event:
        while True:
            if self._index < len(self._buffer):
                raw = self._buffer[self._index]
                self._index += 1
                return event_from_dict(raw)
            if self._closed:
                raise StopAsyncIteration
            self._buffer, self._index = [], 0
            if self._session._shut_down:
                self._buffer = self._native.drain(4096)
                if not self._buffer:
                    self.close()
                continue
            batch = await self._native.next_batch(1024, 0.25)
            if batch:
                self._buffer = batch

    def drain(self) -> List[Event]:
        """The events queued right now (including any not yet returned by iteration), without
        waiting."""
        pending = self._buffer[self._index :]
        self._buffer, self._index = [], 0
        if not self._closed:
            pending = pending + list(self._native.drain(1 << 20))
        return [event_from_dict(raw) for raw in pending]

    def close(self) -> None:
        """Stops the stream; events not yet read are discarded."""
        if not self._closed:
            self._closed = True
            self._native.close()

    async def aclose(self) -> None:
        """Same as :meth:`close`."""
        self.close()

    async def __aenter__(self) -> "EventStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


class _Pump:
    """Delivers events to ``on()`` listeners: one task on the session's event loop."""

    def __init__(self, session: "InteractiveSession") -> None:
        self.session = session
        self.native = session._native.subscribe()
        self.task: Optional[asyncio.Task[None]] = None
        # Events emitted before the subscription never arrive: count them as delivered.
        self.delivered_seq = self.native.subscribed_after
        self.waiters: List[tuple[int, asyncio.Future[None]]] = []

    def ensure_started(self) -> None:
        if self.task is not None and not self.task.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # started by the first awaited call
        self.task = loop.create_task(self._run(), name="robota-event-listeners")

    async def _run(self) -> None:
        native = self.native
        session = self.session
        while True:
            batch: Optional[List[Dict[str, Any]]]
            if session._shut_down:
                batch = native.drain(4096)
                if not batch:
                    break
            else:
                batch = await native.next_batch(4096, 0.25)
                if not batch:
                    continue
            dispatch = session._dispatch
            for raw in batch:
                pending = dispatch(raw)
                if pending is not None:
                    await session._await_listener(pending, raw)
            self.delivered_seq = batch[-1].get("seq", self.delivered_seq)
            self._wake()
        self.delivered_seq = 1 << 62
        self._wake()

    def _wake(self) -> None:
        keep = []
        for seq, fut in self.waiters:
            if self.delivered_seq >= seq:
                if not fut.done():
                    fut.set_result(None)
            else:
                keep.append((seq, fut))
        self.waiters = keep

    async def wait_delivered(self, seq: int) -> None:
        if self.task is None or self.task.done() or self.delivered_seq >= seq:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.append((seq, fut))
        await fut


class InteractiveSession:
    """An agent session: submit prompts, follow events, run commands, read state.

    Create it with a provider and options, then ``await session.submit("...")``. Use it as
    ``async with InteractiveSession(...) as session:`` to shut it down at the end. Host
    extensions: ``tools=[...]`` (functions decorated with :func:`robota.tool`),
    ``permission_handler=`` (sync or async), ``hooks=``, ``command_modules=[...]``.

    Callbacks (tools, permission handler, hooks, commands, Python providers, listeners) run on
    the asyncio event loop the session is used from (sync tools in a worker thread).

    Invalid options raise :class:`robota.InvalidArgumentError` or
    :class:`robota.InvalidJsonError` here, naming the option.
    """

    def __init__(
        self,
        *,
        provider: ProviderLike,
        cwd: Optional[PathLike] = None,
        permission_mode: Optional[PermissionMode] = None,
        tools: Sequence[Tool] = (),
        permission_handler: Optional[PermissionHandler] = None,
        hooks: Optional[HooksLike] = None,
        command_modules: Sequence[CommandModule] = (),
        builtin_commands: bool = True,
        system_prompt: Optional[str] = None,
        append_system_prompt: Optional[str] = None,
        max_turns: Optional[int] = None,
        session_id: Optional[str] = None,
        load_project_context: Optional[bool] = None,
        home: Optional[PathLike] = None,
        settings: Optional[Mapping[str, Any]] = None,
        settings_from_environment: Optional[bool] = None,
        env: Optional[Mapping[str, str]] = None,
        builtin_tools: Optional[bool] = None,
        persistence: Union[Literal["none", "project"], Mapping[str, Any], None] = None,
        session_store: Union[PathLike, SessionStore, None] = None,
        resume_session_id: Optional[str] = None,
        fork_session: Optional[bool] = None,
        max_budget_usd: Optional[float] = None,
        fallback_model: Optional[str] = None,
        auto_compact: Optional[bool] = None,
        context_window: Optional[int] = None,
        sandbox: Optional[bool] = None,
        skills: Sequence[Union[PathLike, Mapping[str, Any]]] = (),
        mcp_servers: Optional[Mapping[str, Union[Mapping[str, Any], SdkMcpServer]]] = None,
        mcp_startup_timeout_ms: Optional[int] = None,
        mcp_call_timeout_ms: Optional[int] = None,
        on_mcp_authorization: Optional[Callable[[str, str], Any]] = None,
        custom_commands: Sequence[Union[PathLike, Mapping[str, Any]]] = (),
        event_buffer: Optional[int] = None,
        edit_checkpoints: Optional[bool] = None,
        telemetry: Optional[Mapping[str, Any]] = None,
        traceparent: Optional[str] = None,
        tracestate: Optional[str] = None,
        output_format: Optional[OutputType] = None,
        max_structured_output_retries: Optional[int] = None,
    ) -> None:
        """Creates the session.

        Args:
            provider: The model: :class:`robota.AnthropicProvider`,
                :class:`robota.OpenAIProvider`, :class:`robota.ScriptedProvider`,
                :class:`robota.ReplayProvider` or a :class:`robota.Provider` subclass.
            cwd: The project directory tools work in (default: the current directory).
            permission_mode: ``"default"`` (ask for anything not allowed by a rule),
                ``"acceptEdits"`` (file edits in the project are allowed), ``"plan"`` (read-only),
                ``"dontAsk"`` (deny what is not pre-approved, never ask) or
                ``"bypassPermissions"`` (allow everything; the OS sandbox is then on for Bash).
                Default: the settings' ``permissions.defaultMode``, else ``"default"``.
            tools: Your tools, functions decorated with :func:`robota.tool`. A tool may not
                take a built-in tool's name unless it says ``replaces_builtin=True``.
            permission_handler: Answers the permission prompts of calls no rule allows:
                ``handler(request) -> allow() | allow_session() | allow_always() | deny(...)``,
                sync or async. Without one, such calls are denied.
            hooks: Hook callbacks: a list of :class:`robota.Hook` or
                ``{"PreToolUse": callback | [callbacks], ...}`` (see :mod:`robota.hooks`).
            command_modules: Your slash-command modules (:class:`robota.CommandModule`).
            builtin_commands: ``False`` leaves out the built-in commands (help, clear, compact,
                rename, …).
            system_prompt: Replaces the system prompt assembled from the project.
            append_system_prompt: Text appended to the system prompt.
            max_turns: Most model/tool rounds per prompt (``0`` or ``None``: no cap).
            session_id: The session id (default: a fresh UUID); it names files, so it must be
                a safe file name.
            load_project_context: ``False`` skips AGENTS.md/CLAUDE.md and the other project
                context in the system prompt (default ``True``).
            home: The home directory whose ``~/.claude``/``~/.robota`` settings are read
                (default: none are read, unless ``settings_from_environment``).
            settings: Settings from code, a settings.json object applied above every file.
            settings_from_environment: ``True`` loads settings exactly like the CLI (the real
                ``HOME`` and environment); ``home``, ``settings`` and ``env`` must then be unset.
            env: Variables for ``$ENV:NAME`` references in settings.
            builtin_tools: ``False`` leaves out the built-in file, shell and web tools.
            persistence: Where the session is saved: ``"none"`` (default), ``"project"``
                (``<cwd>/.robota/``), ``{"store": {"sessions_dir": ..., "logs_dir": ...}}`` or
                ``{"sqlite": {"path": ...}}`` (one SQLite database for many sessions; a relative
                path is in ``cwd``) or ``{"postgres": {"url_env": "DATABASE_URL", "project":
                ...}}`` (a PostgreSQL database shared by many workers; ``url`` instead of
                ``url_env`` works too).
            session_store: A directory to save sessions in (``sessions/`` and ``logs/``
                under it; the short form of ``persistence={"store": ...}``), or a
                :class:`robota.SessionStore` of your own (your database; see
                :mod:`robota.stores`).
            resume_session_id: Resume this saved session (needs ``persistence`` or
                ``session_store``).
            fork_session: With ``resume_session_id``: continue in a copy with a new id.
            max_budget_usd: Refuse further prompts once the session has spent this many USD.
            fallback_model: A second model of the same provider, answering while the main model
                is overloaded (HTTP 529 or 503 after the provider's retries); each switch is a
                ``warning`` event with ``source == "fallback_model"``. The same model as the
                main one, or a provider that cannot switch models (scripted, replay, your own), is
                refused here with an error naming ``fallback_model``.
            auto_compact: ``False`` turns automatic compaction of a full context off.
            context_window: The model's context window in tokens, when the provider does not
                know it.
            sandbox: ``True``/``False`` turns the OS sandbox for Bash on or off, above the
                settings; unset, it is on in ``bypassPermissions`` and off otherwise.
            skills: Skills of your own beside those discovered in the project and home: a
                path is a skill folder (or a folder of skill folders), a mapping
                ``{"name": ..., "content": ...}`` a skill given as data (``content`` is what a
                ``SKILL.md`` would hold).
            mcp_servers: MCP servers to connect, in ``.mcp.json``'s ``mcpServers`` shape:
                ``{"name": {"command": ..., "args": [...], "env": {...}}}`` (stdio) or
                ``{"name": {"type": "http", "url": ..., "headers": {...}}}``. Their tools reach
                the model as ``mcp__<name>__<tool>``; see :meth:`list_mcp_servers`. A value
                made by :func:`robota.create_sdk_mcp_server` is a server whose tools are your
                Python functions, run in-process.
            mcp_startup_timeout_ms: How long a server may take to start (default 30 000).
            mcp_call_timeout_ms: How long one MCP call may take (default 600 000).
            on_mcp_authorization: ``on_mcp_authorization(server, url)`` (sync or async) opens
                the authorization URL of a remote MCP server that requires OAuth (e.g. with
                :func:`webbrowser.open`); the redirect comes back to the session on
                ``127.0.0.1`` and tokens are kept in ``~/.robota/mcp-oauth``. It is called on a
                thread of robota's, not on your event loop (servers connect in the background
                from the moment the session is created). Without it such a server is ``needs_auth`` (see
                :meth:`list_mcp_servers`); ``execute_command("mcp", "auth <server>")`` asks
                again.
            custom_commands: Custom slash commands of your own, ahead of the project's
                ``.claude/commands`` and the user's ``~/.claude/commands``: a path is a folder
                searched like ``.claude/commands`` (``**/*.md``), a mapping
                ``{"name": ..., "content": ...}`` a command given as data (``content`` is what a
                command file would hold: optional frontmatter, then the prompt with
                ``$ARGUMENTS``/``$1``…). Run one with ``await session.execute_command(name,
                args)``; :meth:`list_commands` lists them with their source.
            event_buffer: Events buffered per subscriber before ``text_delta`` chunks are
                joined (default 256).
            edit_checkpoints: ``False`` keeps no edit checkpoints. By default every prompt is a
                checkpoint under ``<cwd>/.robota/checkpoints/``: files that Write, Edit,
                MultiEdit, NotebookEdit and tools with ``mutates_files`` change are saved
                first, so :meth:`restore_edit_checkpoint` can undo them (Bash is not tracked).
            telemetry: Export OpenTelemetry traces and metrics over OTLP:
                ``{"endpoint": "http://collector:4318", "protocol": "http" | "grpc",
                "headers": {...}, "serviceName": ..., "timeoutMs": ...}``; ``{}`` takes
                everything from the ``OTEL_EXPORTER_OTLP_*`` variables. Spans: one per prompt
                (``invoke_agent robota``), model call (``chat <model>``, GenAI conventions),
                tool call, hook and compaction. Unset: nothing is traced.
            traceparent: Your W3C ``traceparent`` (e.g. the current span's): the prompts'
                spans join your trace under that span. :meth:`submit` takes one per prompt too.
            tracestate: The W3C ``tracestate`` that goes with ``traceparent``.
            output_format: Every prompt's answer must match this schema: a pydantic model
                class, a dataclass or a JSON Schema dict (see :mod:`robota.structured`). The
                value is :attr:`TurnResult.structured_output` (typed with
                :meth:`TurnResult.parse`); an answer that never matches ends the prompt
                ``error`` with ``error_details["kind"] == "structured_output"``.
            max_structured_output_retries: Follow-ups an answer that does not match gets before
                the prompt fails (default 5).
        """
        if persistence is not None and session_store is not None:
            raise _native.InvalidArgumentError("pass either `persistence` or `session_store`, not both")
        host_store: Optional[SessionStore] = None
        if isinstance(session_store, SessionStore):
            host_store, session_store = session_store, None
        if session_store is not None:
            root = os.fspath(session_store)
            persistence = {
                "store": {
                    "sessions_dir": os.path.join(root, "sessions"),
                    "logs_dir": os.path.join(root, "logs"),
                }
            }
        config = _config(
            cwd=fspath(cwd),
            permission_mode=permission_mode,
            system_prompt=system_prompt,
            append_system_prompt=append_system_prompt,
            max_turns=max_turns,
            session_id=session_id,
            load_project_context=load_project_context,
            home=fspath(home),
            settings=dict(settings) if settings is not None else None,
            settings_from_environment=settings_from_environment,
            env=dict(env) if env is not None else None,
            builtin_tools=builtin_tools,
            persistence=persistence,
            resume_session_id=resume_session_id,
            fork_session=fork_session,
            max_budget_usd=max_budget_usd,
            fallback_model=fallback_model,
            auto_compact=auto_compact,
            context_window=context_window,
            sandbox=sandbox,
            skills=_registrations(skills, "skills") or None,
            commands=_registrations(custom_commands, "custom_commands") or None,
            edit_checkpoints=edit_checkpoints,
            mcp_servers=(
                {k: v for k, v in mcp_servers.items() if not isinstance(v, SdkMcpServer)}
                if mcp_servers is not None
                else None
            ),
            mcp_startup_timeout_ms=mcp_startup_timeout_ms,
            mcp_call_timeout_ms=mcp_call_timeout_ms,
            telemetry=dict(telemetry) if telemetry is not None else None,
            traceparent=traceparent,
            tracestate=tracestate,
            output_format=_output_format(output_format) if output_format is not None else None,
            max_structured_output_retries=max_structured_output_retries,
        )
        for t in tools:
            if not isinstance(t, Tool):
                raise TypeError(f"tools must be decorated with @robota.tool; got {t!r}")
        # In-process servers travel with the tools (their handlers are Python functions); the
        # configured ones with the plain options.
        in_process = [s._to_native(key) for key, s in (mcp_servers or {}).items() if isinstance(s, SdkMcpServer)]
        self._listeners: Dict[str, List[EventListener]] = {}
        self._shut_down = False
        self._pump: Optional[_Pump] = None
        self._native = _native.NativeSession(
            config,
            provider_to_native(provider),
            list(tools) + in_process,
            permission_adapter(permission_handler) if permission_handler is not None else None,
            hooks_to_native(hooks),
            [m._to_native() for m in command_modules],
            builtin_commands,
            event_buffer,
            _authorization_adapter(on_mcp_authorization) if on_mcp_authorization is not None else None,
            host_store,
        )

    # -- prompts ---------------------------------------------------------------------------

    async def submit(
        self,
        input: str,
        *,
        display_input: Optional[str] = None,
        raw_input: Optional[str] = None,
        traceparent: Optional[str] = None,
        tracestate: Optional[str] = None,
        output_format: Optional[OutputType] = None,
    ) -> TurnResult:
        """Submits a prompt and waits until its run ends. While another prompt runs, this one
        is queued (one at most; a second raises :class:`robota.QueueFullError`). Cancelling the
        awaiting task (Ctrl-C, ``task.cancel()``, a timeout) cancels this prompt only: a queued
        one is dropped, a running one aborted (the prompt queued behind it still runs).
        ``traceparent``/``tracestate`` (W3C) make this prompt's span a child of yours (with
        ``telemetry``). ``output_format`` (a pydantic model class, a dataclass or a JSON Schema
        dict) shapes this prompt's answer instead of the session's: see
        :attr:`TurnResult.structured_output` and :meth:`TurnResult.parse`."""
        self._check_open()
        if not isinstance(input, str):
            raise TypeError(f"input must be a str, not {type(input).__name__}")
        self._start_pump()
        value = await self._native.submit(
            input,
            display_input,
            raw_input,
            traceparent,
            tracestate,
            _output_format(output_format) if output_format is not None else None,
        )
        result = TurnResult._from_native(value)
        if self._pump is not None and result.event is not None:
            await self._pump.wait_delivered(result.event.seq)
        return result

    async def continue_answer(self) -> TurnResult:
        """Asks the model to go on with an answer that was cut off at the output token limit (a
        prompt that ended ``truncated``): submits the engine's continuation prompt like
        :meth:`submit`, shown as ``(continue)``. The cut-off answer is in the history, so the
        model sees where it stopped."""
        return await self.submit(_native.CONTINUE_PROMPT, display_input=_native.CONTINUE_DISPLAY_INPUT)

    def abort(self) -> None:
        """Aborts the running prompt (pending permission requests are cancelled, running tools
        stopped) and drops the queued one. The running prompt's ``submit`` returns
        ``interrupted``."""
        self._native.abort()

    def cancel_queue(self) -> Optional[str]:
        """Drops the queued prompt and returns it (as displayed); ``None`` when nothing was
        queued. Its ``submit`` returns ``cancelled``."""
        return self._native.cancel_queue()

    async def wait_idle(self) -> None:
        """Waits until no prompt is running or queued and the events of the finished work (a
        command's skill run included) have reached the listeners."""
        seq = await self._native.wait_idle()
        if self._pump is not None:
            await self._pump.wait_delivered(seq)

    # -- commands --------------------------------------------------------------------------

    async def execute_command(self, name: str, args: str = "") -> CommandResult:
        """Runs a slash command (without the slash), e.g. ``execute_command("rename", "Chat")``.
        Raises :class:`robota.CommandError` for an unknown command and
        :class:`robota.BusyError` for a blocking command while a prompt runs."""
        self._check_open()
        self._start_pump()
        return CommandResult.from_dict(await self._native.execute_command(name, args))

    def list_commands(self) -> List[Dict[str, Any]]:
        """The commands users can run: ``[{"name", "module", "source", "descriptor"}]``."""
        return list(self._native.list_commands())

    def list_skills(self) -> List[Dict[str, Any]]:
        """The skills of this session, by name: ``[{"name", "description", "source": {"kind":
        "project" | "user" | "host", "root"}, "dir", "file", "allowed_tools", "model",
        "context": "inline" | "fork", "agent", "argument_hint", "disable_model_invocation",
        "user_invocable", "extra"}]``. Run one with ``await session.execute_command(name,
        args)``; each activation emits a :class:`robota.SkillActivationEvent`."""
        return list(self._native.list_skills())

    def list_plugins(self) -> Dict[str, Any]:
        """The plugins of this session's user and project: ``{"plugins": [{"id":
        "name@marketplace", "name", "marketplace", "version", "description", "installed",
        "enabled", "enabled_in", "path", "loaded", "skills", "commands", "agents", "hook_files",
        "mcp_servers"}], "marketplaces": [...], "warnings": [{"file", "message"}]}``. Install
        one with ``await session.execute_command("plugin", "marketplace add DIR")`` and
        ``await session.execute_command("plugin", "install NAME@MARKETPLACE")``; sessions
        created afterwards load it (its skills are named ``plugin:skill``)."""
        return dict(self._native.list_plugins())

    def list_edit_checkpoints(self) -> List[Dict[str, Any]]:
        """The edit checkpoints, one per prompt, oldest first: ``[{"id", "sequence",
        "prompt", "created_at", "finished", "file_count", "bytes"}]``. Changes made by Bash are
        not tracked."""
        return list(self._native.list_edit_checkpoints())

    def inspect_edit_checkpoint(self, checkpoint_id: str) -> Dict[str, Any]:
        """One checkpoint: ``{"checkpoint", "files": [{"display_path", "path", "existed",
        "snapshot_exists", "action"}], "restore_range", "rollback_range"}``. An unknown id
        raises :class:`robota.InvalidArgumentError`."""
        return dict(self._native.inspect_edit_checkpoint(checkpoint_id))

    def restore_edit_checkpoint(self, checkpoint_id: str) -> Dict[str, Any]:
        """Puts files back as the checkpoint's prompt left them: later prompts' changes are
        undone newest first (saved contents written back, files they created deleted) and
        their checkpoints removed. Returns ``{"checkpoint_id", "rolled_back", "restored",
        "deleted", "problems"}``. Raises :class:`robota.BusyError` while a prompt runs."""
        self._check_open()
        return dict(self._native.restore_edit_checkpoint(checkpoint_id, False))

    def rollback_edit_checkpoint(self, checkpoint_id: str) -> Dict[str, Any]:
        """Like :meth:`restore_edit_checkpoint`, and also undoes the checkpoint's own prompt:
        files are as they were before it."""
        self._check_open()
        return dict(self._native.restore_edit_checkpoint(checkpoint_id, True))

    def list_background_tasks(self) -> List[BackgroundTask]:
        """The background tasks (Bash with ``run_in_background``), oldest first. A resumed
        session lists those of its earlier runs too; one that was running when that run's
        process ended is ``lost``."""
        return [BackgroundTask.from_dict(d) for d in self._native.list_background_tasks()]

    def get_background_task(self, task_id: str) -> Optional[BackgroundTask]:
        """One background task, or ``None`` for an unknown id."""
        found = self._native.get_background_task(task_id)
        return None if found is None else BackgroundTask.from_dict(found)

    async def cancel_background_task(self, task_id: str) -> BackgroundTask:
        """Stops a running task with its whole process tree and returns it once stopped. An
        unknown or already ended task raises :class:`robota.InvalidArgumentError`."""
        return BackgroundTask.from_dict(await self._native.cancel_background_task(task_id))

    async def wait_background_task(self, task_id: str, timeout: float = 30.0) -> BackgroundTask:
        """Waits until the task has ended, at most ``timeout`` seconds, and returns it as it is
        then (still running when the time ran out)."""
        return BackgroundTask.from_dict(
            await self._native.wait_background_task(task_id, int(max(timeout, 0) * 1000))
        )

    def close_background_task(self, task_id: str) -> BackgroundTask:
        """Removes an ended task from the list (its log files stay). A running task raises
        :class:`robota.InvalidArgumentError`: cancel it first."""
        return BackgroundTask.from_dict(self._native.close_background_task(task_id))

    def read_background_task_log(
        self,
        task_id: str,
        stream: Literal["stdout", "stderr"] = "stdout",
        offset: int = 0,
        max_bytes: int = 65536,
    ) -> BackgroundTaskLogPage:
        """A page of the task's output file (at most 1 MiB) from byte ``offset``."""
        return BackgroundTaskLogPage.from_dict(
            self._native.read_background_task_log(task_id, stream, offset, max_bytes)
        )

    async def run_subagent(
        self,
        prompt: str,
        agent_type: Optional[str] = None,
        model: Optional[str] = None,
        isolation: Literal["none", "worktree"] = "none",
    ) -> SubagentReport:
        """Runs a subagent from host code (as ``/agent`` does) and returns its report.
        ``agent_type`` names an agent definition (default ``general-purpose``); ``model``
        overrides the definition's (``sonnet``, ``opus``, ``haiku``, ``inherit`` or a model id);
        ``isolation="worktree"`` runs it in a git worktree of its own. Its progress arrives as
        ``background_task_event`` events; :meth:`abort` stops it. An unknown agent, an empty
        prompt or a model the provider cannot serve raises
        :class:`robota.InvalidArgumentError`; a run that failed is a report with ``error``."""
        self._check_open()
        return SubagentReport.from_dict(
            await self._native.run_subagent(prompt, agent_type, model, isolation)
        )

    def start_background_subagent(
        self,
        prompt: str,
        agent_type: Optional[str] = None,
        model: Optional[str] = None,
        isolation: Literal["none", "worktree"] = "none",
    ) -> BackgroundTask:
        """Starts a subagent from host code as a background task (``kind == "agent"``) and
        returns the task at once; arguments as for :meth:`run_subagent`. Wait for it with
        :meth:`wait_background_task`, read its report with :meth:`read_background_task_log`,
        stop it with :meth:`cancel_background_task`. The concurrency limit refuses one task too
        many with :class:`robota.InvalidArgumentError`."""
        self._check_open()
        return BackgroundTask.from_dict(
            self._native.start_background_subagent(prompt, agent_type, model, isolation)
        )

    def list_mcp_servers(self) -> List[Dict[str, Any]]:
        """The MCP servers of this session (from ``mcp_servers`` in the options, ``.mcp.json``
        and settings), by name: ``[{"name", "origin": {"kind": "host" | "project" | "settings" |
        "plugin", ...}, "transport": "stdio" | "http" | "sse" | "sdk", "status": {"state":
        "pending" | "connected" | "failed" | "needs_auth" | "disabled", "reason"?}, "tools":
        ["mcp__<server>__<tool>", ...], "prompts": [...]}]``. Their tools are offered to the
        model; a prompt runs with ``await session.execute_command("mcp__<server>__<prompt>",
        args)``. Servers connect in the background from the moment the session is created, so
        right after it they are ``pending`` (each change is a ``mcp_server_status`` event; see
        :meth:`wait_for_mcp_servers`)."""
        return list(self._native.list_mcp_servers())

    async def wait_for_mcp_servers(self, timeout: Optional[float] = None) -> bool:
        """Waits until the MCP servers are done starting (each ``connected``, ``failed``,
        ``needs_auth`` or ``disabled``), for at most ``timeout`` seconds (``None``: until they
        are, which the start-up timeout bounds). Returns ``True`` when none is still starting.
        Prompts need not wait first: each waits for servers still starting before its first
        model call."""
        timeout_ms = None if timeout is None else max(0, int(timeout * 1000))
        return bool(await self._native.wait_for_mcp_servers(timeout_ms))

    async def compact(self, instructions: Optional[str] = None) -> Dict[str, Any]:
        """Compacts the conversation now (refused with :class:`robota.BusyError` while a prompt
        runs)."""
        self._check_open()
        return dict(await self._native.compact(instructions))

    async def flush_telemetry(self) -> bool:
        """Sends the spans and metrics recorded so far to the collector now, waiting the
        export timeout at most; ``True`` when all went out in time (and without telemetry).
        :meth:`shutdown` flushes too."""
        return bool(await self._native.flush_telemetry())

    async def shutdown(self, reason: Optional[str] = None) -> None:
        """Aborts any run, drops the queue and ends the session (SessionEnd hooks run once).
        ``reason``: ``clear``, ``resume``, ``logout``, ``prompt_input_exit`` or ``other``.

        May be awaited from any event loop, also another one than the session was used from
        (e.g. a second ``asyncio.run``). Afterwards every method that acts (``submit``,
        ``execute_command``, ``compact``, ``list_commands``, setting the name, ``on``,
        ``events``) raises :class:`robota.ShutDownError`; ``abort`` and ``cancel_queue`` do
        nothing; the getters still return the final state. Calling it again does nothing."""
        if self._shut_down:
            return
        await self._native.shutdown(reason)
        self._shut_down = True
        pump = self._pump.task if self._pump is not None else None
        if pump is None or pump.done():
            return
        if pump.get_loop() is asyncio.get_running_loop():
            try:
                await asyncio.wait_for(asyncio.shield(pump), timeout=5)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                pass
        # Otherwise the listeners run on another loop (maybe closed already): that loop
        # delivers what is left if it runs again; this one cannot wait for its task.

    async def __aenter__(self) -> "InteractiveSession":
        self._start_pump()
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.shutdown()

    # -- state -----------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        """The session id."""
        return self._native.get_session_id()

    def get_session_id(self) -> str:
        """The session id."""
        return self._native.get_session_id()

    @property
    def name(self) -> Optional[str]:
        """The session's name (settable; ``None`` clears it)."""
        return self._native.get_name()

    @name.setter
    def name(self, value: Optional[str]) -> None:
        self._native.set_name(value)

    def get_name(self) -> Optional[str]:
        """The session's name."""
        return self._native.get_name()

    def set_name(self, name: Optional[str]) -> None:
        """Names the session (``None`` clears the name)."""
        self._native.set_name(name)

    @property
    def permission_mode(self) -> str:
        """The current permission mode."""
        return str(self._native.get_permission_mode())

    @property
    def is_shut_down(self) -> bool:
        """True once :meth:`shutdown` has completed."""
        return self._shut_down

    def is_executing(self) -> bool:
        """True while a prompt runs (or one is queued to run next)."""
        return self._native.is_executing()

    def get_pending_prompt(self) -> Optional[str]:
        """The queued prompt as displayed."""
        return self._native.get_pending_prompt()

    def get_messages(self) -> List[Dict[str, Any]]:
        """The chat messages (``role``, ``content`` blocks, …) as dicts."""
        return list(self._native.get_messages())

    def get_full_history(self) -> List[Dict[str, Any]]:
        """Chat messages plus history events (``tool-summary``, ``usage-summary``)."""
        return list(self._native.get_full_history())

    def get_context_state(self) -> Dict[str, Any]:
        """How full the context window is (``used_tokens``, ``max_tokens``, ``ratio``)."""
        return dict(self._native.get_context_state())

    def get_recovery_report(self) -> Optional[Dict[str, Any]]:
        """What opening the saved session found damaged, repaired or unfinished, or ``None``
        when there is nothing to tell. ``report["unfinished_turn"]["prompt"]`` is the prompt a
        killed process never finished (offer to send it again); the same report comes once as
        a :class:`~robota.events.SessionRecoveredEvent` when the session starts."""
        report = self._native.get_recovery_report()
        return None if report is None else dict(report)

    def get_warnings(self) -> List[ConfigWarning]:
        """The configuration problems the session worked around when it opened, each with its
        file and JSON path: a permission rule it could not parse (skipped, or for deny/ask
        rules, every call of its tool asks), an unknown settings key, an agent definition file
        it could not use, a tool an agent lists that the session does not have. They are also
        sent as ``settings_warning`` session events while the session opens, before ``on()`` can
        be called; this is where a host reads them."""
        return [ConfigWarning._from_dict(dict(w)) for w in self._native.get_warnings()]

    def sandbox_status(self) -> SandboxStatus:
        """The OS sandbox Bash commands run in: enabled, active (enabled *and* working here),
        backend, why not when unavailable, writable roots, network policy and which guarantees
        hold."""
        return SandboxStatus._from_dict(self._native.sandbox_status())

    def get_streaming_text(self) -> str:
        """The answer text of the current prompt so far."""
        return self._native.get_streaming_text()

    def get_active_tools(self) -> List[Dict[str, Any]]:
        """The tool calls of the current prompt."""
        return list(self._native.get_active_tools())

    # -- events ----------------------------------------------------------------------------

    @overload
    def on(self, event_type: Literal["text_delta"], listener: Callable[[TextDeltaEvent], Any]) -> Callable[[TextDeltaEvent], Any]: ...
    @overload
    def on(self, event_type: Literal["thinking"], listener: Callable[[ThinkingEvent], Any]) -> Callable[[ThinkingEvent], Any]: ...
    @overload
    def on(
        self, event_type: Literal["server_tool_use"], listener: Callable[[ServerToolUseEvent], Any]
    ) -> Callable[[ServerToolUseEvent], Any]: ...
    @overload
    def on(
        self, event_type: Literal["server_tool_result"], listener: Callable[[ServerToolResultEvent], Any]
    ) -> Callable[[ServerToolResultEvent], Any]: ...
    @overload
    def on(self, event_type: Literal["tool_start"], listener: Callable[[ToolStartEvent], Any]) -> Callable[[ToolStartEvent], Any]: ...
    @overload
    def on(self, event_type: Literal["tool_end"], listener: Callable[[ToolEndEvent], Any]) -> Callable[[ToolEndEvent], Any]: ...
    @overload
    def on(
        self, event_type: Literal["permission_request"], listener: Callable[[PermissionRequestEvent], Any]
    ) -> Callable[[PermissionRequestEvent], Any]: ...
    @overload
    def on(
        self, event_type: Literal["context_update"], listener: Callable[[ContextUpdateEvent], Any]
    ) -> Callable[[ContextUpdateEvent], Any]: ...
    @overload
    def on(self, event_type: Literal["compaction"], listener: Callable[[CompactionEvent], Any]) -> Callable[[CompactionEvent], Any]: ...
    @overload
    def on(self, event_type: Literal["complete"], listener: Callable[[CompleteEvent], Any]) -> Callable[[CompleteEvent], Any]: ...
    @overload
    def on(self, event_type: Literal["refused"], listener: Callable[[RefusedEvent], Any]) -> Callable[[RefusedEvent], Any]: ...
    @overload
    def on(
        self, event_type: Literal["truncated"], listener: Callable[[TruncatedEvent], Any]
    ) -> Callable[[TruncatedEvent], Any]: ...
    @overload
    def on(self, event_type: Literal["error"], listener: Callable[[ErrorEvent], Any]) -> Callable[[ErrorEvent], Any]: ...
    @overload
    def on(self, event_type: Literal["interrupted"], listener: Callable[[InterruptedEvent], Any]) -> Callable[[InterruptedEvent], Any]: ...
    @overload
    def on(
        self, event_type: Literal["skill_activation"], listener: Callable[[SkillActivationEvent], Any]
    ) -> Callable[[SkillActivationEvent], Any]: ...
    @overload
    def on(
        self, event_type: Literal["background_task_event"], listener: Callable[[BackgroundTaskEvent], Any]
    ) -> Callable[[BackgroundTaskEvent], Any]: ...
    @overload
    def on(
        self, event_type: Literal["session_recovered"], listener: Callable[[SessionRecoveredEvent], Any]
    ) -> Callable[[SessionRecoveredEvent], Any]: ...
    @overload
    def on(
        self, event_type: Literal["todo_update"], listener: Callable[[TodoUpdateEvent], Any]
    ) -> Callable[[TodoUpdateEvent], Any]: ...
    @overload
    def on(
        self, event_type: Literal["mcp_server_status"], listener: Callable[[McpServerStatusEvent], Any]
    ) -> Callable[[McpServerStatusEvent], Any]: ...
    @overload
    def on(self, event_type: Literal["session"], listener: Callable[[SessionEvent], Any]) -> Callable[[SessionEvent], Any]: ...
    @overload
    def on(self, event_type: Literal["*"], listener: Callable[[Event], Any]) -> Callable[[Event], Any]: ...
    def on(self, event_type: str, listener: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """Calls ``listener(event)`` for every event of ``event_type`` (``"*"`` for all), on
        the session's event loop, in order. The listener gets the event's own class
        (``on("text_delta", fn)`` passes :class:`robota.TextDeltaEvent`s, so a type checker
        knows ``event.text``). ``async`` listeners are awaited before the next event. An
        exception in a listener is reported to the loop's exception handler and does not stop
        delivery. Returns the listener (so ``on`` works as a decorator factory's target).

        Raises :class:`robota.InvalidArgumentError` for an unknown event type (a typo would
        otherwise never fire) and :class:`robota.ShutDownError` after :meth:`shutdown`."""
        _check_event_type(event_type)
        if not callable(listener):
            raise TypeError("listener must be callable")
        self._check_open()
        self._listeners.setdefault(event_type, []).append(listener)
        self._start_pump()
        return listener

    def off(self, event_type: EventType, listener: Callable[[Any], Any]) -> bool:
        """Removes a listener added with :meth:`on`; returns whether it was registered."""
        _check_event_type(event_type)
        listeners = self._listeners.get(event_type, [])
        if listener in listeners:
            listeners.remove(listener)
            return True
        return False

    def events(self) -> EventStream:
        """A stream of every event from now on: ``async for event in session.events()``."""
        self._check_open()
        return EventStream(self, self._native.subscribe())

    # -- internals -------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._shut_down or self._native.is_shut_down():
            raise _native.ShutDownError(
                "the session was shut down; create a new session (or resume this one) to go on"
            )

    def _start_pump(self) -> None:
        if not self._listeners:
            return
        if self._pump is None:
            self._pump = _Pump(self)
        self._pump.ensure_started()

    def _dispatch(self, raw: Dict[str, Any]) -> Optional[List[Any]]:
        """Calls the listeners for one event; returns the awaitables async listeners returned
        (``None`` when there are none, the common case)."""
        kind = raw.get("type", "")
        listeners = self._listeners.get(kind)
        wildcard = self._listeners.get("*")
        if not listeners and not wildcard:
            return None
        event = event_from_dict(raw)
        pending: Optional[List[Any]] = None
        for listener in (listeners or []) + (wildcard or []):
            try:
                result = listener(event)
            except Exception as exc:
                report_callback_error(f"the {kind!r} listener {listener!r}", exc)
                continue
            if result is not None and (asyncio.iscoroutine(result) or isinstance(result, asyncio.Future)):
                if pending is None:
                    pending = []
                pending.append(result)
        return pending

    async def _await_listener(self, pending: List[Any], raw: Dict[str, Any]) -> None:
        for awaitable in pending:
            try:
                await awaitable
            except Exception as exc:
                report_callback_error(f"an async {raw.get('type')!r} listener", exc)

    def __repr__(self) -> str:
        return f"InteractiveSession(session_id={self.session_id!r})"


def _authorization_adapter(open_url: Callable[[str, str], Any]) -> Callable[[str, str], None]:
    """What the engine calls, on a thread of its own, for ``on_mcp_authorization``: the host's
    function, and a coroutine it returns run to its end on that thread's own event loop (the
    session's loop may be busy: the URL is asked for while the servers connect in the
    background)."""
    if not callable(open_url):
        raise TypeError("on_mcp_authorization must be callable: on_mcp_authorization(server, url)")

    def adapter(server: str, url: str) -> None:
        try:
            result = open_url(server, url)
            if inspect.isawaitable(result):
                asyncio.run(_awaited(result))
        except Exception as exc:
            report_callback_error("on_mcp_authorization", exc)

    return adapter


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


def _check_event_type(event_type: str) -> None:
    """Refuses an event type no event has (a typo would never fire)."""
    if event_type == "*" or event_type in EVENT_TYPES:
        return
    known = sorted(EVENT_TYPES)
    close = difflib.get_close_matches(str(event_type), known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise _native.InvalidArgumentError(
        f"unknown event type {event_type!r}{hint} (expected '*' or one of {', '.join(known)})"
    )


def _registrations(
    items: Sequence[Union[PathLike, Mapping[str, Any]]], what: str
) -> List[Dict[str, Any]]:
    """Skills or custom commands as the engine reads them: a path is a folder (``{"dir"}``),
    a mapping ``{"name", "content"}`` one given as data (``content`` is what its file would
    hold)."""
    out: List[Dict[str, Any]] = []
    for item in items:
        if isinstance(item, Mapping):
            out.append(dict(item))
        elif isinstance(item, (str, os.PathLike)):
            out.append({"dir": os.fspath(item)})
        else:
            raise TypeError(
                f"{what} must be paths or {{'name', 'content'}} mappings; got {item!r}"
            )
    return out


def _config(**options: Any) -> Dict[str, Any]:
    """The plain session options, without unset ones."""
    return {k: v for k, v in options.items() if v is not None}
