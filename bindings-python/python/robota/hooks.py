"""Hook callbacks: Python functions run on hook events (``PreToolUse``, ``PostToolUse``,
``UserPromptSubmit``, ``SessionStart``, ``SessionEnd``, ``Stop``, …) exactly like hooks from
settings files.

A callback is sync or async, gets the hook input as a dict (``hook_event_name``, ``session_id``,
``tool_name``, ``tool_input``, …) and returns:

- ``None``: carry on;
- a ``str``: context text (for ``UserPromptSubmit`` and ``SessionStart``);
- a dict of Claude Code hook JSON output, e.g. ``{"decision": "block", "reason": "..."}`` or
  ``{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
  "permissionDecisionReason": "..."}}``;
- a :class:`HookResult`.

**Failures fail closed where the hook guards a tool call.** A ``PreToolUse`` or
``PermissionRequest`` callback that raises, has the wrong signature, times out or returns
something unrecognised (another type, an unknown field such as ``"decison"``) *blocks* the call,
with the hook's name and the failure as the reason the model sees. Elsewhere the failure is
reported and the action goes ahead. Either way it is logged on the ``robota`` logger (a warning,
printed on stderr unless logging is configured) and sent as a ``hook_error`` session event.
``Hook(..., on_failure="allow")`` lets calls through when the hook fails;
``on_failure="block"`` on ``UserPromptSubmit`` rejects the prompt when it fails.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import (
    Any,
    Awaitable,
    Callable,
    Dict,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from ._native import InvalidArgumentError
from ._util import maybe_await

__all__ = ["Hook", "HookResult", "HookCallback", "HooksLike", "HookEventName", "OnFailure"]

#: A hook callback: sync or async, ``callback(hook_input: dict) -> answer``.
HookCallback = Callable[[Dict[str, Any]], Any]

#: The hook events, as in Claude Code's settings.
HookEventName = Literal[
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "Notification",
    "WorktreeCreate",
    "WorktreeRemove",
]

#: What a hook's failure does: ``"block"`` refuses the guarded action (the default on
#: ``PreToolUse`` and ``PermissionRequest``), ``"allow"`` lets it go ahead (the default
#: elsewhere).
OnFailure = Literal["block", "allow"]


@dataclass(frozen=True)
class HookResult:
    """An explicit hook answer."""

    #: ``continue``, ``text``, ``output``, ``block`` or ``error``.
    type: str
    #: The text (``text``), reason (``block``) or message (``error``).
    value: str = ""
    #: The structured output (``output``).
    output: Optional[Dict[str, Any]] = None

    @staticmethod
    def proceed() -> "HookResult":
        """Nothing to say."""
        return HookResult("continue")

    @staticmethod
    def text(text: str) -> "HookResult":
        """Plain text (context for UserPromptSubmit and SessionStart)."""
        return HookResult("text", text)

    @staticmethod
    def block(reason: str) -> "HookResult":
        """Block; ``reason`` is shown to the model or the user depending on the event."""
        return HookResult("block", reason)

    @staticmethod
    def with_output(output: Mapping[str, Any]) -> "HookResult":
        """Structured output (Claude Code hook JSON)."""
        return HookResult("output", output=dict(output))

    def to_dict(self) -> Dict[str, Any]:
        """The answer as the engine reads it."""
        if self.type == "text":
            return {"type": "text", "text": self.value}
        if self.type == "block":
            return {"type": "block", "reason": self.value}
        if self.type == "error":
            return {"type": "error", "message": self.value}
        if self.type == "output":
            return {"type": "output", "output": self.output or {}}
        return {"type": "continue"}


@dataclass(frozen=True)
class Hook:
    """A callback for ``event`` on tools matching ``matcher``."""

    #: The hook event (``"PreToolUse"``, ``"UserPromptSubmit"``, … as in Claude Code).
    event: str
    #: ``callback(hook_input) -> answer``, sync or async (see the module docs for the answers).
    callback: HookCallback
    #: Claude Code matcher syntax: ``"*"`` for all tools, ``"Edit|Write"``, a regex.
    matcher: str = "*"
    #: Seconds before the hook is abandoned (the event's default when ``None``); a timeout counts
    #: as a failure.
    timeout: Optional[float] = None
    #: The hook's name in messages, events and logs (default: the function's name).
    name: Optional[str] = None
    #: What a failure does: ``"block"`` (the default on ``PreToolUse`` and ``PermissionRequest``;
    #: allowed on ``UserPromptSubmit`` too) or ``"allow"``.
    on_failure: Optional[OnFailure] = None


#: What ``hooks=`` accepts: a list of :class:`Hook`, or a dict ``{event: entries}`` where the
#: entries are a callback, a :class:`Hook`, or a list of callbacks, :class:`Hook`\ s and Claude
#: Agent SDK style matchers ``{"matcher": "Bash", "hooks": [callback, ...], "timeout": 30}``.
HooksLike = Union[Sequence[Hook], Mapping[str, Any]]


def _answer(value: Any) -> Any:
    """The callback's answer as the engine reads it (the engine decides what it means)."""
    if isinstance(value, HookResult):
        return value.to_dict()
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (list, tuple)):
        return list(value)
    return {
        "type": "error",
        "message": (
            f"returned a value of type {type(value).__name__}; a hook returns None, a str, a dict "
            "of Claude Code hook JSON (e.g. {'decision': 'block', 'reason': ...}) or a robota.HookResult"
        ),
    }


