"""Hook callbacks: Python functions run on hook events (``PreToolUse``, ``PostToolUse``,
``UserPromptSubmit``, ``SessionStart``, ``SessionEnd``, ``Stop``, …) exactly like hooks from
settings files.

A callback is sync or async, gets the hook input as a dict (``hook_event_name``, ``session_id``,
``tool_name``, ``tool_input``, …) and returns ``None`` (carry on), a ``str`` (context text), a
dict (Claude Code hook JSON output, e.g. ``{"decision": "block", "reason": ...}``) or a
:class:`HookResult`. An exception counts as a failed (non-blocking) hook.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ._native import InvalidArgumentError
from ._util import maybe_await

__all__ = ["Hook", "HookResult", "HookCallback", "HooksLike"]

#: A hook callback: sync or async.
HookCallback = Callable[[Dict[str, Any]], Any]


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
    """A callback for ``event`` on tools matching ``matcher`` (Claude Code matcher syntax:
    ``"*"`` for all, ``"Edit|Write"``, a regex)."""

    event: str
    callback: HookCallback
    matcher: str = "*"
    #: Seconds before the hook is abandoned (the event's default when ``None``).
    timeout: Optional[float] = None
    #: A label for events and logs.
    name: Optional[str] = None


#: What ``hooks=`` accepts: a list of :class:`Hook`, or ``{event: callback | [callbacks]}``.
HooksLike = Union[Sequence[Hook], Mapping[str, Union[HookCallback, Sequence[Union[HookCallback, Hook]]]]]


def _result_to_dict(value: Any) -> Dict[str, Any]:
    if value is None or value is True:
        return {"type": "continue"}
    if isinstance(value, HookResult):
        return value.to_dict()
    if isinstance(value, str):
        return {"type": "text", "text": value}
    if isinstance(value, Mapping):
        return {"type": "output", "output": dict(value)}
    raise TypeError(f"a hook must return None, str, dict or HookResult, not {type(value).__name__}")


def _adapter(callback: HookCallback) -> Callable[[Dict[str, Any]], Awaitable[Dict[str, Any]]]:
    async def adapter(hook_input: Dict[str, Any]) -> Dict[str, Any]:
        try:
            return _result_to_dict(await maybe_await(callback(hook_input)))
        except Exception as exc:
            return {"type": "error", "message": f"{type(exc).__name__}: {exc}"}

    return adapter


def hooks_to_native(hooks: Optional[HooksLike]) -> List[Tuple[Dict[str, Any], Any]]:
    """The native form: ``(spec, adapter)`` pairs, ``spec`` being
    ``{"event", "matcher", "timeout_ms"?, "name"}``."""
    if not hooks:
        return []
    items: List[Hook] = []
    if isinstance(hooks, Mapping):
        for event, value in hooks.items():
            callbacks: Sequence[Any] = value if isinstance(value, (list, tuple)) else [value]
            for cb in callbacks:
                items.append(cb if isinstance(cb, Hook) else Hook(event, cb))
    else:
        for h in hooks:
            if not isinstance(h, Hook):
                raise TypeError("hooks must be a list of robota.Hook or a dict {event: callback}")
            items.append(h)
    out: List[Tuple[Dict[str, Any], Any]] = []
    for h in items:
        if not callable(h.callback):
            raise TypeError(f"the hook callback for {h.event} is not callable")
        spec: Dict[str, Any] = {
            "event": h.event,
            "matcher": h.matcher,
            "name": h.name or str(getattr(h.callback, "__name__", "callback")),
        }
        if h.timeout is not None:
            timeout = float(h.timeout)
            if not (math.isfinite(timeout) and timeout > 0):
                raise InvalidArgumentError(
                    f"a hook timeout must be a positive number of seconds, not {h.timeout}"
                )
            spec["timeout_ms"] = max(1, round(timeout * 1000))
        out.append((spec, _adapter(h.callback)))
    return out
