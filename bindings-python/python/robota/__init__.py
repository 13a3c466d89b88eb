"""robota — an embeddable agent engine, asyncio-first.

Quick start::

    import asyncio
    from robota import InteractiveSession, ScriptedProvider

    async def main() -> None:
        async with InteractiveSession(provider=ScriptedProvider(["Hello!"])) as session:
            session.on("text_delta", lambda e: print(e.text, end=""))
            result = await session.submit("Hi")
            print("\\n->", result.status)

    asyncio.run(main())
"""

import atexit as _atexit

from ._native import __version__ as _native_version
from ._native import at_exit as _at_exit
from .background import BackgroundTask, BackgroundTaskLogPage, BackgroundTaskStatus, SubagentReport
from .commands import CommandContext, CommandModule, CommandResult, SystemCommand, command
from .errors import (
    BusyError,
    CommandError,
    InvalidArgumentError,
    InvalidJsonError,
    NotFoundError,
    PathOutsideRootsError,
    ProviderError,
    QueueFullError,
    RemoteConnectionError,
    RemoteError,
    RobotaError,
    RobotaInternalError,
    SessionError,
    SessionLockedError,
    ShutDownError,
    StructuredOutputError,
    UnauthorizedError,
)
from .events import (
    EVENT_TYPES,
    BackgroundTaskEvent,
    CompactionEvent,
    CompleteEvent,
    ContextUpdateEvent,
    ErrorEvent,
    Event,
    GapEvent,
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
    TodoItem,
    TodoUpdateEvent,
    McpServerStatusEvent,
    ToolEndEvent,
    ToolStartEvent,
    TruncatedEvent,
    ToolState,
    UnknownEvent,
    event_from_dict,
)
from .hooks import Hook, HookEventName, HookResult, OnFailure
from .permissions import (
    PermissionDecision,
    PermissionMode,
    PermissionRequest,
    allow,
    allow_always,
    allow_session,
    allow_with_input,
    deny,
    evaluate_permission,
)
from .providers import (
    AnthropicProvider,
    ProfileProvider,
    ProfileProviderType,
    BuiltinProvider,
    OpenAIProvider,
    Provider,
    ProviderResponse,
    ReplayProvider,
    ScriptedProvider,
    ToolCall,
)
from .models import LongPromptPrice, ModelInfo, ModelPrice, get_model_info, list_models
from .remote import RemoteEventStream, RemoteSession
from .query import Query, QueryResult, create_query, run_query
from .sandbox import SandboxGuarantees, SandboxNetwork, SandboxStatus
from .stores import SessionStore, StoreCheck, run_store_conformance
from .session import ConfigWarning, EventStream, EventType, InteractiveSession, TurnResult
from .structured import OutputType, json_schema_of, output_format, parse_structured_output
from .tools import SdkMcpServer, Tool, ToolContext, ToolResult, create_sdk_mcp_server, tool

__version__: str = _native_version
"""The package's version (the version of the robota crates it is built from)."""

# Before the interpreter finalizes, stop the engine's threads from re-entering Python.
_atexit.register(_at_exit)

__all__ = [
    "__version__",
    # session
    "InteractiveSession",
    "TurnResult",
    "EventStream",
    "EventType",
    "ConfigWarning",
    # remote sessions (`robota serve`)
    "RemoteSession",
    "RemoteEventStream",
    "BackgroundTask",
    "BackgroundTaskLogPage",
    "BackgroundTaskStatus",
    "SubagentReport",
    "SandboxStatus",
    "SandboxGuarantees",
    "SandboxNetwork",
    # session stores
    "SessionStore",
    "StoreCheck",
    "run_store_conformance",
    # query
    "create_query",
    "run_query",
    "Query",
    "QueryResult",
    # structured output
    "OutputType",
    "output_format",
    "json_schema_of",
    "parse_structured_output",
    # providers
    "AnthropicProvider",
    "ProfileProvider",
    "ProfileProviderType",
    "OpenAIProvider",
    "ScriptedProvider",
    "ReplayProvider",
    "Provider",
    "BuiltinProvider",
    "ProviderResponse",
    "ToolCall",
    # tools
    "tool",
    "Tool",
    "ToolContext",
    "ToolResult",
    "create_sdk_mcp_server",
    "SdkMcpServer",
    # model catalog
    "get_model_info",
    "list_models",
    "ModelInfo",
    "ModelPrice",
    "LongPromptPrice",
    # permissions
    "PermissionRequest",
    "PermissionDecision",
    "PermissionMode",
    "allow",
    "allow_session",
    "allow_always",
    "allow_with_input",
    "deny",
    "evaluate_permission",
    # hooks
    "Hook",
    "HookResult",
    "HookEventName",
    "OnFailure",
    # commands
    "SystemCommand",
    "CommandModule",
    "CommandResult",
    "CommandContext",
    "command",
    # events
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
    # errors
    "RobotaError",
    "InvalidArgumentError",
    "InvalidJsonError",
    "ProviderError",
    "SessionError",
    "SessionLockedError",
    "QueueFullError",
    "BusyError",
    "ShutDownError",
    "CommandError",
    "StructuredOutputError",
    "RobotaInternalError",
    "RemoteError",
    "UnauthorizedError",
    "NotFoundError",
    "PathOutsideRootsError",
    "RemoteConnectionError",
]
