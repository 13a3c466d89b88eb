"""Typed session events.

Every event has ``.type`` (the snake_case tag, e.g. ``"text_delta"``), ``.session_id``, a
per-session strictly increasing ``.seq`` and ``.to_dict()`` (the event exactly as the engine
serialized it). :func:`event_from_dict` builds the right class from such a dict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Dict, List, Optional

__all__ = [
    "Event",
    "ToolState",
    "TextDeltaEvent",
    "ThinkingEvent",
    "ServerToolUseEvent",
    "ServerToolResultEvent",
    "ToolStartEvent",
    "ToolEndEvent",
    "PermissionRequestEvent",
    "ContextUpdateEvent",
    "CompactionEvent",
    "CompleteEvent",
    "RefusedEvent",
    "TruncatedEvent",
    "ErrorEvent",
    "InterruptedEvent",
    "SkillActivationEvent",
    "BackgroundTaskEvent",
    "SessionRecoveredEvent",
    "TodoItem",
    "TodoUpdateEvent",
    "McpServerStatusEvent",
    "SessionEvent",
    "UnknownEvent",
    "GapEvent",
    "EVENT_TYPES",
    "event_from_dict",
]


@dataclass(slots=True)
class Event:
    """Base class of every event."""

    #: The event's type tag (``"text_delta"``, ``"tool_start"``, …), set by each subclass.
    type: ClassVar[str] = ""
    #: The session that produced the event.
    session_id: str
    #: Position in the session's event stream (strictly increasing, starting at 1).
    seq: int
    #: The event as the engine serialized it (see :meth:`to_dict`).
    raw: Dict[str, Any]

    def to_dict(self) -> Dict[str, Any]:
        """The event as a plain dict (``{"type": ..., "session_id": ..., "seq": ..., ...}``)."""
        return dict(self.raw)


@dataclass(slots=True)
class ToolState:
    """One tool call as a UI shows it."""

    #: The provider's id of the call.
    tool_use_id: str
    #: The tool.
    name: str
    #: The most telling argument (a path, a command, …), for one-line display.
    first_arg: str
    #: True until the tool ends.
    is_running: bool
    #: ``"success"``, ``"error"`` or ``"denied"`` once it ended.
    result: Optional[str] = None
    #: The tool's text result (cut to 4 KiB), once it ended.
    tool_result_data: Optional[str] = None
    #: For Edit: the changed file and the diff lines.
    diff_file: Optional[str] = None
    #: For Edit: the unified diff lines.
    diff_lines: tuple[str, ...] = ()

    @staticmethod
    def from_dict(d: Dict[str, Any]) -> "ToolState":
        """Builds a tool state from its dict form."""
        return ToolState(
            tool_use_id=str(d.get("tool_use_id", "")),
            name=str(d.get("name", "")),
            first_arg=str(d.get("first_arg", "")),
            is_running=bool(d.get("is_running", False)),
            result=d.get("result"),
            tool_result_data=d.get("tool_result_data"),
            diff_file=d.get("diff_file"),
            diff_lines=tuple(d.get("diff_lines") or ()),
        )


@dataclass(slots=True)
class TextDeltaEvent(Event):
    """A chunk of the answer (chunks may be joined when a consumer falls behind)."""

    #: The event's type tag: always ``"text_delta"``.
    type: ClassVar[str] = "text_delta"
    #: The text.
    text: str


@dataclass(slots=True)
class ThinkingEvent(Event):
    """A chunk of the model's reasoning."""

    #: The event's type tag: always ``"thinking"``.
    type: ClassVar[str] = "thinking"
    #: The text.
    text: str


@dataclass(slots=True)
class ServerToolUseEvent(Event):
    """A tool the provider runs itself (Anthropic web search, web fetch, code execution, enabled
    by a profile's ``options.serverTools``) was called. Nothing runs locally and no permission is
    asked; the result follows as :class:`ServerToolResultEvent`."""

    #: The event's type tag: always ``"server_tool_use"``.
    type: ClassVar[str] = "server_tool_use"
    #: The provider's id of the call (``srvtoolu_…``).
    id: str
    #: The server tool: ``web_search``, ``web_fetch``, ``bash_code_execution``, …
    name: str
    #: The call's input, e.g. ``{"query": "..."}`` for a web search, ``{"url": "..."}`` for a fetch.
    input: Any


