"""32 agents over Streamable HTTP against 1 and 2 `homeport serve --http` processes, beside the echo floor.

Every setup is measured the same way: N server processes on 127.0.0.1 (1 or 2), 32 SDK clients in
this process spread over them (client i talks to process i mod N, so every project is served by
every process), each naming its project in X-Workspace-Id (4 projects, git roots), each making the
same agent-like mix of calls one after another: get_context, search, get_decisions, log_decision,
search, get_custom_data, log_custom_data, get_decisions, log_decision, search (three writes in ten).

- stores: **sqlite** (the default store, a file in each project; both processes share the data
  directory and the projects) and **postgresql** (`--store URL`, a fresh database per setup,
  dropped afterwards; `--postgres` names the server and an existing database to connect to first);
- eras: **2026** (2026-07-28, one stateless request per call) and **2025** (the 2025 handshake, one
  session per client, kept on its process);
- the floor: `bench/servers/echo_server.py`, tools of the same names and result shapes kept in a
  list in memory, started 1 or 2 times in the same way (no store: one floor per era and count).

Each setup starts its processes afresh (new projects, new database), warms every client up, then
times `--calls` calls per client. Per setup: calls/s, p50 and p95 of single calls, and the server
CPU per call (utime + stime of every server process from /proc over the timed phase, divided by
the calls), which stays steady when other processes share the cores and wall times do not. With
`--rounds` > 1 every setup runs that many times, in reversed order every other round, and the
table shows medians. `--base SRC` adds Homeport from another checkout's `src` (e.g. a git worktree
of main) to every setup, interleaved with this one: an A/B on one machine in one run.

    python3 bench/http_scale.py                       # the full table (about 10 minutes on 2 idle cores)
    python3 bench/http_scale.py --quick               # every setup once, a few calls each (about a minute)
    python3 bench/http_scale.py --stores sqlite --eras 2026 --servers homeport --base /tmp/main/src --rounds 5

Prints a Markdown table (and writes it with `--out FILE`); `--json FILE` keeps every run's figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio
from _common import (
    BENCH,
    OtherLoad,
    environ_without_homeport,
    fmt,
    http_mcp_client,
    machine_description,
    machine_markdown,
    md_table,
    median,
    percentile,
    process_cpu_seconds,
    ratio,
    wait_healthy,
)
from adapters import custom_key, custom_value, decision, query

ERAS = {"2026": "auto", "2025": "legacy"}
TASKS = ("switch the project store to SQLite WAL", "why does the writer queue exist", "search every project")
PROJECTS = 4
CLIENTS = 32
HOMEPORT = "homeport"
FLOOR = "floor"
BASE = "homeport (base)"


def agent_call(k: int) -> tuple[str, dict[str, Any]]:
    """The k-th call of one client's mix: mostly reads, three writes in ten."""
    i = k // 10
    step = k % 10
    if step == 0:
        return "get_context", {"task": TASKS[i % len(TASKS)], "budget_tokens": 1000}
    if step in (1, 4, 9):
        return "search", {"query": query(k), "limit": 10}
    if step in (2, 7):
        return "get_decisions", {"limit": 10}
    if step in (3, 8):
        return "log_decision", decision(k)
    if step == 5:
        return "get_custom_data", {"category": "bench", "key": custom_key(i)}
    return "log_custom_data", {"category": "bench", "key": custom_key(i), "value": custom_value(k)}


@dataclass(frozen=True)
class Setup:
    server: str  # HOMEPORT, BASE or FLOOR
    store: str  # "sqlite" or "postgresql"; "-" for the floor, which keeps nothing
    processes: int
    era: str  # a key of ERAS

    @property
    def label(self) -> str:
        return f"{self.server} {self.store} ×{self.processes} {self.era}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    """A fresh, empty database on the server of `admin_url`, dropped afterwards; yields its URL."""
    import psycopg

    name = f"homeport_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield admin_url.rsplit("/", 1)[0] + f"/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def servers(setup: Setup, work: Path, args: argparse.Namespace) -> Iterator[tuple[list[str], list[int], list[Path]]]:
    """Start the setup's processes on fresh projects; yields (base URLs, pids, projects)."""
    projects = [work / f"project{n}" for n in range(PROJECTS)]
    for project in projects:
        (project / ".git").mkdir(parents=True)
    env = environ_without_homeport(work / "state")
    if setup.server == BASE:
        env["PYTHONPATH"] = str(Path(args.base).resolve())
    with contextlib.ExitStack() as stack:
        store: list[str] = []
        if setup.store == "postgresql":
            store = ["--store", stack.enter_context(postgres_database(args.postgres))]
        procs: list[subprocess.Popen[bytes]] = []
        urls = []
        for n in range(setup.processes):
            port = free_port()
            if setup.server == FLOOR:
                cmd = [sys.executable, str(BENCH / "servers" / "echo_server.py"), "--http", str(port)]
                cmd += ["--workspace", str(projects[0])]
            else:
                cmd = [sys.executable, "-c", "from homeport.cli import main; main()", "serve", "--http", "--quiet"]
                cmd += ["--port", str(port), "--allow-root", str(work), "--data-dir", str(work / "data"), *store]
            log = work / f"server{n}.log"
            with log.open("wb") as sink:
                procs.append(subprocess.Popen(cmd, cwd=work, env=env, stdout=sink, stderr=subprocess.STDOUT))
            stack.callback(_stop, procs[-1])
            urls.append(f"http://127.0.0.1:{port}")
            wait_healthy(urls[-1], procs[-1], log)
        yield urls, [p.pid for p in procs], projects


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(15)


