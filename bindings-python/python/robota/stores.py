"""Session stores of your own: keep robota's sessions in your database, object store or cache.

Subclass :class:`SessionStore`, implement its ten methods over your storage, and pass an instance
as ``InteractiveSession(..., session_store=MyStore())``. robota builds resume (snapshot plus the
log after it), crash recovery, fork and listing on top of them, exactly as for its own file and
SQLite stores. Check a store with :func:`run_store_conformance` — the same suite the built-in
stores pass.

What a store keeps, per session id:

- one **snapshot** (``bytes``, replaced whole) and its **summary** (a ``dict`` of the session's
  header fields — id, name, cwd, created_at, updated_at, provider, model, message_count, usage…;
  listing reads only these, so keep them where they are cheap to read);
- a **log** made of chunks: each append is one chunk of complete JSON lines and the byte offset it
  starts at. Append only when the log is exactly ``start`` bytes long and raise otherwise — that
  is what keeps two writers of one session from interleaving;
- at most one **lease** (a ``dict`` with a ``token``), taken with a compare-and-set.

The methods are plain functions, not coroutines: robota calls them from its own threads. Raise
any exception to report a failure; its message reaches the user.
"""

import abc
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import _native

__all__ = ["SessionStore", "StoreCheck", "run_store_conformance"]


class SessionStore(abc.ABC):
    """Where sessions are saved, implemented by you (see the module documentation)."""

    @abc.abstractmethod
    def put_snapshot(self, session_id: str, summary: Dict[str, Any], snapshot: bytes) -> None:
        """Replaces the snapshot of ``session_id`` with ``snapshot`` (all of it, atomically: a
        reader sees the old one or the new one) and keeps ``summary`` for
        :meth:`list_snapshots`."""

    @abc.abstractmethod
    def get_snapshot(self, session_id: str) -> Optional[bytes]:
        """The snapshot of ``session_id``, ``None`` when there is none."""

    @abc.abstractmethod
    def list_snapshots(self) -> Sequence[Dict[str, Any]]:
        """The summaries kept with every snapshot, in any order."""

    @abc.abstractmethod
    def append_log(self, session_id: str, start: int, lines: bytes) -> None:
        """Appends ``lines`` to the log of ``session_id`` as a chunk starting at byte ``start``
        — only when the log is exactly ``start`` bytes long now (``0``: no log yet). Otherwise
        raise: another writer appended."""

    @abc.abstractmethod
    def read_log(self, session_id: str, start: int) -> Optional[Sequence[Tuple[int, bytes]]]:
        """The chunks ``(start, lines)`` of the log of ``session_id``, in order, at least from
        the one holding byte ``start`` to the end (returning all of them is correct); ``None``
        when there is no log."""

    @abc.abstractmethod
    def log_length(self, session_id: str) -> Optional[int]:
        """The log's length in bytes (the end of its last chunk), ``None`` when there is no
        log."""

    @abc.abstractmethod
    def list_logs(self) -> Sequence[Union[str, Dict[str, Any]]]:
        """The sessions that have a log: ids, or ``{"id": ..., "updated_at": <RFC 3339>}``."""

    @abc.abstractmethod
    def delete_session(self, session_id: str) -> bool:
        """Removes the snapshot, log and lease of ``session_id``; ``False`` when there was
        nothing."""

    @abc.abstractmethod
    def acquire_lease(
        self, session_id: str, lease: Dict[str, Any], replace_token: Optional[str]
    ) -> Optional[Dict[str, Any]]:
        """Takes the writer lease of ``session_id`` for ``lease`` when none is held, or when the
        held one's ``"token"`` equals ``replace_token`` (robota replaces the lease of a process
        that is gone): store ``lease`` and return ``None``. Otherwise return the held lease
        unchanged. Do it atomically (one transaction, a conditional write)."""

    @abc.abstractmethod
    def release_lease(self, session_id: str, token: str) -> None:
        """Removes the lease of ``session_id`` if its ``"token"`` is ``token`` (a lease another
        writer took over stays)."""


@dataclass(frozen=True)
class StoreCheck:
    """One check of :func:`run_store_conformance`."""

    check: str
    """The check's name (``snapshot_round_trip``, ``a_second_writer_is_locked_out``, …)."""
    passed: bool
    """Whether the store passed it."""
    message: Optional[str]
    """What differed, when it failed."""


def run_store_conformance(factory: Callable[[], SessionStore]) -> List[StoreCheck]:
    """Runs robota's store conformance suite on your store: each check gets a fresh, empty store
    from ``factory()`` and the list says which passed (the checks that need a second process —
    a killed lease holder, a session written by another process — are run only on the built-in
    stores). Blocks while it runs (a few seconds); call it from a test, not from an event loop
    that must stay responsive."""

    def checked() -> SessionStore:
        store = factory()
        if not isinstance(store, SessionStore):
            raise TypeError(f"the factory must return a robota.SessionStore, not {type(store).__name__}")
        return store

    return [
        StoreCheck(check=str(o["check"]), passed=bool(o["passed"]), message=o.get("message"))
        for o in _native.run_store_conformance(checked)
    ]