@dataclass(slots=True)
class ServerToolResultEvent(Event):
    """A server tool's result arrived (its content is kept with the assistant message; cited
    answer text carries ``citations`` in the history)."""

    #: The event's type tag: always ``"server_tool_result"``.
    type: ClassVar[str] = "server_tool_result"
    #: The id of the :class:`ServerToolUseEvent` it answers.
    tool_use_id: str
    #: The result block's type: ``web_search_tool_result``, ``web_fetch_tool_result``, …
    result_type: str
    #: True when the tool failed (``max_uses_exceeded``, ``url_not_accessible``, …).
    is_error: bool


@dataclass(slots=True)
class ToolStartEvent(Event):
    """A tool call began."""

    #: The event's type tag: always ``"tool_start"``.
    type: ClassVar[str] = "tool_start"
    #: The call.
    tool: ToolState


@dataclass(slots=True)
class ToolEndEvent(Event):
    """A tool call ended."""

    #: The event's type tag: always ``"tool_end"``.
    type: ClassVar[str] = "tool_end"
    #: The call, with how it ended (``result``).
    tool: ToolState


@dataclass(slots=True)
class PermissionRequestEvent(Event):
    """A tool call waits for the permission handler."""

    #: The event's type tag: always ``"permission_request"``.
    type: ClassVar[str] = "permission_request"
    #: The request (unique within the session).
    request_id: str
    #: The tool.
    tool_name: str
    #: Its arguments.
    input: Any
    #: The provider's id of the call.
    tool_use_id: str
    #: Why approval is needed.
    reason: str
    #: The permission mode at the time.
    permission_mode: str


@dataclass(slots=True)
class ContextUpdateEvent(Event):
    """How full the context window is (``state`` has ``used_tokens``, ``max_tokens``, ``ratio``…)."""

    #: The event's type tag: always ``"context_update"``.
    type: ClassVar[str] = "context_update"
    #: The context state: ``used_tokens``, ``max_tokens``, ``ratio``, ``estimated``.
    state: Dict[str, Any]


@dataclass(slots=True)
class CompactionEvent(Event):
    """The history was compacted."""

    #: The event's type tag: always ``"compaction"``.
    type: ClassVar[str] = "compaction"
    #: ``"manual"`` (the ``compact`` command or method) or ``"auto"`` (the window filled up).
    trigger: str
    #: Tokens before.
    tokens_before: int
    #: Estimated tokens after.
    tokens_after: int


