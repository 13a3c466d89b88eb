"""``RemoteSession``: a session hosted by a ``robota serve`` server, with the surface of
:class:`robota.InteractiveSession` (submit, abort, events, commands, permissions) over HTTP +
Server-Sent Events. The protocol is implemented once, in Rust (crate ``robota-remote``); this
module only adapts it to Python.

Code written against a local session runs against a remote one by changing how the session is
made: the methods that are plain calls on a local session (``abort``, ``list_commands``,
``get_full_history``, ``get_context_state``, ``get_name``, ``set_name``, ``name``,
``is_executing``, ``get_pending_prompt``) are plain calls here too (each waits for the server's
answer, bounded by ``timeout``), and the coroutines (``submit``, ``execute_command``,
``shutdown``, …) are coroutines::

    async with await RemoteSession.create("http://127.0.0.1:7420", token=TOKEN) as session:
        result = await session.submit("Hello")
        print(session.get_context_state())
"""

from __future__ import annotations

import asyncio
import os
from types import TracebackType
from typing import Any, Dict, List, Optional, Type, Union

from . import _native
from .commands import CommandResult
from .events import Event, GapEvent, event_from_dict
from .permissions import DecisionLike, decision_to_dict
from .session import TurnResult
from .structured import OutputType, output_format as _output_format

PathLike = Union[str, "os.PathLike[str]"]

#: The default timeout of one call to the server, in seconds.
DEFAULT_TIMEOUT = 30.0


class RemoteEventStream:
    """``async for event in session.events()``: every event of the remote session from the
    moment the stream was opened, in order, as the same :class:`robota.Event` classes a local
    session delivers. A dropped connection is resumed where it stopped (no event lost); if the
    server no longer buffers the missed events a :class:`robota.GapEvent` says so. Ends when the
    session is closed on the server or on :meth:`close`; raises a
    :class:`robota.RemoteError` when the stream cannot be resumed (server gone, token refused).
    Also an async context manager that closes it."""

    def __init__(self, subscribing: "asyncio.Future[_native.NativeRemoteEvents]") -> None:
        self._subscribing = subscribing
        self._native: Optional[_native.NativeRemoteEvents] = None
        self._buffer: List[Dict[str, Any]] = []
        self._index = 0
        self._closed = False

    async def ready(self) -> None:
        """Waits until the stream is subscribed on the server (the session's prompts wait for
        this themselves, so no event of theirs is missed)."""
        if self._native is None:
            self._native = await self._subscribing

    @property
    def subscribed_after(self) -> Optional[int]:
        """The ``seq`` the stream started after (every event it delivers has a larger one);
        ``None`` until it is subscribed."""
        return None if self._native is None else self._native.subscribed_after

    def __aiter__(self) -> "RemoteEventStream":
        return self

    async def __anext__(self) -> Event:
        while True:
            if self._index < len(self._buffer):
                raw = self._buffer[self._index]
                self._index += 1
                kind = raw.get("type")
                if kind == "session_closed":
                    self.close()
                    raise StopAsyncIteration
                if kind == "gap":
                    return GapEvent(
                        str(raw.get("session_id", "")),
                        int(raw.get("seq", 0)),
                        raw,
                        int(raw.get("missed_after", 0)),
                        int(raw.get("resumed_at", 0)),
                    )
                return event_from_dict(raw)
            if self._closed:
                raise StopAsyncIteration
            await self.ready()
            assert self._native is not None
            self._buffer, self._index = [], 0
            self._buffer = await self._native.next_batch(1024, 0.25)

    def close(self) -> None:
        """Stops the stream; events not yet read are discarded."""
        if self._closed:
            return
        self._closed = True
        if self._native is not None:
            self._native.close()
        else:
            self._subscribing.add_done_callback(_close_when_subscribed)

    async def aclose(self) -> None:
        """Same as :meth:`close`."""
        self.close()

    async def __aenter__(self) -> "RemoteEventStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


