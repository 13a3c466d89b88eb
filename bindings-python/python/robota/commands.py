"""Slash commands written in Python: subclass :class:`SystemCommand` (or use :func:`command`)
and group commands in a :class:`CommandModule` passed as ``command_modules=[...]``.

A command's ``execute(args, context)`` (sync or async) returns a :class:`CommandResult` or a
``str`` (a successful result with that message). Raising makes a failed result. Commands marked
``model_invocable`` are also offered to the model as ``robota_command_<name>`` tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union

from ._util import maybe_await

__all__ = ["SettingsScope", "CommandContext", "CommandResult", "SystemCommand", "CommandModule", "command"]


SettingsScope = Literal["localSettings", "projectSettings", "userSettings"]


@dataclass(frozen=True)
class CommandContext:
    """The session a command runs in: a snapshot of its state taken when the command starts,
    and async methods that act on the live session — the same facade the built-in commands use.

    The methods work only while the command runs; a context kept and used after the command
    returned raises :class:`robota.CommandError`. Host actions (switch the model, exit, open a
    picker) are not methods: return them as ``effects`` of the :class:`CommandResult`.
    """

    #: The session's id.
    session_id: str
    #: Its name, when it has one.
    session_name: Optional[str]
    #: Its permission mode when the command started.
    permission_mode: str
    #: Its model when the command started.
    model: Optional[str]
    #: Context window use when the command started (``used_tokens``, ``max_tokens``, ...).
    context_state: Dict[str, Any] = field(default_factory=dict)
    _native: Any = field(default=None, repr=False, compare=False)

    async def _call(self, op: Dict[str, Any]) -> Any:
        if self._native is None:
            raise RuntimeError("this CommandContext is a snapshot without a live session")
        return await self._native.call(op)

    async def state(self) -> Dict[str, Any]:
        """The live state: ``session_id``, ``session_name``, ``permission_mode``, ``model``,
        ``context_state``, ``usage``, ``invoked_by_model``, ``project_dir``."""
        result: Dict[str, Any] = await self._call({"op": "state"})
        return result

    async def history(self) -> List[Dict[str, Any]]:
        """The session's full history (chat messages and event entries)."""
        result: List[Dict[str, Any]] = await self._call({"op": "history"})
        return result

    async def commands(self) -> List[Dict[str, Any]]:
        """The descriptors of the user-invocable commands."""
        result: List[Dict[str, Any]] = await self._call({"op": "commands"})
        return result

    async def clear(self) -> None:
        """Clears the conversation (return the ``conversation_history_cleared`` effect so the
        host clears what it shows too)."""
        await self._call({"op": "clear"})

    async def compact(self, instructions: Optional[str] = None) -> Dict[str, Any]:
        """Compacts the conversation now; resolves with the summary (``removed_messages``, ...)."""
        op: Dict[str, Any] = {"op": "compact"}
        if instructions is not None:
            op["instructions"] = instructions
        result: Dict[str, Any] = await self._call(op)
        return result

    async def set_permission_mode(self, mode: str) -> None:
        """Changes the permission mode (``default``, ``plan``, ``acceptEdits``,
        ``bypassPermissions``, ``dontAsk``); an unknown mode raises ``InvalidArgumentError``."""
        await self._call({"op": "set_permission_mode", "mode": mode})

    async def set_session_name(self, name: str) -> None:
        """Renames the session."""
        await self._call({"op": "set_session_name", "name": name})

    async def run_subagent(
        self, prompt: str, agent_type: Optional[str] = None, isolation: Optional[str] = None
    ) -> Dict[str, Any]:
        """Runs a subagent to its final answer (needs the agent command module)."""
        op: Dict[str, Any] = {"op": "run_subagent", "prompt": prompt}
        if agent_type is not None:
            op["agent_type"] = agent_type
        if isolation is not None:
            op["isolation"] = isolation
        result: Dict[str, Any] = await self._call(op)
        return result

    async def read_settings(self, scope: SettingsScope = "localSettings") -> Dict[str, Any]:
        """One settings file as a dict (``{}`` when it does not exist)."""
        result: Dict[str, Any] = await self._call({"op": "read_settings", "scope": scope})
        return result

    async def update_settings(
        self, patch: Mapping[str, Any], scope: SettingsScope = "localSettings"
    ) -> str:
        """Applies a JSON merge patch (``None`` removes a key) to one settings file; returns
        the file's path."""
        result: Dict[str, Any] = await self._call(
            {"op": "update_settings", "scope": scope, "patch": dict(patch)}
        )
        return str(result["path"])

    async def switch_model(self, model: str) -> Dict[str, Any]:
        """Sends the session's later prompts to ``model`` on its provider; returns ``{model,
        context_window}`` (``context_window`` is ``None`` when the host applies model changes
        itself)."""
        result: Dict[str, Any] = await self._call({"op": "switch_model", "model": model})
        return result

    async def set_auto_compact(
        self, enabled: bool, threshold: Optional[float] = None
    ) -> Dict[str, Any]:
        """Turns the live session's automatic compaction on or off, optionally at
        ``threshold`` (a fraction of the context window in (0, 1]; anything else raises
        ``InvalidArgumentError``). Not saved in settings. Returns ``{enabled, threshold}``."""
        op: Dict[str, Any] = {"op": "set_auto_compact", "enabled": enabled}
        if threshold is not None:
            op["threshold"] = threshold
        result: Dict[str, Any] = await self._call(op)
        return result


