"""Benchmarks of the Python package (DESIGN §9): event throughput into a Python callback, and
cold start (process start -> first event of a query) against `python -c pass`.

    python bindings-python/benches/bench_python.py [--events 200000] [--runs 20]

Build the package optimized first (figures in BENCHMARKS.md use `maturin build --profile bench`).
Offline: the model is the scripted provider.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

import robota


def hermetic() -> Dict[str, Any]:
    d = tempfile.mkdtemp()
    return {"cwd": d, "home": d, "load_project_context": False, "builtin_tools": False}


async def throughput_listener(n: int, event_buffer: int | None) -> Dict[str, float]:
    """`session.on("text_delta", cb)`: deltas the engine produced vs events the callback got."""
    provider = robota.ScriptedProvider([{"text": ["x"] * n}])
    received = 0
    chars = 0

    def on_delta(event: robota.TextDeltaEvent) -> None:
        nonlocal received, chars
        received += 1
        chars += len(event.text)

    async with robota.InteractiveSession(provider=provider, event_buffer=event_buffer, **hermetic()) as s:
        s.on("text_delta", on_delta)
        start = time.perf_counter()
        result = await s.submit("go")
        elapsed = time.perf_counter() - start
    assert result.ok and chars == n, (result.status, chars)
    return {"elapsed_s": elapsed, "events": received, "events_per_s": received / elapsed, "deltas_per_s": n / elapsed}


async def throughput_iterator(n: int) -> Dict[str, float]:
    """`async for event in session.events()` over the same turn (no coalescing: big buffer)."""
    provider = robota.ScriptedProvider([{"text": ["x"] * n}])
    received = 0
    async with robota.InteractiveSession(provider=provider, event_buffer=1 << 22, **hermetic()) as s:
        stream = s.events()
        start = time.perf_counter()
        task = asyncio.create_task(s.submit("go"))
        async for event in stream:
            if event.type == "text_delta":
                received += 1
            elif event.type in ("complete", "error", "interrupted"):
                break
        elapsed = time.perf_counter() - start
        await task
        stream.close()
    return {"elapsed_s": elapsed, "events": received, "events_per_s": received / elapsed}


COLD = r"""
import tempfile, asyncio
import robota
d = tempfile.mkdtemp()
async def main():
    q = robota.create_query(provider=robota.ScriptedProvider(["hello"]), cwd=d, home=d,
                            load_project_context=False, builtin_tools=False,
                            on_text_delta=lambda t: (print("first", flush=True), __import__("os")._exit(0)))
    await q("hi")
asyncio.run(main())
"""


def spawn_until_line(argv: List[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()
    elapsed = time.perf_counter() - start
    proc.wait()
    return elapsed


def cold_start(runs: int) -> Dict[str, float]:
    baseline = [spawn_until_line([sys.executable, "-c", "print('x', flush=True)"]) for _ in range(runs)]
    first_event = [spawn_until_line([sys.executable, "-c", COLD]) for _ in range(runs)]
    b, f = statistics.median(baseline), statistics.median(first_event)
    return {"python_c_pass_ms": b * 1000, "first_event_ms": f * 1000, "overhead_ms": (f - b) * 1000}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    print(f"robota {robota.__version__}, Python {sys.version.split()[0]}")
    for label, buffer in (("listener, default buffer (256, text_delta coalesced)", None), ("listener, no coalescing", 1 << 22)):
        r = asyncio.run(throughput_listener(args.events, buffer))
        print(
            f"{label}: {args.events} deltas in {r['elapsed_s']:.3f} s -> {r['events']:.0f} callback events "
            f"({r['events_per_s']:,.0f} events/s into the callback, {r['deltas_per_s']:,.0f} engine deltas/s)"
        )
    r = asyncio.run(throughput_iterator(args.events))
    print(f"async for, no coalescing: {r['events']:.0f} events in {r['elapsed_s']:.3f} s -> {r['events_per_s']:,.0f} events/s")
    c = cold_start(args.runs)
    print(
        f"cold start (median of {args.runs}): python -c pass {c['python_c_pass_ms']:.1f} ms, "
        f"first event of a query {c['first_event_ms']:.1f} ms, overhead {c['overhead_ms']:.1f} ms"
    )


if __name__ == "__main__":
    main()