def _report_history(raw: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [dict(e) for e in raw.get("history") or []]


def _report_tools(raw: Dict[str, Any]) -> List["ToolState"]:
    return [ToolState.from_dict(t) for t in raw.get("tool_summaries") or []]


def _report_context(raw: Dict[str, Any]) -> Dict[str, Any]:
    return dict(raw.get("context_state") or {})


def _report_usage(raw: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    usage = raw.get("usage")
    return dict(usage) if isinstance(usage, dict) else None


class _PromptReport:
    """What a prompt did, read from the fields its ``complete`` / ``interrupted`` event carries
    beside ``outcome`` (spec ``IExecutionResult``)."""

    __slots__ = ()
    raw: Dict[str, Any]

    @property
    def history(self) -> List[Dict[str, Any]]:
        """The history entries this prompt added (its user message, the answers and tool
        results, and event entries such as ``tool-start``, ``tool-end``, ``tool-summary``,
        ``usage-summary``, ``error``), as :meth:`InteractiveSession.get_full_history` has them."""
        return _report_history(self.raw)

    @property
    def tool_summaries(self) -> List["ToolState"]:
        """The prompt's tool calls as they ended."""
        return _report_tools(self.raw)

    @property
    def context_state(self) -> Dict[str, Any]:
        """How full the context window is after the prompt (``used_tokens``, ``max_tokens``,
        ``ratio``, ``estimated``)."""
        return _report_context(self.raw)

    @property
    def usage(self) -> Optional[Dict[str, Any]]:
        """The prompt's usage (``kind``, ``scope``, ``total_tokens``, ``prompt_tokens``,
        ``completion_tokens``, ``context_used_tokens``, ``context_max_tokens``,
        ``context_used_percentage``, ``cost_status``); ``None`` when none was reported."""
        return _report_usage(self.raw)


@dataclass(slots=True)
class CompleteEvent(_PromptReport, Event):
    """A prompt finished. ``outcome`` holds ``response``, ``usage``, ``stop_reason``, …; the
    properties ``history``, ``tool_summaries``, ``context_state`` and ``usage`` say what the
    prompt did (spec ``IExecutionResult``)."""

    #: The event's type tag: always ``"complete"``.
    type: ClassVar[str] = "complete"
    #: The run's outcome as the engine serialized it (``response``, ``usage``, ``stop_reason``, …).
    outcome: Dict[str, Any]

    @property
    def response(self) -> str:
        """The final answer text."""
        return str(self.outcome.get("response", ""))

    @property
    def structured_output(self) -> Any:
        """With an ``output_format``: the answer validated against its schema (plain JSON;
        ``None`` without one)."""
        return self.outcome.get("structured_output")


@dataclass(slots=True)
class RefusedEvent(Event):
    """A prompt ended with the model refusing (never re-asked). ``outcome["refusal"]`` holds
    ``text`` (what the model said), ``category`` and ``explanation`` (what the provider said),
    the last two when the provider gave them."""

    #: The event's type tag: always ``"refused"``.
    type: ClassVar[str] = "refused"
    #: The run's outcome as the engine serialized it (``response``, ``usage``, ``stop_reason``, …).
    outcome: Dict[str, Any]

    @property
    def response(self) -> str:
        """The refusal as the model wrote it."""
        return str(self.outcome.get("response", ""))

    @property
    def refusal(self) -> Dict[str, Any]:
        """``text``, and ``category`` / ``explanation`` when the provider gave them."""
        return dict(self.outcome.get("refusal") or {})


@dataclass(slots=True)
class TruncatedEvent(Event):
    """A prompt ended with its answer cut off at the output token limit (``max_tokens``);
    ``outcome["response"]`` is what was written (the history has it too, so a follow-up prompt
    such as "Continue where you stopped" has the model go on)."""

    #: The event's type tag: always ``"truncated"``.
    type: ClassVar[str] = "truncated"
    #: The run's outcome as the engine serialized it (``response``, ``usage``, ``stop_reason``, …).
    outcome: Dict[str, Any]

    @property
    def response(self) -> str:
        """The answer up to where it was cut off."""
        return str(self.outcome.get("response", ""))


@dataclass(slots=True)
class ErrorEvent(Event):
    """A prompt failed or could not run: a model call failed (auth, network, retries
    exhausted, …), a hook rejected it, the budget is spent, an ``@file`` cannot be attached.
    ``error`` holds ``kind``, ``message``, ``provider``, ``status`` (HTTP), ``retryable`` and
    ``retry_after_ms`` (the last three when known); ``outcome`` the run's outcome when it had
    started."""

    #: The event's type tag: always ``"error"``.
    type: ClassVar[str] = "error"
    #: What went wrong and how to fix it (the same as ``error["message"]``).
    message: str
    #: The failure: ``kind``, ``message``, ``provider``, ``status``, ``retryable``,
    #: ``retry_after_ms``.
    error: Dict[str, Any]
    #: The run's outcome when the run had started (usage, text streamed before the failure), else
    #: ``None``.
    outcome: Optional[Dict[str, Any]]


@dataclass(slots=True)
class InterruptedEvent(_PromptReport, Event):
    """A prompt was aborted; ``outcome`` holds what streamed until then (or ``None``); the
    properties ``history``, ``tool_summaries``, ``context_state`` and ``usage`` say what the
    prompt did until the abort."""

    #: The event's type tag: always ``"interrupted"``.
    type: ClassVar[str] = "interrupted"
    #: The partial outcome; ``None`` when the abort came before the run started.
    outcome: Optional[Dict[str, Any]]

    @property
    def response(self) -> str:
        """The answer text streamed before the abort."""
        return str(self.raw.get("response") or (self.outcome or {}).get("response", ""))


@dataclass(slots=True)
class SkillActivationEvent(Event):
    """A skill was activated or ended. ``data`` is the whole record; the properties read it."""

    #: The event's type tag: always ``"skill_activation"``.
    type: ClassVar[str] = "skill_activation"
    #: The activation record as the engine serialized it.
    data: Any

    def _get(self, key: str) -> Any:
        return (self.data or {}).get(key)

    @property
    def skill_name(self) -> str:
        """The skill."""
        return str(self._get("skill_name") or "")

    @property
    def source(self) -> str:
        """Where the skill came from: ``project``, ``user`` or ``host``."""
        return str(self._get("source") or "")

    @property
    def invocation(self) -> str:
        """Who activated it: ``user_slash`` or ``model_tool``."""
        return str(self._get("invocation") or "")

    @property
    def mode(self) -> str:
        """How it ran: ``inject`` (in the conversation) or ``fork`` (in a subagent)."""
        return str(self._get("mode") or "")

    @property
    def status(self) -> str:
        """``started``, ``completed`` or ``failed``."""
        return str(self._get("status") or "")

    @property
    def arguments(self) -> str:
        """The arguments it was given."""
        return str(self._get("arguments") or "")

    @property
    def error(self) -> Optional[str]:
        """What went wrong, for ``failed``."""
        value = self._get("error")
        return None if value is None else str(value)


@dataclass(slots=True)
class BackgroundTaskEvent(Event):
    """Work running beside the conversation changed: for a background task, ``data`` is
    ``{"event": "state_changed", "task_kind": "process" | "agent", "task_id", "origin", "from",
    "status", "task"}`` (one event per lifecycle transition); for a subagent, its progress with
    ``task_kind: "subagent"``; for a job group, ``{"event": "group_completed", "task_kind":
    "group", "group_id", "group"}``."""

    #: The event's type tag: always ``"background_task_event"``.
    type: ClassVar[str] = "background_task_event"
    #: The payload as the engine serialized it.
    data: Any

    @property
    def task_id(self) -> Optional[str]:
        """The task the event is about (``None`` for subagent progress)."""
        if isinstance(self.data, dict) and self.data.get("task_id") is not None:
            return str(self.data["task_id"])
        return None

    @property
    def status(self) -> Optional[str]:
        """The task's status after the change (``None`` for subagent progress)."""
        if isinstance(self.data, dict) and self.data.get("status") is not None:
            return str(self.data["status"])
        return None


@dataclass(slots=True)
class SessionRecoveredEvent(Event):
    """A warning about the saved session this one resumed: damage that was repaired, data that
    could not be kept, or a prompt whose turn never finished (the process running it was
    killed). Sent once, when the session starts; ``session.get_recovery_report()`` returns the
    same report at any time.

    ``report`` has ``session_id``, and where they apply ``snapshot`` (``path``, ``problem``,
    ``moved_to``), ``skipped_lines`` (``line``, ``offset``, ``kind``, ``problem``),
    ``torn_tail`` (``line``, ``offset``, ``bytes``), ``log_copy``, ``unfinished_turn``
    (``prompt``, ``started_at``, ``messages_dropped``, ``tools_run``), ``lost`` and ``details``.
    """

    #: The event's type tag: always ``"session_recovered"``.
    type: ClassVar[str] = "session_recovered"
    #: The notice for the user, one line per finding.
    message: str
    #: What was found and done.
    report: Dict[str, Any]

    @property
    def unfinished_prompt(self) -> Optional[str]:
        """The prompt whose turn never finished (send it again to redo it), if there is one."""
        turn = self.report.get("unfinished_turn")
        return None if turn is None else str(turn.get("prompt", ""))


@dataclass(slots=True)
class TodoItem:
    """One task of the agent's todo list."""

    #: What to do, in the imperative ("Run the tests").
    content: str
    #: ``"pending"``, ``"in_progress"`` or ``"completed"``.
    status: str
    #: The task in the present continuous, shown while it runs ("Running the tests").
    active_form: str

    @staticmethod
    def from_dict(d: Dict[str, Any]) -> "TodoItem":
        """One item of a ``todo_update`` event's ``todos`` list, as the engine serialized it
        (``content``, ``status``, ``active_form``); a missing key reads as ``""``."""
        return TodoItem(str(d.get("content", "")), str(d.get("status", "")), str(d.get("active_form", "")))


@dataclass(slots=True)
class TodoUpdateEvent(Event):
    """The agent's task list changed (a ``TodoWrite`` call succeeded): the whole new list, right
    after that call's ``tool_end``."""

    #: The event's type tag: always ``"todo_update"``.
    type: ClassVar[str] = "todo_update"
    #: The tasks, in order.
    todos: list[TodoItem]


@dataclass(slots=True)
class McpServerStatusEvent(Event):
    """An MCP server's status changed after the session started: it failed, reconnected, was
    enabled or disabled (:meth:`robota.InteractiveSession.list_mcp_servers` gives every server's
    status at any time)."""

    #: The event's type tag: always ``"mcp_server_status"``.
    type: ClassVar[str] = "mcp_server_status"
    #: The server's name.
    server: str
    #: ``"pending"``, ``"connected"``, ``"failed"``, ``"disabled"`` or ``"needs_auth"`` (a
    #: remote server that requires OAuth authorization robota does not have yet).
    state: str
    #: Why it failed, is disabled or needs authorization (``None`` otherwise).
    reason: Optional[str]


@dataclass(slots=True)
class SessionEvent(Event):
    """Any other session event (permission answers, hook messages, warnings, …)."""

    #: The event's type tag: always ``"session"``.
    type: ClassVar[str] = "session"
    #: The session event as the engine serialized it (its own ``type`` and fields).
    event: Dict[str, Any]


@dataclass(slots=True)
class UnknownEvent(Event):
    """An event type this version of the package does not know (``.type`` tells which)."""

    #: The type tag as received (also what ``.type`` returns).
    event_type: str = ""

    #: The type tag as received (the same as ``event_type``).
    type = property(lambda self: self.event_type)  # type: ignore[assignment,unused-ignore]


@dataclass(slots=True)
class GapEvent(Event):
    """Only from a :class:`robota.RemoteSession`'s event stream: the server no longer buffered
    the events after ``missed_after`` and before ``resumed_at`` (the reader fell too far behind,
    or resumed too late). Refresh what you show from ``get_full_history()`` / ``info()``.
    ``seq`` is ``resumed_at - 1``."""

    #: The event's type tag: always ``"gap"``.
    type: ClassVar[str] = "gap"
    #: The ``seq`` the stream resumed after.
    missed_after: int
    #: The first ``seq`` delivered after the gap.
    resumed_at: int


def _sid(d: Dict[str, Any]) -> str:
    return str(d.get("session_id", ""))


_FACTORIES: Dict[str, Callable[[Dict[str, Any]], Event]] = {
    "text_delta": lambda d: TextDeltaEvent(d["session_id"], d["seq"], d, d["text"]),
    "thinking": lambda d: ThinkingEvent(d["session_id"], d["seq"], d, d["text"]),
    "server_tool_use": lambda d: ServerToolUseEvent(
        d["session_id"], d["seq"], d, str(d.get("id", "")), str(d.get("name", "")), d.get("input")
    ),
    "server_tool_result": lambda d: ServerToolResultEvent(
        d["session_id"],
        d["seq"],
        d,
        str(d.get("tool_use_id", "")),
        str(d.get("result_type", "")),
        bool(d.get("is_error", False)),
    ),
    "tool_start": lambda d: ToolStartEvent(d["session_id"], d["seq"], d, ToolState.from_dict(d["tool"])),
    "tool_end": lambda d: ToolEndEvent(d["session_id"], d["seq"], d, ToolState.from_dict(d["tool"])),
    "permission_request": lambda d: PermissionRequestEvent(
        d["session_id"],
        d["seq"],
        d,
        d["request_id"],
        d["tool_name"],
        d.get("input"),
        d["tool_use_id"],
        d.get("reason", ""),
        d.get("permission_mode", "default"),
    ),
    "context_update": lambda d: ContextUpdateEvent(d["session_id"], d["seq"], d, d.get("state") or {}),
    "compaction": lambda d: CompactionEvent(
        d["session_id"], d["seq"], d, d.get("trigger", ""), d.get("tokens_before", 0), d.get("tokens_after", 0)
    ),
    "complete": lambda d: CompleteEvent(d["session_id"], d["seq"], d, d.get("outcome") or {}),
    "refused": lambda d: RefusedEvent(d["session_id"], d["seq"], d, d.get("outcome") or {}),
    "truncated": lambda d: TruncatedEvent(d["session_id"], d["seq"], d, d.get("outcome") or {}),
    "error": lambda d: ErrorEvent(
        d["session_id"], d["seq"], d, d.get("message", ""), dict(d.get("error") or {}), d.get("outcome")
    ),
    "interrupted": lambda d: InterruptedEvent(d["session_id"], d["seq"], d, d.get("outcome")),
    "skill_activation": lambda d: SkillActivationEvent(d["session_id"], d["seq"], d, d.get("data")),
    "background_task_event": lambda d: BackgroundTaskEvent(d["session_id"], d["seq"], d, d.get("data")),
    "session_recovered": lambda d: SessionRecoveredEvent(
        d["session_id"], d["seq"], d, d.get("message", ""), d.get("report") or {}
    ),
    "todo_update": lambda d: TodoUpdateEvent(
        d["session_id"], d["seq"], d, [TodoItem.from_dict(t) for t in d.get("todos") or []]
    ),
    "mcp_server_status": lambda d: McpServerStatusEvent(
        d["session_id"],
        d["seq"],
        d,
        str(d.get("server", "")),
        str((d.get("status") or {}).get("state", "")),
        (d.get("status") or {}).get("reason"),
    ),
    "session": lambda d: SessionEvent(d["session_id"], d["seq"], d, d.get("event") or {}),
}

#: The event types the engine emits.
EVENT_TYPES: frozenset[str] = frozenset(_FACTORIES)


def event_from_dict(d: Dict[str, Any]) -> Event:
    """The typed event for an engine event dict."""
    factory = _FACTORIES.get(d.get("type", ""))
    if factory is None:
        return UnknownEvent(_sid(d), int(d.get("seq", 0)), d, str(d.get("type", "")))
    return factory(d)