@dataclass
class CommandResult:
    """What running a command produced."""

    #: Text for the user (or the model, through a projected tool).
    message: str
    #: False when the command failed; ``message`` says how to fix it.
    success: bool = True
    #: Command-specific structured payload.
    data: Any = None
    #: Host actions to apply (``[{"type": "session_renamed", "name": ...}, ...]``).
    effects: List[Dict[str, Any]] = field(default_factory=list)
    #: A follow-up question the host should ask.
    interaction: Optional[Dict[str, Any]] = None

    @staticmethod
    def error(message: str) -> "CommandResult":
        """A failed result."""
        return CommandResult(message=message, success=False)

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "CommandResult":
        """Builds a result from the engine's dict form."""
        return CommandResult(
            message=str(d.get("message", "")),
            success=bool(d.get("success", False)),
            data=d.get("data"),
            effects=list(d.get("effects") or []),
            interaction=d.get("interaction"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """The result as the engine reads it."""
        out: Dict[str, Any] = {"message": self.message, "success": self.success}
        if self.data is not None:
            out["data"] = self.data
        if self.effects:
            out["effects"] = list(self.effects)
        if self.interaction is not None:
            out["interaction"] = self.interaction
        return out


class SystemCommand:
    """Base class of a Python command. Set the class attributes and override :meth:`execute`."""

    #: Canonical, slash-free name.
    name: str = ""
    #: One line for palettes and help.
    description: str = ""
    #: Other names that resolve to this command.
    aliases: Sequence[str] = ()
    #: Argument grammar shown after the name, e.g. ``[mode]``.
    argument_hint: Optional[str] = None
    #: True when the model may run it (as ``robota_command_<name>``).
    model_invocable: bool = False
    #: True when users may run it.
    user_invocable: bool = True
    #: ``inline`` (runs even while a prompt executes) or ``blocking`` (refused while one runs).
    lifecycle: Literal["inline", "blocking", "background"] = "inline"

    def execute(self, args: str, context: CommandContext) -> Union[CommandResult, str, Awaitable[Union[CommandResult, str]]]:
        """Runs the command."""
        raise NotImplementedError(f"{type(self).__name__} must implement execute(args, context)")

    def descriptor(self) -> Dict[str, Any]:
        """The command's metadata as the engine reads it."""
        if not self.name:
            raise ValueError(f"{type(self).__name__} needs a `name`")
        d: Dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "aliases": list(self.aliases),
            "model_invocable": self.model_invocable,
            "user_invocable": self.user_invocable,
            "lifecycle": self.lifecycle,
        }
        if self.argument_hint is not None:
            d["argument_hint"] = self.argument_hint
        return d

    async def _robota_execute(self, request: Dict[str, Any], native: Any = None) -> Dict[str, Any]:
        # request: {"command", "args", "session_id", "session_name", "permission_mode", "model",
        # "context_state"}; native: the live context (robota::api::host::HostCommand)
        ctx = CommandContext(
            session_id=str(request.get("session_id", "")),
            session_name=request.get("session_name"),
            permission_mode=str(request.get("permission_mode", "default")),
            model=request.get("model"),
            context_state=dict(request.get("context_state") or {}),
            _native=native,
        )
        try:
            result = await maybe_await(self.execute(str(request.get("args", "")), ctx))
        except Exception as exc:
            return {"message": f"{type(exc).__name__}: {exc}", "success": False}
        if isinstance(result, str):
            return {"message": result, "success": True}
        if isinstance(result, CommandResult):
            return result.to_dict()
        return {
            "message": f"command `{self.name}` returned {type(result).__name__}; return a str or CommandResult",
            "success": False,
        }


class _FunctionCommand(SystemCommand):
    def __init__(self, func: Callable[[str, CommandContext], Any], **attrs: Any) -> None:
        self._func = func
        for key, value in attrs.items():
            setattr(self, key, value)

    def execute(self, args: str, context: CommandContext) -> Any:
        return self._func(args, context)


def command(
    name: str,
    description: str = "",
    *,
    aliases: Sequence[str] = (),
    argument_hint: Optional[str] = None,
    model_invocable: bool = False,
    lifecycle: Literal["inline", "blocking", "background"] = "inline",
) -> Callable[[Callable[[str, CommandContext], Any]], SystemCommand]:
    """Makes a command from a sync or async function ``f(args, context)``."""

    def wrap(func: Callable[[str, CommandContext], Any]) -> SystemCommand:
        return _FunctionCommand(
            func,
            name=name,
            description=description or (func.__doc__ or "").strip().split("\n")[0],
            aliases=tuple(aliases),
            argument_hint=argument_hint,
            model_invocable=model_invocable,
            lifecycle=lifecycle,
        )

    return wrap


class CommandModule:
    """A named group of commands."""

    def __init__(
        self,
        name: str,
        commands: Sequence[SystemCommand],
        *,
        source: Literal["builtin", "project", "user", "plugin"] = "project",
        plugin: Optional[str] = None,
    ) -> None:
        if source == "plugin" and not plugin:
            raise ValueError("a plugin command module needs `plugin=` (the plugin's name)")
        #: The module's name (shown with its commands).
        self.name = name
        #: Its commands.
        self.commands = list(commands)
        #: Where its commands say they come from.
        self.source = source
        #: The plugin's name, when ``source`` is ``"plugin"``.
        self.plugin = plugin

    def _to_native(self) -> Tuple[str, Dict[str, Any], List[Tuple[Dict[str, Any], Any]]]:
        source: Dict[str, Any] = {"kind": self.source}
        if self.source == "plugin":
            source["plugin"] = self.plugin
        commands = []
        for c in self.commands:
            if not isinstance(c, SystemCommand):
                raise TypeError(f"command module {self.name!r}: {c!r} is not a robota.SystemCommand")
            commands.append((c.descriptor(), c._robota_execute))
        return (self.name, source, commands)
