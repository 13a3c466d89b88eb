"""Custom tools: the :func:`tool` decorator and :class:`Tool`.

A tool is a sync or async Python function. Its JSON schema comes from the type hints and the
docstring (Google-style ``Args:`` section for parameter descriptions), or is given explicitly.
A sync tool runs in a worker thread (``asyncio.to_thread``) so it cannot block the event loop;
an async tool runs on the session's event loop. An exception becomes an error result the model
sees (``"ValueError: ..."``) and is logged on the ``robota`` logger with its traceback; the
session keeps going. Returning :meth:`ToolResult.error` (or a dict
``{"content": ..., "is_error": True}``) is an error result too.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import inspect
import json
import logging
import re
import typing
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union, overload

from ._util import maybe_await

_logger = logging.getLogger("robota")

__all__ = [
    "Tool",
    "ToolContext",
    "ToolResult",
    "tool",
    "schema_from_function",
    "SdkMcpServer",
    "create_sdk_mcp_server",
]


@dataclass(frozen=True)
class ToolContext:
    """What a tool may ask for besides its input: declare a parameter annotated ``ToolContext``."""

    #: The provider's id of this call.
    tool_use_id: str
    #: The session's working directory.
    cwd: str


@dataclass
class ToolResult:
    """A tool's answer when a plain return value is not enough."""

    #: Text for the model.
    content: str
    #: True when the call failed; the model sees the content as an error.
    is_error: bool = False
    #: Structured result for hooks and hosts (default: the content).
    response: Any = None

    @staticmethod
    def error(message: str) -> "ToolResult":
        """A failed result; ``message`` tells the model what went wrong and how to fix the call."""
        return ToolResult(content=message, is_error=True)


_PRIMITIVES: Dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _json_type(annotation: Any) -> Tuple[Dict[str, Any], bool]:
    """The JSON schema of an annotation, and whether it allows ``None``."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}, False
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Union or (origin is not None and getattr(origin, "__name__", "") == "UnionType"):
        non_none = [a for a in args if a is not type(None)]
        optional = len(non_none) != len(args)
        if len(non_none) == 1:
            schema, _ = _json_type(non_none[0])
            return schema, optional
        return {"anyOf": [_json_type(a)[0] for a in non_none]}, optional
    if str(origin) == "typing.Literal" or origin is typing.Literal:
        values = list(args)
        literal: Dict[str, Any] = {"enum": values}
        kinds = {type(v) for v in values}
        if len(kinds) == 1 and next(iter(kinds)) in _PRIMITIVES:
            literal["type"] = _PRIMITIVES[next(iter(kinds))]
        return literal, False
    if annotation in _PRIMITIVES:
        return {"type": _PRIMITIVES[annotation]}, False
    if annotation is type(None):
        return {"type": "null"}, True
    if inspect.isclass(annotation) and issubclass(annotation, enum.Enum):
        return {"enum": [m.value for m in annotation]}, False
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple, set, frozenset):
        array: Dict[str, Any] = {"type": "array"}
        if args and args[0] is not Ellipsis:
            array["items"] = _json_type(args[0])[0]
        return array, False
    if origin in (dict, Mapping) or annotation in (dict, Mapping) or origin is typing.Mapping:
        return {"type": "object"}, False
    if typing.is_typeddict(annotation):
        hints = typing.get_type_hints(annotation)
        return {
            "type": "object",
            "properties": {k: _json_type(v)[0] for k, v in hints.items()},
            "required": sorted(getattr(annotation, "__required_keys__", hints.keys())),
        }, False
    return {}, False


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters)\s*:\s*$")
_SECTION = re.compile(r"^\s*[A-Z][A-Za-z ]*:\s*$")
_PARAM = re.compile(r"^\s*\*{0,2}(\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: Optional[str]) -> Tuple[str, Dict[str, str]]:
    """The summary (text before the first section) and the ``Args:`` descriptions."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: List[str] = []
    params: Dict[str, str] = {}
    i = 0
    while i < len(lines) and not _SECTION.match(lines[i]):
        summary.append(lines[i])
        i += 1
    current: Optional[str] = None
    in_args = False
    for line in lines[i:]:
        if _ARGS_HEADER.match(line):
            in_args, current = True, None
            continue
        if _SECTION.match(line):
            in_args, current = False, None
            continue
        if not in_args:
            continue
        m = _PARAM.match(line)
        if m and (len(line) - len(line.lstrip())) <= 4:
            current = m.group(1)
            params[current] = m.group(3).strip()
        elif current and line.strip():
            params[current] = (params[current] + " " + line.strip()).strip()
    return "\n".join(summary).strip(), params


