#!/usr/bin/env python3
"""Where a stdio server's time goes: py-spy samples the server process while the workload runs.

Starts the server the way bench/run.py does (official client over stdio), attaches py-spy to the
server's pid (py-spy is installed into bench/.venvs/prof on first use), runs the mixed workload,
and prints the functions with the most samples, inclusive and self, from py-spy's collapsed
stacks, and writes that summary to bench/results/<date>-profile-<server>.txt. The raw stacks
go to bench/results/profile-<server>.txt (ignored by git; load them into speedscope.app or
flamegraph.pl for a picture).

    python3 bench/profile_server.py                  # Homeport, 3,000 calls
    python3 bench/profile_server.py --server echo    # the floor, for comparison
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, child_pids
from adapters import OPS, all_adapters, ensure_venv

IDLE_LEAVES = (
    "Condition.wait",
    "EpollSelector.select",
    "Queue.get",
    "Event.wait",
    "Lock.acquire",
    "sleep",
    "select (",
    "poll (",
)


def summarize(collapsed: Path, top: int, root_filter: str | None, rate: int, calls: int) -> str:
    """Per-function shares of the server's *busy* samples (threads waiting on a lock, a queue or
    epoll are left out), and the busy time per call."""
    inclusive: Counter[str] = Counter()
    self_: Counter[str] = Counter()
    total = idle = 0
    for line in collapsed.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        try:
            n = int(count)
        except ValueError:
            continue
        frames = [_short(f) for f in stack.split(";")]
        if root_filter and not any(root_filter in f for f in frames):
            continue
        if any(frames[-1].startswith(leaf) for leaf in IDLE_LEAVES):
            idle += n
            continue
        total += n
        for name in set(frames):
            inclusive[name] += n
        self_[frames[-1]] += n
    busy_ms = 1000 * total / rate / max(1, calls)
    out = [
        f"busy samples: {total} (idle-thread samples left out: {idle}); busy time ≈ {busy_ms:.2f} ms per call "
        f"(sum over the server's threads, at {rate} samples/s)",
        "",
        f"top {top} inclusive (share of busy samples with the function on the stack):",
    ]
    out += [f"  {100 * n / total:5.1f}%  {name}" for name, n in inclusive.most_common(top)]
    out += ["", f"top {top} self (share of busy samples where the function itself was running):"]
    out += [f"  {100 * n / total:5.1f}%  {name}" for name, n in self_.most_common(top)]
    return "\n".join(out)


def _short(frame: str) -> str:
    # py-spy frames look like "function (path/to/file.py:123)"; drop the line number, shorten the path.
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("site-packages/", "src/", "lib/python3.11/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{name} ({path})"


async def run(args: argparse.Namespace) -> int:
    venv, message = ensure_venv("prof", ["py-spy"], probe="py-spy")
    if venv is None:
        print(f"cannot profile: {message}", file=sys.stderr)
        return 1
    adapter = all_adapters()[args.server]
    why = adapter.ensure_installed()
    if why:
        print(why, file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="homeport-prof-"))
    (work / "home").mkdir()
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"profile-{args.server}.txt"
    try:
        before = child_pids(os.getpid())
        with open(work / "stderr.log", "w") as err:
            async with Client(stdio_client(adapter.params(work), errlog=err)) as client:
                await adapter.first_call(client)
                pid = sorted(child_pids(os.getpid()) - before)[-1]
                for k in range(50):  # warm-up
                    await adapter.op(client, OPS[k % len(OPS)], k)
                spy = subprocess.Popen(
                    [
                        str(venv / "bin" / "py-spy"),
                        "record",
                        "--pid",
                        str(pid),
                        "--rate",
                        str(args.rate),
                        "--format",
                        "raw",
                        "-o",
                        str(out),
                        "--nonblocking",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                await anyio.sleep(1.0)
                t0 = time.perf_counter()
                for k in range(args.calls):
                    await adapter.op(client, OPS[k % len(OPS)], 50 + k)
                wall = time.perf_counter() - t0
                spy.send_signal(2)  # SIGINT: py-spy writes its output and exits
                _, spy_err = spy.communicate(timeout=60)
        if not out.exists():
            print(f"py-spy wrote nothing: {spy_err[-800:]}", file=sys.stderr)
            return 1
        text = (
            f"{args.server}: {args.calls} calls of the mixed workload over stdio in {wall:.1f} s "
            f"({1000 * wall / args.calls:.2f} ms per call, client included)\n"
            + summarize(out, args.top, args.only, args.rate, args.calls)
        )
        summary = RESULTS / f"{time.strftime('%Y-%m-%d')}-profile-{args.server}.txt"
        summary.write_text(text + "\n")
        print(text)
        print(f"\nsummary: {summary}\nraw stacks (not kept in git): {out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--server", default="homeport", help="homeport, echo, conport, conport-noemb or basic-memory")
    p.add_argument("--calls", type=int, default=3000, help="calls of the mixed workload while sampling (default 3000)")
    p.add_argument("--rate", type=int, default=250, help="py-spy samples per second (default 250)")
    p.add_argument("--top", type=int, default=40, help="functions to list (default 40)")
    p.add_argument("--only", default=None, help="count only stacks containing this text (e.g. 'homeport/')")
    return anyio.run(run, p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
