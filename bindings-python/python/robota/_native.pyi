"""Type stubs of the compiled module ``robota._native`` (internal: use the ``robota`` package)."""

from typing import Any, Awaitable, Dict, List, Optional

__version__: str
#: The prompt that asks the model to go on with an answer cut off at the output token limit.
CONTINUE_PROMPT: str
#: How that prompt is shown in the history.
CONTINUE_DISPLAY_INPUT: str

class RobotaError(Exception):
    """Base class of every error robota raises."""

class InvalidArgumentError(RobotaError):
    """An argument is out of range, names something unknown, or is missing."""

class InvalidJsonError(RobotaError):
    """A configuration or data value is malformed or has the wrong shape."""

class ProviderError(RobotaError):
    """The provider could not be created or a model call failed."""

class SessionError(RobotaError):
    """The session refused or failed the request."""

class SessionLockedError(SessionError):
    """The saved session is open for writing elsewhere; the message names the holder."""

class QueueFullError(RobotaError):
    """A prompt is already queued; only one may wait."""

class BusyError(RobotaError):
    """The request cannot run while a prompt is executing."""

class ShutDownError(RobotaError):
    """The session was shut down."""

class CommandError(RobotaError):
    """A slash command is unknown, ambiguous or failed."""

class RobotaInternalError(RobotaError):
    """A bug in robota."""

class NativeStream:
    """Where a Python provider streams events while a model call runs."""

    def send(self, event: Dict[str, Any]) -> None:
        """Sends one event (``{"type": "text_delta" | "thinking_delta" | "tool_call" | "usage", ...}``)."""

class NativeEvents:
    """A pull subscription to a session's events."""

    def next_batch(self, max: int = 1024, timeout: float = 3600.0) -> Awaitable[Optional[List[Dict[str, Any]]]]: ...
    def drain(self, max: int = 1024) -> List[Dict[str, Any]]: ...
    def close(self) -> None: ...

class NativeSession:
    """The native half of ``robota.InteractiveSession``."""

    def __init__(
        self,
        config: Dict[str, Any],
        provider: Any,
        tools: List[Any],
        permission_handler: Optional[Any],
        hooks: List[Any],
        command_modules: List[Any],
        builtin_commands: bool,
        event_buffer: Optional[int],
    ) -> None: ...
    def submit(
        self, input: str, display_input: Optional[str] = None, raw_input: Optional[str] = None
    ) -> Awaitable[Dict[str, Any]]: ...
    def abort(self) -> None: ...
    def cancel_queue(self) -> Optional[str]: ...
    def wait_idle(self) -> Awaitable[None]: ...
    def execute_command(self, name: str, args: str) -> Awaitable[Dict[str, Any]]: ...
    def list_commands(self) -> List[Dict[str, Any]]: ...
    def list_skills(self) -> List[Dict[str, Any]]: ...
    def list_plugins(self) -> Dict[str, Any]: ...
    def shutdown(self, reason: Optional[str] = None) -> Awaitable[None]: ...
    def compact(self, instructions: Optional[str] = None) -> Awaitable[Dict[str, Any]]: ...
    def is_executing(self) -> bool: ...
    def get_pending_prompt(self) -> Optional[str]: ...
    def get_messages(self) -> List[Dict[str, Any]]: ...
    def get_full_history(self) -> List[Dict[str, Any]]: ...
    def get_context_state(self) -> Dict[str, Any]: ...
    def get_recovery_report(self) -> Optional[Dict[str, Any]]: ...
    def get_warnings(self) -> List[Dict[str, Any]]: ...
    def sandbox_status(self) -> Dict[str, Any]: ...
    def get_streaming_text(self) -> str: ...
    def get_active_tools(self) -> List[Dict[str, Any]]: ...
    def get_name(self) -> Optional[str]: ...
    def set_name(self, name: Optional[str]) -> None: ...
    def get_session_id(self) -> str: ...
    def is_shut_down(self) -> bool: ...
    def get_permission_mode(self) -> str: ...
    def subscribe(self) -> NativeEvents: ...

class NativeQuery:
    """The native half of ``robota.create_query``."""

    def __init__(
        self,
        config: Dict[str, Any],
        provider: Any,
        tools: List[Any],
        permission_handler: Optional[Any],
        hooks: List[Any],
        allowed_tools: List[str],
        disallowed_tools: List[str],
        on_text_delta: Optional[Any],
    ) -> None: ...
    def query(self, prompt: str) -> Awaitable[Dict[str, Any]]: ...
    def abort(self) -> None: ...
    def get_session_id(self) -> str: ...

def at_exit() -> None:
    """Stops the engine's threads from re-entering Python (registered with ``atexit``)."""

def evaluate_permission(tool: str, input: Any, context: Dict[str, Any]) -> Dict[str, Any]: ...