def schema_from_function(func: Callable[..., Any]) -> Tuple[Dict[str, Any], str, Optional[str]]:
    """The input JSON schema and description of ``func`` from its signature, type hints and
    docstring, plus the name of its :class:`ToolContext` parameter (if any)."""
    signature = inspect.signature(func)
    try:
        hints = typing.get_type_hints(func)
    except Exception:
        hints = {}
    description, docs = _parse_docstring(func.__doc__)
    properties: Dict[str, Any] = {}
    required: List[str] = []
    context_param: Optional[str] = None
    for name, param in signature.parameters.items():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        annotation = hints.get(name, param.annotation)
        if annotation is ToolContext:
            context_param = name
            continue
        schema, optional = _json_type(annotation)
        schema = dict(schema)
        if name in docs and docs[name]:
            schema["description"] = docs[name]
        if param.default is not inspect.Parameter.empty:
            default = param.default
            if default is None or isinstance(default, (str, int, float, bool, list, dict)):
                schema["default"] = default
        elif not optional:
            required.append(name)
        properties[name] = schema
    input_schema: Dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    return input_schema, description, context_param


def _to_result(value: Any) -> Any:
    """The tool's answer as the engine reads it: a :class:`ToolResult` as
    ``{"content", "is_error", "response"?}``, ``None`` / ``str`` / JSON data as they are (the
    engine treats a ``{"content": ..., "is_error": True}`` dict as an error result and any other
    data as its JSON text), anything else as its ``str``."""
    if isinstance(value, ToolResult):
        result: Dict[str, Any] = {"content": value.content, "is_error": value.is_error}
        if value.response is not None:
            result["response"] = value.response
        return result
    if value is None or isinstance(value, str):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return str(value)


