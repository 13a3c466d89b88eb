"""Permission handling: the request a handler gets, the decisions it can return, and
:func:`evaluate_permission` (the rule engine as a pure function).

A permission handler is a sync or async callable ``handler(request) -> decision`` where the
decision is :func:`allow`, :func:`allow_session`, :func:`allow_always` or :func:`deny` (``True``
/ ``False`` and the strings ``"allow"``, ``"allow_session"``, ``"allow_always"``, ``"deny"`` also
work). A handler that raises denies the call (and the exception is reported).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, List, Literal, Mapping, Optional, Sequence, Union

from . import _native
from ._util import maybe_await, report_callback_error

__all__ = [
    "PermissionMode",
    "PermissionRequest",
    "PermissionDecision",
    "PermissionHandler",
    "allow",
    "allow_session",
    "allow_always",
    "deny",
    "evaluate_permission",
]

#: A settings file "allow always" writes to.
SettingsDestination = Literal["localSettings", "projectSettings", "userSettings"]

#: The permission modes (Claude Code's names): ``"default"`` asks for anything no rule allows,
#: ``"acceptEdits"`` also allows file edits in the project, ``"plan"`` is read-only,
#: ``"dontAsk"`` denies what is not pre-approved instead of asking, ``"bypassPermissions"``
#: allows everything (the OS sandbox is then on for Bash).
PermissionMode = Literal["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"]


@dataclass(frozen=True)
class PermissionRequest:
    """A tool call waiting for the host's decision."""

    #: Unique within the session (also in the ``permission_request`` event).
    request_id: str
    #: The tool.
    tool_name: str
    #: Its arguments.
    input: Any
    #: The provider's id of the call.
    tool_use_id: str
    #: Why approval is needed, in words a person can act on.
    reason: str
    #: The session's permission mode.
    permission_mode: str
    #: Rules that would approve calls like this one (used by allow_session/allow_always).
    suggested_rules: List[str] = field(default_factory=list)
    #: Settings files "allow always" can write to (``[{"destination", "path"}]``).
    settings_targets: List[Dict[str, Any]] = field(default_factory=list)
    #: The request as the engine sent it.
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "PermissionRequest":
        """Builds a request from its dict form."""
        return PermissionRequest(
            request_id=str(d.get("request_id", "")),
            tool_name=str(d.get("tool_name", "")),
            input=d.get("input"),
            tool_use_id=str(d.get("tool_use_id", "")),
            reason=str(d.get("reason", "")),
            permission_mode=str(d.get("permission_mode", "default")),
            suggested_rules=list(d.get("suggested_rules") or []),
            settings_targets=list(d.get("settings_targets") or []),
            raw=dict(d),
        )


@dataclass(frozen=True)
class PermissionDecision:
    """A permission handler's answer. Make one with :func:`allow`, :func:`allow_session`,
    :func:`allow_always`, :func:`allow_with_input` or :func:`deny`."""

    #: ``allow_once``, ``allow_session``, ``allow_always``, ``allow_with_input`` or ``deny``.
    type: Literal["allow_once", "allow_session", "allow_always", "allow_with_input", "deny"]
    #: Allow rules to remember (empty: the request's suggested rules).
    rules: Sequence[str] = ()
    #: For ``allow_always``: the settings file to save the rules to.
    destination: Optional[SettingsDestination] = None
    #: For ``deny``: what the model is told (empty: a standard message).
    message: str = ""
    #: For ``allow_with_input``: the arguments the tool runs with instead of the model's.
    input: Optional[Mapping[str, Any]] = None

    def to_dict(self) -> Dict[str, Any]:
        """The decision as the engine reads it."""
        if self.type == "allow_once":
            return {"type": "allow_once"}
        if self.type == "allow_session":
            return {"type": "allow_session", "rules": list(self.rules)}
        if self.type == "allow_always":
            return {
                "type": "allow_always",
                "rules": list(self.rules),
                "destination": self.destination or "localSettings",
            }
        if self.type == "allow_with_input":
            answer: Dict[str, Any] = {
                "type": "allow_with_input",
                "input": dict(self.input or {}),
                "rules": list(self.rules),
            }
            if self.destination is not None:
                answer["destination"] = self.destination
            return answer
        return {"type": "deny", "message": self.message}


def allow() -> PermissionDecision:
    """Run this call only."""
    return PermissionDecision("allow_once")


def allow_session(rules: Sequence[str] = ()) -> PermissionDecision:
    """Run it and allow matching calls for the rest of the session (``rules`` default to the
    request's suggested rules)."""
    return PermissionDecision("allow_session", rules=tuple(rules))


