"""Session stores written in Python (`robota.SessionStore`): two real ones — in memory and over
the standard library's sqlite3 — pass robota's store conformance suite; a session saved in one
over mock-llm resumes in a new session with the same history and has one writer at a time; a
store that loses data fails the suite, and a store that raises reaches the user."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import pytest

import robota
from robota import AnthropicProvider, InteractiveSession, SessionStore, run_store_conformance, tool

from conftest import MockLlm


class MemoryStore(SessionStore):
    """Everything in dicts, guarded by one lock (robota calls from several threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.snapshots: Dict[str, Tuple[Dict[str, Any], bytes]] = {}
        self.logs: Dict[str, List[Tuple[int, bytes]]] = {}
        self.leases: Dict[str, Dict[str, Any]] = {}

    def put_snapshot(self, session_id: str, summary: Dict[str, Any], snapshot: bytes) -> None:
        with self.lock:
            self.snapshots[session_id] = (summary, snapshot)

    def get_snapshot(self, session_id: str) -> Optional[bytes]:
        with self.lock:
            entry = self.snapshots.get(session_id)
            return entry[1] if entry else None

    def list_snapshots(self) -> Sequence[Dict[str, Any]]:
        with self.lock:
            return [summary for summary, _ in self.snapshots.values()]

    def _length(self, session_id: str) -> Optional[int]:
        chunks = self.logs.get(session_id)
        if chunks is None:
            return None
        return chunks[-1][0] + len(chunks[-1][1]) if chunks else 0

    def append_log(self, session_id: str, start: int, lines: bytes) -> None:
        with self.lock:
            length = self._length(session_id) or 0
            if length != start:
                raise RuntimeError(f"the log is {length} bytes long, not {start}: another writer appended")
            self.logs.setdefault(session_id, []).append((start, lines))

    def read_log(self, session_id: str, start: int) -> Optional[Sequence[Tuple[int, bytes]]]:
        with self.lock:
            chunks = self.logs.get(session_id)
            return list(chunks) if chunks is not None else None

    def log_length(self, session_id: str) -> Optional[int]:
        with self.lock:
            return self._length(session_id)

    def list_logs(self) -> Sequence[Union[str, Dict[str, Any]]]:
        with self.lock:
            return list(self.logs)

    def delete_session(self, session_id: str) -> bool:
        with self.lock:
            found = self.snapshots.pop(session_id, None) is not None
            found = self.logs.pop(session_id, None) is not None or found
            self.leases.pop(session_id, None)
            return found

    def acquire_lease(
        self, session_id: str, lease: Dict[str, Any], replace_token: Optional[str]
    ) -> Optional[Dict[str, Any]]:
        with self.lock:
            held = self.leases.get(session_id)
            if held is not None and held["token"] != replace_token:
                return held
            self.leases[session_id] = lease
            return None

    def release_lease(self, session_id: str, token: str) -> None:
        with self.lock:
            if self.leases.get(session_id, {}).get("token") == token:
                del self.leases[session_id]


class Sqlite3Store(SessionStore):
    """A real database through the standard library: the summary as JSON beside the snapshot,
    log chunks keyed by their start offset, leases with a conditional write."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.lock = threading.Lock()
        self.db.executescript(
            """
            CREATE TABLE IF NOT EXISTS snapshots (id TEXT PRIMARY KEY, summary TEXT, body BLOB);
            CREATE TABLE IF NOT EXISTS chunks (id TEXT, start INTEGER, bytes BLOB, PRIMARY KEY (id, start));
            CREATE TABLE IF NOT EXISTS leases (id TEXT PRIMARY KEY, lease TEXT, token TEXT);
            """
        )

    def put_snapshot(self, session_id: str, summary: Dict[str, Any], snapshot: bytes) -> None:
        import json

        with self.lock:
            self.db.execute(
                "INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?)", (session_id, json.dumps(summary), snapshot)
            )

    def get_snapshot(self, session_id: str) -> Optional[bytes]:
        with self.lock:
            row = self.db.execute("SELECT body FROM snapshots WHERE id = ?", (session_id,)).fetchone()
        return bytes(row[0]) if row else None

    def list_snapshots(self) -> Sequence[Dict[str, Any]]:
        import json

        with self.lock:
            return [json.loads(s) for (s,) in self.db.execute("SELECT summary FROM snapshots")]

    def _length(self, session_id: str) -> Optional[int]:
        row = self.db.execute(
            "SELECT start + length(bytes) FROM chunks WHERE id = ? ORDER BY start DESC LIMIT 1", (session_id,)
        ).fetchone()
        return int(row[0]) if row else None

    def append_log(self, session_id: str, start: int, lines: bytes) -> None:
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                length = self._length(session_id) or 0
                if length != start:
                    raise RuntimeError(f"the log is {length} bytes long, not {start}: another writer appended")
                self.db.execute("INSERT INTO chunks VALUES (?, ?, ?)", (session_id, start, lines))
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def read_log(self, session_id: str, start: int) -> Optional[Sequence[Tuple[int, bytes]]]:
        with self.lock:
            rows = self.db.execute(
                "SELECT start, bytes FROM chunks WHERE id = ? AND start + length(bytes) > ? ORDER BY start",
                (session_id, start),
            ).fetchall()
            if not rows and self._length(session_id) is None:
                return None
        return [(int(s), bytes(b)) for s, b in rows]

    def log_length(self, session_id: str) -> Optional[int]:
        with self.lock:
            return self._length(session_id)

    def list_logs(self) -> Sequence[Union[str, Dict[str, Any]]]:
        with self.lock:
            return [{"id": i} for (i,) in self.db.execute("SELECT DISTINCT id FROM chunks")]

    def delete_session(self, session_id: str) -> bool:
        with self.lock:
            found = 0
            for table in ("snapshots", "chunks", "leases"):
                found += self.db.execute(f"DELETE FROM {table} WHERE id = ?", (session_id,)).rowcount
            return found > 0

    def acquire_lease(
        self, session_id: str, lease: Dict[str, Any], replace_token: Optional[str]
    ) -> Optional[Dict[str, Any]]:
        import json

        with self.lock:
            taken = self.db.execute(
                "INSERT INTO leases VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET lease = excluded.lease, "
                "token = excluded.token WHERE leases.token = ?",
                (session_id, json.dumps(lease), lease["token"], replace_token),
            ).rowcount
            if taken:
                return None
            row = self.db.execute("SELECT lease FROM leases WHERE id = ?", (session_id,)).fetchone()
            return dict(json.loads(row[0])) if row else None

    def release_lease(self, session_id: str, token: str) -> None:
        with self.lock:
            self.db.execute("DELETE FROM leases WHERE id = ? AND token = ?", (session_id, token))


def test_memory_and_sqlite3_stores_pass_the_conformance_suite(tmp_path: Path) -> None:
    for factory in (MemoryStore, lambda: Sqlite3Store(tmp_path / f"s{len(list(tmp_path.iterdir()))}.db")):
        checks = run_store_conformance(factory)
        assert len(checks) == 9
        failed = [c for c in checks if not c.passed]
        assert not failed, failed
        assert {c.check for c in checks} >= {"snapshot_round_trip", "a_second_writer_is_locked_out", "resume_is_snapshot_plus_log_tail"}


def test_a_store_that_loses_data_or_breaks_fails_the_suite() -> None:
    class Forgetful(MemoryStore):
        def put_snapshot(self, session_id: str, summary: Dict[str, Any], snapshot: bytes) -> None:
            pass

    checks = {c.check: c for c in run_store_conformance(Forgetful)}
    assert not checks["snapshot_round_trip"].passed
    assert "round trip" in (checks["snapshot_round_trip"].message or "")

    def raising() -> SessionStore:
        raise ConnectionError("no database")

    checks_list = run_store_conformance(raising)
    assert checks_list and all(not c.passed and "no database" in (c.message or "") for c in checks_list)

    bad: Any = lambda: object()  # noqa: E731
    assert all("robota.SessionStore" in (c.message or "") for c in run_store_conformance(bad))


@tool
def remember(fact: str) -> str:
    """Stores a fact."""
    return f"stored {fact}"


async def test_a_session_in_a_python_store_resumes_with_its_history(
    mock_llm: MockLlm, opts: Dict[str, Any], tmp_path: Path
) -> None:
    store = Sqlite3Store(tmp_path / "host.db")
    mock_llm.script(
        [
            {"tool_calls": [{"id": "t1", "name": "remember", "input": {"fact": "42"}}]},
            {"text": "Stored 42."},
            {"text": "You said 42."},
        ]
    )
    provider = AnthropicProvider("claude-test", api_key="sk-test", base_url=mock_llm.base_url, max_retries=0)
    async with InteractiveSession(
        provider=provider, session_store=store, tools=[remember], permission_mode="bypassPermissions", **opts
    ) as first:
        assert (await first.submit("Remember 42")).response == "Stored 42."
        first.name = "memory"
        session_id = first.session_id
        history = first.get_messages()
        # One writer at a time: the lease is in the host's database.
        with pytest.raises(robota.SessionLockedError):
            InteractiveSession(provider=provider, session_store=store, resume_session_id=session_id, **opts)
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]
    assert store.get_snapshot(session_id) is not None
    assert (store.log_length(session_id) or 0) > 0
    assert not (tmp_path / "work" / ".robota" / "logs").exists()
    # The lease was released at shutdown.
    assert store.db.execute("SELECT count(*) FROM leases").fetchone()[0] == 0

    async with InteractiveSession(
        provider=provider, session_store=store, resume_session_id=session_id, tools=[remember], **opts
    ) as resumed:
        assert resumed.get_messages() == history
        assert resumed.name == "memory"
        assert (await resumed.submit("What did I say?")).response == "You said 42."
        assert len(resumed.get_messages()) == 6
    # The resumed turn's request carried the whole history, tool call and result included.
    last = mock_llm.requests()[-1]["body"]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert last[1]["content"][0]["type"] == "tool_use"


async def test_a_store_that_raises_reaches_the_user(opts: Dict[str, Any]) -> None:
    class Down(MemoryStore):
        def get_snapshot(self, session_id: str) -> Optional[bytes]:
            raise ConnectionError("the database is down")

    with pytest.raises(robota.SessionError, match="the database is down"):
        InteractiveSession(
            provider=robota.ScriptedProvider([]), session_store=Down(), resume_session_id="abc", **opts
        )

    with pytest.raises(robota.InvalidArgumentError, match="persistence"):
        InteractiveSession(
            provider=robota.ScriptedProvider([]), session_store=MemoryStore(), persistence="project", **opts
        )
