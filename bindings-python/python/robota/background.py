"""Background tasks of a session (Bash with ``run_in_background``, background subagents): typed
snapshots returned by :meth:`robota.InteractiveSession.list_background_tasks` and friends, and
the report of a subagent (:meth:`robota.InteractiveSession.run_subagent`). Their lifecycle also
arrives as ``background_task_event`` events (``data["event"] == "state_changed"``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Literal, Mapping, Optional

__all__ = ["BackgroundTask", "BackgroundTaskLogPage", "BackgroundTaskStatus", "SubagentReport"]

#: Where a task stands; ``lost`` is a task that was running when an earlier run of a resumed
#: session ended.
BackgroundTaskStatus = Literal[
    "queued", "running", "waiting_permission", "completed", "failed", "cancelled", "lost"
]


@dataclass(frozen=True)
class BackgroundTask:
    """One background task as it was when read."""

    #: ``bash_1``, ``bash_2``, … (unique within the session, also across resumes).
    id: str
    #: ``process`` (a shell command) or ``agent``.
    kind: str
    #: Who started it: ``{"kind": "tool" | "command" | "host", "name"?, "tool_use_id"?}``.
    origin: Dict[str, Any]
    #: The command line as given (for a subagent, its prompt).
    command: str
    #: A short description (Bash's ``description``), when one was given.
    description: Optional[str]
    #: Where it runs.
    cwd: str
    #: The shell's pid, also its process group id.
    pid: Optional[int]
    #: Where it stands (see :data:`BackgroundTaskStatus`).
    status: BackgroundTaskStatus
    #: The exit code, once the process exited.
    exit_code: Optional[int]
    #: The signal that ended the process, if one did.
    signal: Optional[int]
    #: Why it failed, was cancelled or was lost.
    error: Optional[str]
    #: ``max_runtime`` or ``idle`` when a watchdog ended it.
    timeout_reason: Optional[str]
    #: What it is doing now, when its runner says (a subagent's current tool).
    current_action: Optional[str]
    #: The file receiving its stdout (the full output).
    stdout_path: str
    #: The file receiving its stderr.
    stderr_path: str
    #: Bytes of output so far (both streams).
    output_bytes: int
    #: When it was started, in milliseconds since the Unix epoch.
    created_at_ms: int
    #: When it ended, in milliseconds since the Unix epoch; ``None`` while it runs.
    ended_at_ms: Optional[int]

    @property
    def is_running(self) -> bool:
        """True while it is queued or running."""
        return self.status in ("queued", "running", "waiting_permission")

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "BackgroundTask":
        """Builds a task from the engine's dict form."""
        return BackgroundTask(
            id=str(d["id"]),
            kind=str(d.get("kind", "process")),
            origin=dict(d.get("origin") or {}),
            command=str(d.get("command", "")),
            description=d.get("description"),
            cwd=str(d.get("cwd", "")),
            pid=d.get("pid"),
            status=d["status"],
            exit_code=d.get("exit_code"),
            signal=d.get("signal"),
            error=d.get("error"),
            timeout_reason=d.get("timeout_reason"),
            current_action=d.get("current_action"),
            stdout_path=str(d.get("stdout_path", "")),
            stderr_path=str(d.get("stderr_path", "")),
            output_bytes=int(d.get("output_bytes") or 0),
            created_at_ms=int(d.get("created_at_ms") or 0),
            ended_at_ms=d.get("ended_at_ms"),
        )


@dataclass(frozen=True)
class BackgroundTaskLogPage:
    """A page of a task's output file; read on from ``next_offset`` until it equals
    ``total_bytes``."""

    #: The task.
    task_id: str
    #: Which of its output files.
    stream: Literal["stdout", "stderr"]
    #: The output file.
    path: str
    #: The byte offset this page starts at.
    offset: int
    #: Where the next page starts.
    next_offset: int
    #: The file's size when this page was read.
    total_bytes: int
    #: The page's text (invalid UTF-8 replaced).
    text: str

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "BackgroundTaskLogPage":
        """Builds a page from the engine's dict form."""
        return BackgroundTaskLogPage(
            task_id=str(d["task_id"]),
            stream=d["stream"],
            path=str(d["path"]),
            offset=int(d["offset"]),
            next_offset=int(d["next_offset"]),
            total_bytes=int(d["total_bytes"]),
            text=str(d["text"]),
        )


@dataclass(frozen=True)
class SubagentReport:
    """What a subagent run produced (:meth:`robota.InteractiveSession.run_subagent`)."""

    #: The run's id (``agent_id`` in hook inputs).
    agent_id: str
    #: The agent definition used.
    agent_type: str
    #: The model it ran on.
    model: str
    #: Its final answer.
    response: str
    #: Why the child run ended (``end_turn``, ``max_turns``, ``error``, …).
    stop_reason: str
    #: True when it was aborted.
    interrupted: bool
    #: Model calls it made.
    rounds: int
    #: Tools it ran, in order.
    tools_executed: List[str]
    #: The model error, when the run ended on one.
    error: Optional[str]
    #: Things worth knowing (a permission mode capped by the session's, unknown tools, …).
    notes: List[str]
    #: Its transcript (JSONL), when the session keeps a log.
    transcript_path: Optional[str]
    #: The worktree of an isolated run: ``{"path", "branch"?, "disposition", …}``.
    worktree: Optional[Dict[str, Any]]

    @property
    def ok(self) -> bool:
        """True when it finished without an error or an interruption."""
        return not self.interrupted and self.error is None

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "SubagentReport":
        """Builds a report from the engine's dict form."""
        return SubagentReport(
            agent_id=str(d["agent_id"]),
            agent_type=str(d["agent_type"]),
            model=str(d.get("model", "")),
            response=str(d.get("response", "")),
            stop_reason=str(d.get("stop_reason", "")),
            interrupted=bool(d.get("interrupted", False)),
            rounds=int(d.get("rounds") or 0),
            tools_executed=[str(t) for t in d.get("tools_executed") or []],
            error=d.get("error"),
            notes=[str(n) for n in d.get("notes") or []],
            transcript_path=d.get("transcript_path"),
            worktree=d.get("worktree"),
        )