def allow_always(
    destination: SettingsDestination = "localSettings", rules: Sequence[str] = ()
) -> PermissionDecision:
    """Run it, allow matching calls for the session and save the rules to a settings file."""
    return PermissionDecision("allow_always", rules=tuple(rules), destination=destination)


def allow_with_input(
    input: Mapping[str, Any],
    rules: Sequence[str] = (),
    destination: Optional[SettingsDestination] = None,
) -> PermissionDecision:
    """Run it with ``input`` instead of the model's arguments (the Claude Agent SDK's
    ``updatedInput``). The new input is checked against the deny rules first; ``rules`` are
    also allowed for the session, and saved to ``destination`` when one is given."""
    if not isinstance(input, Mapping):
        raise TypeError(f"allow_with_input needs the tool's input as a dict, not {input!r}")
    return PermissionDecision(
        "allow_with_input", rules=tuple(rules), destination=destination, input=dict(input)
    )


def deny(message: str = "") -> PermissionDecision:
    """Do not run it; ``message`` is what the model is told."""
    return PermissionDecision("deny", message=message)


DecisionLike = Union[PermissionDecision, bool, str, Mapping[str, Any]]

#: A permission handler: sync or async.
PermissionHandler = Callable[[PermissionRequest], Union[DecisionLike, Awaitable[DecisionLike]]]

_STRINGS: Dict[str, Dict[str, Any]] = {
    "allow": {"type": "allow_once"},
    "allow_once": {"type": "allow_once"},
    "allow_session": {"type": "allow_session", "rules": []},
    "allow_always": {"type": "allow_always", "rules": [], "destination": "localSettings"},
    "deny": {"type": "deny", "message": ""},
}


def decision_to_dict(decision: Any) -> Dict[str, Any]:
    """The engine's form of anything a handler may return."""
    if isinstance(decision, PermissionDecision):
        return decision.to_dict()
    if decision is True:
        return {"type": "allow_once"}
    if decision is False or decision is None:
        return {"type": "deny", "message": ""}
    if isinstance(decision, str) and decision in _STRINGS:
        known: Dict[str, Any] = dict(_STRINGS[decision])
        return known
    if isinstance(decision, Mapping) and "type" in decision:
        return dict(decision)
    raise TypeError(
        "a permission handler must return allow(), allow_session(), allow_always(), "
        f"allow_with_input(input) or deny(message) (or True/False), not {decision!r}"
    )


def permission_adapter(handler: PermissionHandler) -> Callable[[Dict[str, Any]], Awaitable[Dict[str, Any]]]:
    """The async adapter the engine calls for ``handler``."""
    if not callable(handler):
        raise TypeError("permission_handler must be callable: handler(request) -> decision")

    async def adapter(request: Dict[str, Any]) -> Dict[str, Any]:
        try:
            decision = await maybe_await(handler(PermissionRequest.from_dict(request)))
            return decision_to_dict(decision)
        except Exception as exc:
            report_callback_error("the permission handler", exc)
            return {"type": "deny", "message": f"The permission handler failed ({type(exc).__name__}: {exc}); the call was denied."}

    return adapter


def evaluate_permission(
    tool: str,
    input: Optional[Mapping[str, Any]] = None,
    *,
    cwd: Union[str, "os.PathLike[str]"],
    mode: PermissionMode = "default",
    allow: Sequence[str] = (),
    ask: Sequence[str] = (),
    deny: Sequence[str] = (),
    home: Optional[Union[str, "os.PathLike[str]"]] = None,
    context: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """Decides whether ``tool`` may run with ``input``, without a session. Returns
    ``{"decision": "allow"|"ask"|"deny", "reason": ..., "matched_rule": ..., ...}``.

    ``allow``/``ask``/``deny`` are Claude Code permission rules (``"Bash(git *)"``, ``"Read"``).
    ``context`` (advanced) is merged over the permission context built from the other arguments.
    """
    rules = [
        {"rule": rule, "list": name, "index": index, "source": {"label": "sdk"}}
        for name, rule_list in (("allow", allow), ("ask", ask), ("deny", deny))
        for index, rule in enumerate(rule_list)
    ]
    ctx: Dict[str, Any] = {"mode": mode, "cwd": os.fspath(os.path.abspath(cwd)), "rules": rules}
    if home is not None:
        ctx["home"] = os.fspath(home)
    if context:
        ctx.update(context)
    return _native.evaluate_permission(tool, dict(input or {}), ctx)
