"""Type tests: code a user could write by mistake must fail ``mypy --strict`` (a wrong event name
in ``on()``, a field the event does not have, a listener for another event, an unknown permission
mode or hook failure policy), and the right code must pass. Each snippet is checked on its own."""

from __future__ import annotations

import os
import tempfile
from typing import List, Tuple

import pytest
from mypy import api

PRELUDE = """\
from typing import Any, Dict
from robota import Hook, InteractiveSession, ScriptedProvider, TextDeltaEvent, ToolStartEvent
session = InteractiveSession(provider=ScriptedProvider([]))
"""

#: (what, the line that must fail, a piece of mypy's message)
MUST_FAIL: List[Tuple[str, str, str]] = [
    ("an unknown event name", 'session.on("text_dleta", lambda e: None)', "on"),
    ("a field the event does not have", 'session.on("text_delta", lambda e: print(e.txt))', 'No overload variant of "on"'),
    (
        "a listener typed for another event",
        'def on_tool(e: ToolStartEvent) -> None: ...\nsession.on("text_delta", on_tool)',
        "on",
    ),
    ("an unknown permission mode", 'InteractiveSession(provider=ScriptedProvider([]), permission_mode="yolo")', "permission_mode"),
    (
        "an unknown hook failure policy",
        'def guard(i: Dict[str, Any]) -> None: ...\nHook("PreToolUse", guard, on_failure="deny")',
        "on_failure",
    ),
]

MUST_PASS = """\
session.on("text_delta", lambda e: print(e.text))
def on_tool(e: ToolStartEvent) -> None:
    print(e.tool.name)
session.on("tool_start", on_tool)
session.on("*", lambda e: print(e.type, e.seq))
session.on("complete", lambda e: print(e.response))
InteractiveSession(provider=ScriptedProvider([]), permission_mode="acceptEdits")
def guard(i: Dict[str, Any]) -> None: ...
Hook("PreToolUse", guard, on_failure="allow")
"""


def mypy(code: str) -> Tuple[int, str]:
    """Runs ``mypy --strict`` on ``code``; returns the exit status and the report."""
    cache = os.path.join(tempfile.gettempdir(), "robota-typing-mypy-cache")
    stdout, stderr, status = api.run(["--strict", "--cache-dir", cache, "--no-error-summary", "-c", code])
    return status, stdout + stderr


def test_the_right_code_type_checks() -> None:
    status, report = mypy(PRELUDE + MUST_PASS)
    assert status == 0, report


@pytest.mark.parametrize("what, line, says", MUST_FAIL, ids=[case[0] for case in MUST_FAIL])
def test_mistakes_fail_type_checking(what: str, line: str, says: str) -> None:
    code = PRELUDE + line + "\n"
    status, report = mypy(code)
    assert status == 1, f"{what} type-checked:\n{report}"
    last_line = code.count("\n")
    errors = [l for l in report.splitlines() if ": error:" in l]
    assert errors, report
    # The error is on the mistake (the snippet's last line), not somewhere in the prelude.
    assert any(f"<string>:{last_line}:" in l for l in errors), report
    assert says in report, report
