"""Two versions of Homeport over stdio, alternated: does a change show in what a client feels?

`cpu_per_call.py` finds microseconds in one process; this asks whether they survive a real stdio
round trip. It starts `python -m homeport serve` over stdio twice per repetition, once with the
sources of version A on `PYTHONPATH` and once with B's (the order alternates each repetition),
and times sequential calls through the official client in the protocol era chosen, passing the
workspace as an argument (source 1) unless told otherwise.

    git worktree add /tmp/old 8ca5f10
    python3 bench/stdio_ab.py --a /tmp/old/src                 # A = old, B = this checkout
    python3 bench/stdio_ab.py --a /tmp/old/src --mode auto --calls 500 --reps 7

Prints p50 and p95 per version and repetition, and the median over repetitions of B's p50 / A's
p50 (below 1: B is faster). Writes nothing; the projects live in a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median, percentile

HERE = Path(__file__).resolve().parents[1] / "src"
WARMUP = 30


def commit_of(src: Path) -> str:
    done = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "?"


async def one_session(src: Path, project: Path, mode: str, calls: int, source: str) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    env.pop("HOMEPORT_WORKSPACE", None)
    args = ["-m", "homeport", "serve"]
    if source == "config":
        args += ["--workspace", str(project)]
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(project))
    call_args: dict[str, Any] = {"category": "bench", "key": "k"}
    if source == "argument":
        call_args["workspace"] = str(project)
    with open(os.devnull, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
            first = await client.call_tool("log_custom_data", {**call_args, "value": {"n": 1}})
            if first.is_error:
                raise SystemExit(f"{src}: {first.content[0].text if first.content else first}")
            for _ in range(WARMUP):
                await client.call_tool("get_custom_data", call_args)
            times = []
            for _ in range(calls):
                started = time.perf_counter()
                result = await client.call_tool("get_custom_data", call_args)
                times.append((time.perf_counter() - started) * 1000)
                if result.is_error:
                    raise SystemExit(f"{src}: {result.content[0].text if result.content else result}")
    return times


async def main(a: Path, b: Path, mode: str, calls: int, reps: int, source: str) -> None:
    label = {"A": f"A {commit_of(a)}", "B": f"B {commit_of(b)}"}
    print(f"stdio, mode={mode}, source={source}, {reps} repetitions x {calls} get_custom_data calls each")
    print("| rep | version | p50 (ms) | p95 (ms) |")
    print("| ---: | :--- | ---: | ---: |")
    ratios, p50s = [], {"A": [], "B": []}
    with tempfile.TemporaryDirectory(prefix="homeport-ab-") as tmp:
        for rep in range(reps):
            order = ("A", "B") if rep % 2 == 0 else ("B", "A")
            got: dict[str, float] = {}
            for which in order:
                project = Path(tmp) / f"{which}-{rep}"
                (project / ".git").mkdir(parents=True)
                times = await one_session(a if which == "A" else b, project, mode, calls, source)
                got[which] = percentile(times, 50)
                p50s[which].append(got[which])
                print(f"| {rep + 1} | {label[which]} | {got[which]:.3f} | {percentile(times, 95):.3f} |")
            ratios.append(got["B"] / got["A"])
    print()
    print(f"median p50: {label['A']} {median(p50s['A']):.3f} ms, {label['B']} {median(p50s['B']):.3f} ms")
    spread = f"min {min(ratios):.3f}, max {max(ratios):.3f}"
    print(f"B/A p50, median of the per-repetition ratios: {median(ratios):.3f} ({spread})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", type=Path, required=True, help="the src/ directory of version A (e.g. an old worktree)")
    parser.add_argument("--b", type=Path, default=HERE, help="the src/ directory of version B (default: this checkout)")
    parser.add_argument("--mode", choices=("legacy", "auto"), default="legacy", help="protocol era (legacy = 2025)")
    parser.add_argument("--source", choices=("argument", "config", "cwd"), default="argument")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=6)
    ns = parser.parse_args()
    anyio.run(main, ns.a.resolve(), ns.b.resolve(), ns.mode, ns.calls, ns.reps, ns.source)