async def drive(
    urls: list[str], pids: list[int], projects: list[Path], era: str, clients: int, calls: int, warmup: int
) -> dict[str, Any]:
    """`clients` clients, client i on urls[i mod N] and projects[(i div N) mod P]; times `calls` calls each."""
    latencies: list[float] = []

    async def one_client(n: int, ready: anyio.Event, go: anyio.Event, done: list[int]) -> None:
        project = projects[(n // len(urls)) % len(projects)]
        async with http_mcp_client(urls[n % len(urls)], {"X-Workspace-Id": str(project)}, ERAS[era]) as client:
            for k in range(warmup):
                await call(client, n * 1000 + k)
            done.append(n)
            if len(done) == clients:
                ready.set()
            await go.wait()
            for k in range(warmup, warmup + calls):
                start = time.perf_counter()
                await call(client, n * 1000 + k)
                latencies.append((time.perf_counter() - start) * 1000)

    ready, go, done = anyio.Event(), anyio.Event(), []
    load = OtherLoad()
    async with anyio.create_task_group() as tg:
        for n in range(clients):
            tg.start_soon(one_client, n, ready, go, done)
        with anyio.fail_after(300):
            await ready.wait()
        cpu0 = [process_cpu_seconds(p) for p in pids]
        client0 = time.process_time()
        load.start(pids)
        t0 = time.perf_counter()
        go.set()
    wall = time.perf_counter() - t0
    other = load.stop()
    server_cpu = sum(process_cpu_seconds(p) for p in pids) - sum(cpu0)
    total = len(latencies)
    return {
        "calls": total,
        "wall_s": wall,
        "calls_per_s": total / wall,
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "server_cpu_ms_per_call": 1000 * server_cpu / total,
        "client_cores": (time.process_time() - client0) / wall,
        "other_cores": other,
    }


async def call(client: Any, k: int) -> None:
    tool, arguments = agent_call(k)
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        text = " ".join(getattr(part, "text", "") for part in result.content)
        raise RuntimeError(f"{tool} failed: {text[:300]}")


def setups(args: argparse.Namespace) -> list[Setup]:
    out = []
    for era in args.eras:
        for processes in args.processes:
            if FLOOR in args.servers:
                out.append(Setup(FLOOR, "-", processes, era))
            for store in args.stores:
                for server in (s for s in args.servers if s != FLOOR):
                    out.append(Setup(server, store, processes, era))
    return out


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    plan = setups(args)
    runs: list[dict[str, Any]] = []
    for r in range(args.rounds):
        for setup in plan if r % 2 == 0 else reversed(plan):
            with tempfile.TemporaryDirectory(prefix="homeport-http-scale-") as tmp:
                work = Path(os.path.realpath(tmp))
                with servers(setup, work, args) as (urls, pids, projects):
                    figures = anyio.run(drive, urls, pids, projects, setup.era, args.clients, args.calls, args.warmup)
            runs.append({**asdict(setup), "round": r, **figures})
            print(
                f"round {r + 1}/{args.rounds} {setup.label:36} {figures['calls_per_s']:7.0f} calls/s  "
                f"p95 {figures['p95_ms']:6.1f} ms  server CPU {figures['server_cpu_ms_per_call']:.2f} ms/call  "
                f"(other processes {figures['other_cores']:.2f} cores)",
                file=sys.stderr,
                flush=True,
            )
    return runs


def table(runs: list[dict[str, Any]]) -> str:
    """Medians over rounds, one row per setup, each Homeport row beside its floor (same era and count)."""
    keys = ("calls_per_s", "p50_ms", "p95_ms", "server_cpu_ms_per_call", "client_cores", "other_cores")
    groups: dict[tuple[str, str, int, str], list[dict[str, Any]]] = {}
    for run_ in runs:
        groups.setdefault((run_["server"], run_["store"], run_["processes"], run_["era"]), []).append(run_)
    med = {g: {k: median(r[k] for r in rs) for k in keys} for g, rs in groups.items()}
    order = {FLOOR: 0, BASE: 1, HOMEPORT: 2}
    rows = []
    for (server, store, processes, era), m in sorted(
        med.items(), key=lambda kv: (kv[0][3], kv[0][2], kv[0][1] != "-", kv[0][1], order[kv[0][0]])
    ):
        floor = med.get((FLOOR, "-", processes, era))
        vs = "–"
        if floor is not None and server != FLOOR:
            vs = (
                f"{ratio(m['calls_per_s'], floor['calls_per_s'])} / "
                f"{ratio(m['server_cpu_ms_per_call'], floor['server_cpu_ms_per_call'])}"
            )
        rows.append(
            [
                era,
                store,
                str(processes),
                server,
                fmt(m["calls_per_s"]),
                fmt(m["p50_ms"]),
                fmt(m["p95_ms"]),
                fmt(m["server_cpu_ms_per_call"]),
                vs,
                fmt(m["client_cores"]),
                fmt(m["other_cores"]),
            ]
        )
    header = [
        "era",
        "store",
        "processes",
        "server",
        "calls/s",
        "p50 ms",
        "p95 ms",
        "server CPU ms/call",
        "÷ floor: calls/s / CPU",
        "client cores",
        "other cores",
    ]
    return md_table(header, rows, align="llrl" + "r" * 7)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="one round, 4 calls per client after 2 warm-up calls")
    p.add_argument("--clients", type=int, default=CLIENTS, help=f"concurrent clients (default {CLIENTS})")
    p.add_argument("--calls", type=int, default=60, help="timed calls per client (default 60)")
    p.add_argument("--warmup", type=int, default=10, help="untimed calls per client first (default 10)")
    p.add_argument("--rounds", type=int, default=3, help="runs of every setup; the table shows medians (default 3)")
    p.add_argument("--processes", default="1,2", help="server processes per setup, comma-separated (default 1,2)")
    p.add_argument("--stores", default="sqlite,postgresql", help="sqlite, postgresql or both (default both)")
    p.add_argument("--eras", default="2026,2025", help="2026 (stateless), 2025 (sessions) or both (default both)")
    p.add_argument("--servers", default=f"{FLOOR},{HOMEPORT}", help=f"{FLOOR}, {HOMEPORT} or both (default both)")
    p.add_argument("--base", metavar="SRC", help="also run Homeport from this `src` directory (A/B), interleaved")
    p.add_argument(
        "--postgres",
        default="postgresql://postgres@127.0.0.1:5432/test",
        help="a PostgreSQL database to connect to; each setup creates and drops its own beside it",
    )
    p.add_argument("--out", type=Path, help="also write the report (Markdown) here")
    p.add_argument("--json", type=Path, help="write every run's figures here")
    args = p.parse_args(argv)
    if args.quick:
        args.calls, args.warmup, args.rounds = 4, 2, 1
    args.processes = [int(n) for n in args.processes.split(",")]
    args.stores = [s for s in args.stores.split(",") if s]
    args.eras = [e for e in args.eras.split(",") if e]
    args.servers = [s for s in args.servers.split(",") if s]
    if args.base:
        args.servers.append(BASE)
    unknown = (set(args.stores) - {"sqlite", "postgresql"}) | (set(args.eras) - set(ERAS))
    unknown |= set(args.servers) - {FLOOR, HOMEPORT, BASE}
    if unknown:
        p.error(f"unknown value(s) {', '.join(sorted(unknown))}; see --help")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # SIGTERM ends the run like Ctrl-C: the servers are stopped and the databases dropped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    runs = run(args)
    report = "\n\n".join(
        [
            f"# Homeport over Streamable HTTP, {args.clients} clients, 1 and 2 processes ({started})",
            machine_markdown(machine_description()),
            f"{args.calls} timed calls per client after {args.warmup} warm-up calls; median of {args.rounds} "
            "round(s). `÷ floor`: Homeport's calls/s and server CPU per call over the floor's with the same "
            "era and process count. `other cores`: CPU used meanwhile by processes other than this one "
            "and the servers.",
            table(runs),
        ]
    )
    print(report)
    if args.out:
        args.out.write_text(report + "\n", encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