class Tool:
    """A tool backed by a Python function; usually made with :func:`tool`. Calling the tool
    object calls the function."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        input_schema: Optional[Mapping[str, Any]] = None,
        read_only: bool = False,
        replaces_builtin: bool = False,
        mutates_files: Sequence[str] = (),
        annotations: Optional[Mapping[str, Any]] = None,
        input_as_dict: bool = False,
    ) -> None:
        if not callable(func):
            raise TypeError("a tool needs a function")
        schema, doc_description, context_param = schema_from_function(func)
        #: The function a call runs.
        self.func = func
        #: The name the model calls.
        self.name: str = name or str(getattr(func, "__name__", "tool"))
        #: What the tool does, for the model.
        self.description: str = description if description is not None else doc_description
        #: JSON Schema of the input object.
        self.input_schema: Dict[str, Any] = dict(input_schema) if input_schema is not None else schema
        #: True when the tool changes nothing (no approval needed).
        self.read_only: bool = read_only
        #: True when the tool takes the place of the built-in tool of the same name (a tool
        #: named like a built-in without it is refused when the session is created).
        self.replaces_builtin: bool = replaces_builtin
        #: Input fields holding paths of files a call creates, changes or deletes: the session
        #: saves those files first, so ``restore_edit_checkpoint`` can undo the change.
        self.mutates_files: List[str] = list(mutates_files)
        #: MCP annotations (``{"readOnlyHint": True, "title": ...}``) when the tool is served by
        #: an in-process MCP server (:func:`create_sdk_mcp_server`).
        self.annotations: Dict[str, Any] = dict(annotations) if annotations is not None else {}
        #: True when the function takes the whole input as one dict (the Claude Agent SDK's
        #: ``@tool("name", "description", schema)`` form) instead of keyword arguments.
        self.input_as_dict: bool = input_as_dict
        self._context_param = None if input_as_dict else context_param
        self._is_async = inspect.iscoroutinefunction(func)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, read_only={self.read_only})"

    async def _robota_call(self, request: Dict[str, Any]) -> Any:
        # request: {"tool", "input", "tool_use_id", "cwd"} (robota::api::host::HostTool)
        input = request.get("input")
        try:
            if not isinstance(input, dict):
                raise TypeError(f"the tool input must be a JSON object, got {type(input).__name__}")
            if self.input_as_dict:
                if self._is_async:
                    value = await self.func(dict(input))
                else:
                    value = await maybe_await(await asyncio.to_thread(self.func, dict(input)))
                return _to_result(value)
            kwargs = dict(input)
            if self._context_param:
                kwargs[self._context_param] = ToolContext(
                    tool_use_id=str(request.get("tool_use_id", "")), cwd=str(request.get("cwd", ""))
                )
            if self._is_async:
                value = await self.func(**kwargs)
            else:
                value = await asyncio.to_thread(self.func, **kwargs)
                value = await maybe_await(value)
            return _to_result(value)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the model sees the failure and can react
            message = str(exc)
            text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
            # The developer sees it too (with the traceback), not only the model.
            _logger.warning("tool %r raised %s", self.name, text, exc_info=exc)
            return {"content": text, "is_error": True}


F = TypeVar("F", bound=Callable[..., Any])


@overload
def tool(func: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    name: str,
    description: str,
    input_schema: Mapping[str, Any],
    /,
    *,
    annotations: Optional[Mapping[str, Any]] = None,
) -> Callable[[Callable[[Dict[str, Any]], Any]], Tool]: ...


@overload
def tool(
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    input_schema: Optional[Mapping[str, Any]] = None,
    read_only: bool = False,
    replaces_builtin: bool = False,
    mutates_files: Sequence[str] = (),
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    func: Union[Callable[..., Any], str, None] = None,
    sdk_description: Optional[str] = None,
    sdk_schema: Optional[Mapping[str, Any]] = None,
    /,
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    input_schema: Optional[Mapping[str, Any]] = None,
    read_only: bool = False,
    replaces_builtin: bool = False,
    mutates_files: Sequence[str] = (),
    annotations: Optional[Mapping[str, Any]] = None,
) -> Union[Tool, Callable[[Callable[..., Any]], Tool]]:
    """Makes a tool from a sync or async function::

        @tool
        def get_weather(city: str, unit: Literal["C", "F"] = "C") -> str:
            '''Looks up the weather of a city.

            Args:
                city: The city name.
                unit: Temperature unit.
            '''
            return "sunny, 21C"

    ``@tool(name=..., description=..., input_schema=..., read_only=True)`` overrides what is
    derived from the function; ``replaces_builtin=True`` lets a tool take the name of a built-in
    one (``Read``, ``Bash``, …) on purpose. ``mutates_files=["path"]`` names the input fields
    holding files a call changes, so edit checkpoints can rewind them. The name (1-64 letters, digits, ``_``, ``-``) and the
    schema are checked when the session is created.

    The Claude Agent SDK's form, for tools of an in-process MCP server
    (:func:`create_sdk_mcp_server`), is accepted too: the function takes the input as one dict
    and may answer MCP content blocks::

        @tool("add", "Adds two numbers", {"a": float, "b": float})
        async def add(args):
            return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]}

    The schema is a JSON Schema or a mapping of names to Python types (all required);
    ``annotations={"readOnlyHint": True}`` marks a read-only tool.
    """
    if isinstance(func, str):
        sdk_name = func

        def wrap_sdk(f: Callable[..., Any]) -> Tool:
            hints = dict(annotations or {})
            return Tool(
                f,
                name=sdk_name,
                description=sdk_description if sdk_description is not None else (description or ""),
                input_schema=_sdk_schema(sdk_schema if sdk_schema is not None else (input_schema or {})),
                read_only=read_only or hints.get("readOnlyHint") is True,
                annotations=hints,
                input_as_dict=True,
            )

        return wrap_sdk

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool(
            f,
            name=name,
            description=description,
            input_schema=input_schema,
            read_only=read_only,
            replaces_builtin=replaces_builtin,
            mutates_files=mutates_files,
            annotations=annotations,
        )

    if func is not None:
        return wrap(func)
    return wrap


def _sdk_schema(schema: Mapping[str, Any]) -> Dict[str, Any]:
    """A JSON Schema as it is; a mapping of names to Python types (``{"a": float}``) as an
    object schema requiring every name, as the Claude Agent SDK reads it."""
    if isinstance(schema.get("type"), str):
        return dict(schema)
    properties = {name: _json_type(kind)[0] for name, kind in schema.items()}
    return {"type": "object", "properties": properties, "required": list(properties)}


class SdkMcpServer:
    """An MCP server whose tools are Python functions, run inside the session's process (the
    Claude Agent SDK's SDK server). Made by :func:`create_sdk_mcp_server`; give it in
    ``mcp_servers={"name": server}`` beside configured servers. Its tools reach the model as
    ``mcp__<name>__<tool>`` (the key of ``mcp_servers`` is the name), and permission rules and
    hook matchers treat them like any MCP server's."""

    def __init__(self, name: str, version: str, tools: Sequence[Tool]) -> None:
        for t in tools:
            if not isinstance(t, Tool):
                raise TypeError(f"tools must be decorated with @robota.tool; got {t!r}")
        #: The server's name.
        self.name = name
        #: The version it reports.
        self.version = version
        #: Its tools.
        self.tools: List[Tool] = list(tools)

    def __repr__(self) -> str:
        return f"SdkMcpServer(name={self.name!r}, tools={[t.name for t in self.tools]!r})"

    def _to_native(self, name: str) -> "_NativeMcpServer":
        return _NativeMcpServer(name, self)


class _NativeMcpServer:
    """What the native session reads for one in-process server: ``(name, version, [(spec,
    call)])`` in ``_robota_mcp_server`` (specs as ``robota::api::HostMcpToolSpec``)."""

    def __init__(self, name: str, server: SdkMcpServer) -> None:
        tools = []
        for t in server.tools:
            annotations = dict(t.annotations)
            if t.read_only:
                annotations.setdefault("readOnlyHint", True)
            spec = {
                "name": t.name,
                "description": t.description,
                "input_schema": t.input_schema,
                "annotations": annotations or None,
            }
            tools.append((spec, t._robota_call))
        self._robota_mcp_server = (name, server.version, tools)


def create_sdk_mcp_server(name: str, version: str = "1.0.0", tools: Optional[Sequence[Tool]] = None) -> SdkMcpServer:
    """An in-process MCP server serving ``tools`` (functions decorated with :func:`tool`)::

        server = create_sdk_mcp_server("calc", "1.0.0", tools=[add])
        InteractiveSession(provider=..., mcp_servers={"calc": server})

    A handler's exception is a tool error the model sees (and is logged); the session goes
    on. A name shared with a configured server is refused when the session is created."""
    return SdkMcpServer(name, version, list(tools or ()))