def _close_when_subscribed(future: "asyncio.Future[_native.NativeRemoteEvents]") -> None:
    if not future.cancelled() and future.exception() is None:
        future.result().close()


class RemoteSession:
    """A session on a ``robota serve`` server. Make one with :meth:`create` (a new session, or
    a saved one resumed) or :meth:`connect` (one the server already hosts)::

        session = await RemoteSession.create(url, token=token, cwd="/path/to/project")
        result = await session.submit("Summarize README.md")

    Errors are the engine's classes where one fits (:class:`robota.QueueFullError`,
    :class:`robota.BusyError`, …) or a :class:`robota.RemoteError` subclass
    (:class:`robota.UnauthorizedError`, :class:`robota.NotFoundError`,
    :class:`robota.PathOutsideRootsError`, :class:`robota.RemoteConnectionError`); each has a
    ``code`` attribute with the protocol's error code."""

    def __init__(self, native: _native.NativeRemoteSession) -> None:
        """Internal: use :meth:`create` or :meth:`connect`."""
        self._native = native
        self._closed = False
        self._subscribing: List[RemoteEventStream] = []

    @staticmethod
    async def create(
        url: str,
        *,
        token: Optional[str] = None,
        cwd: Optional[PathLike] = None,
        name: Optional[str] = None,
        resume: Optional[str] = None,
        fork: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> "RemoteSession":
        """Creates a session on the server at ``url``: in the project folder ``cwd`` (default:
        the server's first root; it must be inside one of its ``--root`` folders), named
        ``name``; with ``resume``, the saved session of that id (``fork=True``: a copy of it).
        ``token`` is the server's bearer token; ``timeout`` bounds each call, in seconds."""
        request: Dict[str, Any] = {"fork": fork}
        if cwd is not None:
            request["cwd"] = os.fspath(cwd)
        if name is not None:
            request["name"] = name
        if resume is not None:
            request["resume"] = resume
        native = await _native.NativeRemoteSession.create(url, token, request, timeout)
        return RemoteSession(native)

    @staticmethod
    async def connect(
        url: str, session_id: str, *, token: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT
    ) -> "RemoteSession":
        """Attaches to the session ``session_id`` the server at ``url`` hosts."""
        native = await _native.NativeRemoteSession.connect(url, session_id, token, timeout)
        return RemoteSession(native)

    # -- prompts ---------------------------------------------------------------------------

    async def submit(
        self,
        input: str,
        *,
        display_input: Optional[str] = None,
        output_format: Optional[OutputType] = None,
    ) -> TurnResult:
        """Submits a prompt and waits until its run ends (as
        :meth:`robota.InteractiveSession.submit`). Cancelling the awaiting task cancels this
        prompt on the server. The returned :attr:`TurnResult.event` has ``seq`` 0: the server's
        answer does not carry it (the event stream does)."""
        if not isinstance(input, str):
            raise TypeError(f"input must be a str, not {type(input).__name__}")
        await self._streams_ready()
        value = await self._native.submit(
            input,
            display_input,
            _output_format(output_format) if output_format is not None else None,
        )
        return TurnResult._from_native(value)

    def abort(self) -> None:
        """Aborts the running prompt and drops the queued one (returns once the server has
        done so)."""
        self._native.abort()

    async def cancel_prompt(self, prompt_id: int) -> bool:
        """Cancels one prompt by id; False when it had already ended."""
        return bool(await self._native.cancel_prompt(prompt_id))

    # -- commands and state ----------------------------------------------------------------

    async def execute_command(self, name: str, args: str = "") -> CommandResult:
        """Runs a slash command (without the slash), e.g. ``execute_command("rename", "Chat")``."""
        await self._streams_ready()
        return CommandResult.from_dict(await self._native.execute_command(name, args))

    def list_commands(self) -> List[Dict[str, Any]]:
        """The commands users can run: ``[{"name", "module", "source", "descriptor"}]``."""
        return list(self._native.list_commands())

    def get_full_history(self) -> List[Dict[str, Any]]:
        """The full history (messages and event entries) as dicts."""
        return list(self._native.get_full_history())

    def get_messages(self) -> List[Dict[str, Any]]:
        """The conversation messages only (no event entries), as dicts."""
        return [
            dict(entry["data"])
            for entry in self.get_full_history()
            if entry.get("category") == "chat" and isinstance(entry.get("data"), dict)
        ]

    def get_context_state(self) -> Dict[str, Any]:
        """How full the context window is: ``used_tokens``, ``max_tokens``, ``ratio``,
        ``estimated``."""
        return dict(self._native.get_context_state())

    def info(self) -> Dict[str, Any]:
        """The session as the server reports it (``id``, ``name``, ``cwd``, ``executing``,
        ``pending_prompt``, ``last_seq``, ``pending_permissions``, …)."""
        return dict(self._native.info())

    def is_executing(self) -> bool:
        """Whether a prompt is running."""
        return bool(self.info().get("executing"))

    def get_pending_prompt(self) -> Optional[str]:
        """The queued prompt's text, if one waits."""
        pending = self.info().get("pending_prompt")
        return None if pending is None else str(pending)

    def get_name(self) -> Optional[str]:
        """The session's name."""
        return self._native.get_name()

    def set_name(self, name: Optional[str]) -> None:
        """Names the session (``None`` clears the name)."""
        self._native.set_name(name)

    @property
    def name(self) -> Optional[str]:
        """The session's name (assignable, like :attr:`robota.InteractiveSession.name`)."""
        return self.get_name()

    @name.setter
    def name(self, value: Optional[str]) -> None:
        self.set_name(value)

    @property
    def session_id(self) -> str:
        """The session id."""
        return self._native.session_id

    def get_session_id(self) -> str:
        """The session id."""
        return self._native.session_id

    # -- permissions -----------------------------------------------------------------------

    async def answer_permission(self, request_id: str, decision: DecisionLike) -> None:
        """Answers the permission request ``request_id`` (from a
        :class:`robota.PermissionRequestEvent` or :meth:`pending_permissions`) with
        :func:`robota.allow`, :func:`robota.allow_session`, :func:`robota.allow_always` or
        :func:`robota.deny` (or True/False)."""
        await self._native.answer_permission(request_id, decision_to_dict(decision))

    async def pending_permissions(self) -> List[Dict[str, Any]]:
        """The permission requests waiting for an answer, as dicts."""
        return list(await self._native.pending_permissions())

    # -- events ----------------------------------------------------------------------------

    def events(self, after: Optional[int] = None) -> RemoteEventStream:
        """A stream of the session's events: from now on, or (``after``) those after that
        ``seq`` the server still buffers (``0``: all of them). Prompts and commands sent after
        this call wait until the stream is subscribed, so it sees all their events::

            async with session.events() as stream:
                async for event in stream: ...
        """
        stream = RemoteEventStream(self._native.subscribe(after))
        self._subscribing.append(stream)
        return stream

    async def _streams_ready(self) -> None:
        """Waits for the streams being subscribed (their own failures surface when they are
        read)."""
        while self._subscribing:
            stream = self._subscribing.pop()
            try:
                await stream.ready()
            except _native.RobotaError:
                pass

    # -- lifetime --------------------------------------------------------------------------

    async def fork(self, name: Optional[str] = None) -> "RemoteSession":
        """Copies the session on the server into a new hosted session and returns it."""
        return RemoteSession(await self._native.fork(name))

    async def shutdown(self, reason: Optional[str] = None) -> None:
        """Same as :meth:`close` (the name a local session's method has); ``reason`` is
        accepted for that reason and not sent — the server records its own."""
        del reason
        await self.close()

    async def close(self) -> None:
        """Closes the session on the server: its work is aborted, it is saved, and it is no
        longer hosted (event streams end). Calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        # Streams opened before see the session end.
        await self._streams_ready()
        await self._native.close()

    async def __aenter__(self) -> "RemoteSession":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"RemoteSession(id={self.session_id!r})"