def _adapter(callback: HookCallback) -> Callable[[Dict[str, Any]], Awaitable[Any]]:
    async def adapter(hook_input: Dict[str, Any]) -> Any:
        try:
            return _answer(await maybe_await(callback(hook_input)))
        except Exception as exc:
            message = str(exc)
            return {
                "type": "error",
                "message": f"raised {type(exc).__name__}: {message}" if message else f"raised {type(exc).__name__}",
            }

    return adapter


def _hooks_of(event: str, value: Any) -> List[Hook]:
    """The hooks one ``{event: value}`` entry of the dict form stands for."""
    entries: Sequence[Any] = value if isinstance(value, (list, tuple)) else [value]
    out: List[Hook] = []
    for entry in entries:
        if isinstance(entry, Hook):
            if entry.event != event:
                raise InvalidArgumentError(
                    f"hooks[{event!r}] holds a Hook for {entry.event!r}; put it under its own event"
                )
            out.append(entry)
        elif isinstance(entry, Mapping):
            callbacks = entry.get("hooks")
            if not isinstance(callbacks, (list, tuple)):
                raise InvalidArgumentError(
                    f"hooks[{event!r}]: a matcher entry is {{'matcher': ..., 'hooks': [callback, ...]}}, "
                    f"not {dict(entry)!r}"
                )
            unknown = set(entry) - {"matcher", "hooks", "timeout", "on_failure"}
            if unknown:
                raise InvalidArgumentError(
                    f"hooks[{event!r}]: unknown matcher key(s) {sorted(unknown)} "
                    "(expected matcher, hooks, timeout, on_failure)"
                )
            for cb in callbacks:
                out.append(
                    Hook(
                        event,
                        cb,
                        matcher=str(entry.get("matcher") or "*"),
                        timeout=entry.get("timeout"),
                        on_failure=entry.get("on_failure"),
                    )
                )
        else:
            out.append(Hook(event, entry))
    return out


def hooks_to_native(hooks: Optional[HooksLike]) -> List[Tuple[Dict[str, Any], Any]]:
    """The native form: ``(spec, adapter)`` pairs, ``spec`` being
    ``{"event", "matcher", "timeout_ms"?, "name", "on_failure"?}`` (the engine checks it)."""
    if not hooks:
        return []
    items: List[Hook] = []
    if isinstance(hooks, Mapping):
        for event, value in hooks.items():
            items.extend(_hooks_of(str(event), value))
    else:
        for h in hooks:
            if not isinstance(h, Hook):
                raise TypeError(
                    "hooks must be a list of robota.Hook or a dict {event: callback | [callbacks]}, "
                    f"not a list holding {type(h).__name__}"
                )
            items.append(h)
    out: List[Tuple[Dict[str, Any], Any]] = []
    for h in items:
        name = h.name or str(getattr(h.callback, "__name__", "callback"))
        if not callable(h.callback):
            raise TypeError(f"hook {name!r} for {h.event}: the callback is not callable")
        spec: Dict[str, Any] = {"event": h.event, "matcher": h.matcher, "name": name}
        if h.timeout is not None:
            timeout = float(h.timeout)
            if not (math.isfinite(timeout) and timeout > 0):
                raise InvalidArgumentError(
                    f"hook {name!r}: the timeout must be a positive number of seconds, not {h.timeout}"
                )
            spec["timeout_ms"] = max(1, round(timeout * 1000))
        if h.on_failure is not None:
            spec["on_failure"] = h.on_failure
        out.append((spec, _adapter(h.callback)))
    return out
