"""Internal: schedules host callbacks (tools, permission handler, hooks, commands, providers)
from the engine's threads onto the session's asyncio event loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any, Awaitable, Callable, Sequence


def schedule(
    loop: asyncio.AbstractEventLoop,
    func: Callable[..., Awaitable[Any]],
    args: Sequence[Any],
    done: Callable[[concurrent.futures.Future[Any]], None],
) -> concurrent.futures.Future[Any]:
    """Runs ``func(*args)`` on ``loop`` and calls ``done(future)`` when it finishes."""
    coro = func(*args)
    try:
        future: concurrent.futures.Future[Any] = asyncio.run_coroutine_threadsafe(coro, loop)  # type: ignore[arg-type]
    except BaseException:
        close = getattr(coro, "close", None)
        if close is not None:
            close()
        raise
    future.add_done_callback(done)
    return future


def set_result(future: "asyncio.Future[Any]", ok: bool, value: Any) -> None:
    """Completes ``future`` (on its loop) unless it was cancelled meanwhile."""
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)
