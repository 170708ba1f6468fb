"""CPU per call of Homeport's tools against the echo floor, both in this process, by operation.

The stdio latencies of run.py are the figures people feel, but on a busy or throttled machine
they swing by ±30 % between runs. This script removes the transport and the scheduler: the same
in-memory client calls Homeport and the floor (same tool names, arguments and result shapes) in
one process, alternating servers round by round, and reports the CPU time (`time.process_time`,
client and server together) per call. The difference is Homeport's own work per call: routing,
SQLite, its results. It is what to watch when changing the hot path; run.py says how it feels.

    python3 bench/cpu_per_call.py                 # 5 rounds x 300 calls per operation
    python3 bench/cpu_per_call.py --rounds 9 -n 500

Each round uses a new workspace, so every round's store holds the same ~320 decisions when it is
searched, as in run.py. Prints a Markdown table; writes nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "servers"))

from adapters import OPS, HomeportLike
from echo_server import build_echo_server

from homeport.core import ServeSettings, build_runtime
from homeport.server import build_server

WARMUP = 20
# The same five calls as bench/run.py makes of Homeport and the floor.
WORKLOAD = HomeportLike(name="in-process", label="in-process", role="subject")


async def one_server(server: Any, n: int) -> dict[str, tuple[float, float]]:
    """{op: (CPU µs per call, wall µs per call)} for one server, after a warm-up."""
    out: dict[str, tuple[float, float]] = {}
    async with Client(server) as client:
        for i in range(WARMUP):
            for op in OPS:
                await WORKLOAD.op(client, op, i)  # raises OpError on an error result
        for op in OPS:
            cpu, wall = time.process_time(), time.perf_counter()
            for i in range(n):
                await WORKLOAD.op(client, op, i)
            out[op] = ((time.process_time() - cpu) / n * 1e6, (time.perf_counter() - wall) / n * 1e6)
    return out


async def main(rounds: int, n: int) -> None:
    samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="homeport-cpu-") as tmp:
        for r in range(rounds):
            workspace = Path(tmp) / f"round{r}"
            (workspace / ".homeport").mkdir(parents=True)
            runtime = build_runtime(ServeSettings(workspace=str(workspace), home=Path(tmp)))
            try:
                servers = [("floor", build_echo_server(str(workspace))), ("homeport", build_server(runtime))]
                for label, server in servers if r % 2 == 0 else reversed(servers):
                    for op, value in (await one_server(server, n)).items():
                        samples.setdefault((label, op), []).append(value)
            finally:
                runtime.close()
            print(f"round {r + 1}/{rounds} done", file=sys.stderr, flush=True)

    def med(label: str, op: str, k: int) -> float:
        return statistics.median(s[k] for s in samples[(label, op)])

    print(f"CPU per call in one process (client + server), median of {rounds} rounds x {n} calls\n")
    print(
        "| operation | floor CPU (µs) | Homeport CPU (µs) | Homeport's own work (µs) | ratio "
        "| wall floor / Homeport (µs) |"
    )
    print("| :--- | ---: | ---: | ---: | ---: | ---: |")
    for op in OPS:
        floor, ours = med("floor", op, 0), med("homeport", op, 0)
        walls = f"{med('floor', op, 1):.0f} / {med('homeport', op, 1):.0f}"
        print(f"| {op} | {floor:.0f} | {ours:.0f} | {ours - floor:.0f} | {ours / floor:.2f}× | {walls} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="rounds, each on a new workspace (default 5)")
    parser.add_argument("-n", "--calls", type=int, default=300, help="calls per operation per round (default 300)")
    args = parser.parse_args()
    anyio.run(main, args.rounds, args.calls)
