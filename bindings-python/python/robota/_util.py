"""Internal helpers shared by the modules of the package."""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
import traceback
from typing import Any, Optional


def report_callback_error(what: str, exc: BaseException) -> None:
    """Reports an exception raised by a user callback without stopping the session: through the
    running loop's exception handler when there is one, else on stderr."""
    try:
        loop: Optional[asyncio.AbstractEventLoop] = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None:
        loop.call_exception_handler({"message": f"robota: {what} raised", "exception": exc})
    else:
        print(f"robota: {what} raised:", file=sys.stderr)
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)


async def maybe_await(value: Any) -> Any:
    """``await value`` if it is awaitable, else ``value``."""
    if inspect.isawaitable(value):
        return await value
    return value


def fspath(value: Any) -> Any:
    """``os.fspath`` for path-like values; anything else unchanged."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value
