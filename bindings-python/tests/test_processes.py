"""The processes a session starts end with it: ``shutdown()``, ``async with`` and interpreter exit
stop a running Bash call's tree and background tasks (checked by pid, on real processes)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from robota import InteractiveSession, ScriptedProvider

from conftest import hermetic

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="checks /proc")

# A subshell with two sleepers, a sleeper the shell backgrounds with `&`, and the shell waiting
# for them; each writes its pid.
TREE = (
    "( sleep 300 & echo $! > gc1.pid; sleep 300 & echo $! > gc2.pid; wait ) & "
    "sleep 300 & echo $! > amp.pid; echo $$ > shell.pid; wait"
)
PID_FILES = ["shell.pid", "gc1.pid", "gc2.pid", "amp.pid"]


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie has exited: it counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def read_pids(cwd: Path) -> List[int]:
    """The tree's pids, waiting (up to 10 s) for each pid file."""
    pids = []
    for name in PID_FILES:
        deadline = time.monotonic() + 10
        while True:
            text = (cwd / name).read_text().strip() if (cwd / name).exists() else ""
            if text.isdigit():
                pids.append(int(text))
                break
            assert time.monotonic() < deadline, f"{name} was never written"
            time.sleep(0.02)
    return pids


def assert_all_dead(pids: List[int], when: str) -> None:
    for pid in pids:
        assert not alive(pid), f"process {pid} survived {when}"


def bash_options(tmp_path: Path, background: bool) -> Dict[str, Any]:
    options = hermetic(tmp_path)
    options.update(builtin_tools=True, permission_mode="bypassPermissions", sandbox=False)
    call = {"id": "call_1", "name": "Bash", "input": {"command": TREE, "run_in_background": background}}
    options["provider"] = ScriptedProvider([{"tool_calls": [call]}, {"text": "done"}])
    return options


async def read_pids_async(cwd: Path) -> List[int]:
    return await asyncio.get_running_loop().run_in_executor(None, read_pids, cwd)


async def test_shutdown_stops_background_tasks(tmp_path: Path) -> None:
    options = bash_options(tmp_path, background=True)
    session = InteractiveSession(**options)
    result = await session.submit("go")
    assert result.status == "complete" and result.response == "done", result
    pids = await read_pids_async(Path(options["cwd"]))
    assert all(alive(pid) for pid in pids), "the background task should outlive its turn"
    await session.shutdown()
    assert_all_dead(pids, "shutdown()")


async def test_leaving_async_with_stops_a_running_call(tmp_path: Path) -> None:
    options = bash_options(tmp_path, background=False)
    async with InteractiveSession(**options) as session:
        task = asyncio.create_task(session.submit("go"))
        pids = await read_pids_async(Path(options["cwd"]))
        assert all(alive(pid) for pid in pids)
    assert_all_dead(pids, "leaving `async with`")
    result = await task
    assert result.status == "interrupted"


EXIT_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path
    import robota

    TREE = sys.argv[2]
    CWD = Path(sys.argv[1])

    async def main():
        call = {"id": "c", "name": "Bash", "input": {"command": TREE, "run_in_background": sys.argv[3] == "bg"}}
        session = robota.InteractiveSession(
            provider=robota.ScriptedProvider([{"tool_calls": [call]}, {"text": "done"}]),
            cwd=CWD, home=CWD, load_project_context=False, permission_mode="bypassPermissions",
            sandbox=False)
        task = asyncio.create_task(session.submit("go"))
        while not (CWD / "amp.pid").exists() or not (CWD / "gc2.pid").exists():
            await asyncio.sleep(0.02)
        print("READY", flush=True)
        # Leave without shutdown(): the background task, or the running call, is still going.
        globals()["keep"] = (session, task)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("mode", ["bg", "fg"])
def test_interpreter_exit_stops_the_sessions_processes(tmp_path: Path, mode: str) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    script = tmp_path / "exit_script.py"
    script.write_text(EXIT_SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(cwd), TREE, mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "READY", proc.stderr and proc.stderr.read()
    pids = read_pids(cwd)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "panicked" not in err and "Fatal Python error" not in err
    assert_all_dead(pids, "interpreter exit")
