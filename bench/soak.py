#!/usr/bin/env python3
"""Soak: `homeport serve --http` under mixed load, client drops and server restarts; no write may be lost.

One server on 127.0.0.1 (a free port, kept across restarts) serves a temporary allowed root that
holds several git-initialised projects. Each client owns one project and opens session after
session with the official SDK client over Streamable HTTP, each session naming the project a
different way (the `workspace` argument, the X-Workspace-Id header, ?project_path=, a handle from
use_workspace, or the session default of a 2025-era connection) and speaking either protocol era.
Sessions mix writes (log_decision, log_progress, update_active_context, log_custom_data) with
reads (get_decisions, search, where_am_i); some are dropped in the middle of a call. A few times
during the run the server is stopped with SIGTERM or SIGKILL and started again on the same port.

Every write carries a unique token. A write is acknowledged when its tool result came back without
error; at the end each acknowledged write must be in its own project's store (opened with sqlite3,
by id or version and token) and no token may be in any other store; `PRAGMA integrity_check` must
be ok everywhere. Reads check that they landed in the right workspace and see the client's own
latest acknowledged decision.

Bounded: --minutes of load (default 10), at most --max-calls calls, every call at most
--call-timeout seconds; the server is stopped and the temporary directory removed at the end.
Writes <date>-soak.json and <date>-soak.png (latency percentiles and RSS over time, restarts
marked) to --out (default bench/results). Exit status 1 when a write was lost or misplaced, a call
was routed to the wrong workspace, or a store is corrupt.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, cpu_jiffies, machine_description, percentile, proc_status_kb, process_jiffies

SERVER_CMD = [sys.executable, "-c", "from homeport.cli import main; main()", "serve", "--http", "--host", "127.0.0.1"]
WRITE_TOOLS = ("log_decision", "log_progress", "update_active_context", "log_custom_data")
READ_TOOLS = ("get_decisions", "search", "where_am_i")
# Writes about half the calls; where_am_i is rarer, as in an agent's session.
TOOL_WEIGHTS = {
    "log_decision": 14,
    "log_progress": 12,
    "update_active_context": 10,
    "log_custom_data": 14,
    "get_decisions": 20,
    "search": 20,
    "where_am_i": 10,
}
SOURCES = ("argument", "header", "query", "handle", "session")
ERA_NAMES = {"auto": "2026-07-28", "legacy": "2025 (session)"}
RESTART_WINDOW_BEFORE_S = 0.5
RESTART_WINDOW_AFTER_S = 5.0
SIGTERM_GRACE_S = 20.0


# ---------------------------------------------------------------------------------------------
# Records.


@dataclass
class CallRecord:
    t: float  # start, seconds since the run began
    end: float
    client: int
    tool: str
    source: str
    era: str
    ms: float
    error: str | None = None  # kind, None when the call succeeded
    detail: str = ""  # the error's message
    first: bool = False  # the first call of its session


@dataclass
class WriteRecord:
    token: str
    client: int
    tool: str
    acked: bool
    ident: int | None = None  # row id, or the context version
    error: str | None = None  # the call's error kind when it was not acknowledged


@dataclass
class Restart:
    signal: str
    t_signal: float
    t_exited: float = float("nan")
    t_ready: float = float("nan")
    exit_code: int | None = None
    forced_kill: bool = False  # SIGTERM did not stop the server within SIGTERM_GRACE_S
    in_flight: int = 0
    in_flight_ok: int = 0
    in_flight_failed: dict[str, int] = field(default_factory=dict)


@dataclass
class Sample:
    t: float
    pid: int
    rss_mb: float
    fds: int
    threads: int
    server_cores: float = float("nan")  # CPU since the last sample, in cores
    client_cores: float = float("nan")  # this process: the clients
    other_cores: float = float("nan")  # every other process on the machine


class Run:
    """The shared state of one soak run: clock, bounds, server, and everything recorded."""

    def __init__(self, args: argparse.Namespace, projects: list[Path], port: int) -> None:
        self.args = args
        self.projects = projects
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.t0 = time.monotonic()
        self.deadline = args.minutes * 60
        self.calls: list[CallRecord] = []
        self.writes: list[WriteRecord] = []
        self.restarts: list[Restart] = []
        self.samples: list[Sample] = []
        self.log_events: list[tuple[float, str, str, str]] = []  # (seen at, log file, error|exception, line)
        self.client_log: Counter[str] = Counter()
        self.final_stop: dict[str, Any] = {}
        self.load_end = float("nan")
        self.started = 0
        self.sessions = Counter[str]()
        self.server: ServerProcess | None = None
        self.run_id = f"{random.Random(args.seed).getrandbits(24):06x}"

    def now(self) -> float:
        return time.monotonic() - self.t0

    def done(self) -> bool:
        return self.now() >= self.deadline or self.started >= self.args.max_calls


# ---------------------------------------------------------------------------------------------
# The server process.


class ServerProcess:
    """`homeport serve --http` on a fixed port; started again after every stop, one log per start."""

    def __init__(self, port: int, allow_root: Path, work: Path) -> None:
        self.port, self.allow_root, self.work = port, allow_root, work
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("HOMEPORT_")},
            "HOMEPORT_DATA_DIR": str(work / "homeport-data"),
            # Rich renders log tracebacks this wide when stdout is no terminal (default 80, boxed to ~26).
            "COLUMNS": "200",
        }
        self.env.pop("CLAUDE_PROJECT_DIR", None)
        self.env.pop("WORKSPACE_FOLDER_PATHS", None)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc and self.proc.poll() is None else None

    def logs(self) -> list[Path]:
        return sorted(self.work.glob("server-*.log"))

    def start(self) -> None:
        self.starts += 1
        log = (self.work / f"server-{self.starts}.log").open("wb")
        cmd = [*SERVER_CMD, "--port", str(self.port), "--allow-root", str(self.allow_root)]
        self.proc = subprocess.Popen(
            cmd, cwd=self.work, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
        )
        log.close()
        deadline = time.monotonic() + 60
        with httpx2.Client(timeout=2.0) as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    text = (self.work / f"server-{self.starts}.log").read_text(errors="replace")
                    raise RuntimeError(f"server exited with {self.proc.returncode}:\n{text[-2000:]}")
                try:
                    if http.get(f"http://127.0.0.1:{self.port}/healthz").status_code == 200:
                        return
                except httpx2.TransportError:
                    pass
                time.sleep(0.05)
        raise RuntimeError("server not healthy within 60 s")

    def stop(self, how: str) -> tuple[int | None, bool]:
        """Stop with SIGTERM (SIGKILL after SIGTERM_GRACE_S) or SIGKILL: (exit code, forced)."""
        assert self.proc is not None
        if self.proc.poll() is not None:
            return self.proc.returncode, False
        self.proc.send_signal(signal.SIGTERM if how == "SIGTERM" else signal.SIGKILL)
        try:
            return self.proc.wait(SIGTERM_GRACE_S), False
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10), True


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_projects(allow_root: Path, count: int) -> list[Path]:
    projects = []
    for n in range(count):
        path = allow_root / f"project-{n}"
        path.mkdir(parents=True)
        if shutil.which("git"):
            subprocess.run(["git", "init", "-q", str(path)], check=True, timeout=30)
        else:
            (path / ".git").mkdir()
        projects.append(Path(os.path.realpath(path)))
    return projects


# ---------------------------------------------------------------------------------------------
# Clients.


class SessionBroken(Exception):
    """The session cannot go on (transport failure, timeout); the client opens a new one."""


class Session:
    """One client connection: which project, how it names it, and the calls it makes."""

    def __init__(self, run: Run, client: int, rng: random.Random, state: dict[str, Any]) -> None:
        self.run, self.client, self.rng, self.state = run, client, rng, state
        self.root = run.projects[client]
        self.source = rng.choice(SOURCES)
        # The session default exists only on 2025-era connections.
        self.era = "legacy" if self.source == "session" else rng.choice(("auto", "legacy"))
        self.handle: str | None = None
        self.calls_made = 0
        self.last_error: str | None = None

    def transport(self) -> tuple[str, dict[str, str]]:
        if self.source == "header":
            return self.run.url, {"X-Workspace-Id": str(self.root)}
        if self.source == "query":
            return f"{self.run.url}?project_path={quote(str(self.root))}", {}
        return self.run.url, {}

    def workspace_arg(self) -> dict[str, str]:
        if self.source == "argument":
            return {"workspace": str(self.root)}
        if self.source == "handle":
            assert self.handle is not None
            return {"workspace": self.handle}
        return {}

    def expected_source(self) -> str:
        return {"handle": "argument"}.get(self.source, self.source)

    def next_write(self, tool: str) -> tuple[dict[str, Any], WriteRecord]:
        self.state["seq"] += 1
        token = f"soak{self.run.run_id}c{self.client}n{self.state['seq']}"
        words = " ".join(self.rng.choice(("cache", "routing", "wal", "schema", "retry")) for _ in range(3))
        if tool == "log_decision":
            args: dict[str, Any] = {"summary": f"{token} {words}", "rationale": "soak", "tags": ["soak"]}
        elif tool == "log_progress":
            args = {"status": self.rng.choice(("TODO", "IN_PROGRESS", "DONE")), "description": f"{token} {words}"}
        elif tool == "update_active_context":
            if self.rng.random() < 0.5:
                args = {"content": {"focus": token, "notes": words}}
            else:
                args = {"patch": {"focus": token, "touched": self.state["seq"]}}
        else:
            args = {"category": "soak", "key": token, "value": {"words": words, "n": self.state["seq"]}}
        return args, WriteRecord(token, self.client, tool, acked=False)

    def read_args(self, tool: str) -> dict[str, Any]:
        if tool == "get_decisions":
            return {"limit": 10}
        if tool == "search":
            mine = self.state["decisions"]
            if mine and self.rng.random() < 0.7:
                return {"query": self.rng.choice(mine[-200:])[0], "limit": 10}
            return {"query": self.rng.choice(("cache", "routing wal", "schema*", "retry OR cache")), "limit": 10}
        return {}

    async def call(
        self, c: Client, tool: str, args: dict[str, Any], drop_after: float | None = None
    ) -> tuple[Any, str | None]:
        """One timed call, recorded: (result, error kind). Raises SessionBroken when the session cannot go on."""
        run = self.run
        run.started += 1
        start = run.now()
        error: str | None = None
        detail = ""
        result: Any = None
        first = self.calls_made == 0
        self.calls_made += 1
        try:
            if drop_after is not None:
                with anyio.move_on_after(drop_after) as scope:
                    result = await c.call_tool(tool, {**args, **self.workspace_arg()})
                if scope.cancelled_caught:
                    error = "dropped"
                    raise SessionBroken("dropped by the client")
            else:
                with anyio.fail_after(run.args.call_timeout):
                    result = await c.call_tool(tool, {**args, **self.workspace_arg()})
        except TimeoutError:
            error = "timeout"
            raise SessionBroken("timeout") from None
        except SessionBroken:
            raise
        except Exception as exc:
            error = f"exception:{exception_kind(exc)}"
            detail = exception_detail(exc)
            raise SessionBroken(error) from exc
        finally:
            end = run.now()
            if result is not None and error is None:
                error, detail = self.check(tool, args, result)
            if error is None and result is None:
                error = "interrupted"  # cancelled from outside: the session's transport failed
            ms = (end - start) * 1000
            record = CallRecord(start, end, self.client, tool, self.source, self.era, ms, error, detail, first)
            run.calls.append(record)
            self.last_error = error
        return result, error

    def check(self, tool: str, args: dict[str, Any], result: Any) -> tuple[str | None, str]:
        """(error kind, detail) of a returned result; (None, "") when it is right."""
        data = result.structured_content or {}
        if result.is_error:
            code = (data.get("error") or {}).get("code")
            text = " ".join(getattr(part, "text", "") for part in result.content)
            return (f"tool:{code}" if code else "tool:unstructured"), text[:300]
        ws = data.get("workspace") or {}
        if ws.get("root") != str(self.root):
            return "misrouted", f"{tool} for {self.root} answered from {ws.get('root')}"
        if ws.get("source") != self.expected_source():
            return f"wrong_source:{ws.get('source')}", f"{tool} named by {self.source} reported {ws}"
        if tool == "get_decisions" and self.state["decisions"]:
            newest_acked = self.state["decisions"][-1][1]
            if newest_acked not in {d["id"] for d in data.get("decisions", [])}:
                return "stale_read", f"decision {newest_acked} acknowledged but not among the newest 10"
        if tool == "search" and args["query"].startswith("soak"):
            wanted = next(i for t, i in self.state["decisions"] if t == args["query"])
            if wanted not in {r["id"] for r in data.get("results", []) if r["type"] == "decision"}:
                return "search_miss", f"decision {wanted} ({args['query']}) not found by search"
        return None, ""

    async def run_calls(self, c: Client, calls: int, drop_at: int | None) -> None:
        if self.source in ("handle", "session"):
            self.source, wanted = "argument", self.source
            result, error = await self.call(c, "use_workspace", {"workspace": str(self.root)})
            self.source = wanted
            if error is not None:
                raise SessionBroken(f"use_workspace failed: {error}")
            self.handle = result.structured_content["handle"]
        tools, weights = zip(*TOOL_WEIGHTS.items(), strict=True)
        for k in range(calls):
            if self.run.done():
                return
            tool = self.rng.choices(tools, weights)[0]
            drop = self.rng.uniform(0, 0.02) if k == drop_at else None
            if tool in WRITE_TOOLS:
                args, write = self.next_write(tool)
                self.run.writes.append(write)
                try:
                    result, error = await self.call(c, tool, args, drop)
                finally:
                    write.error = self.last_error
                if error is None:
                    write.acked = True
                    data = result.structured_content
                    write.ident = data["version"] if tool == "update_active_context" else data["id"]
                    if tool == "log_decision":
                        self.state["decisions"].append((write.token, write.ident))
            else:
                result, error = await self.call(c, tool, self.read_args(tool), drop)
            if error == "tool:invalid_workspace" and self.source in ("handle", "session"):
                raise SessionBroken("handle lost")  # the server restarted: ask for a new handle
            if self.run.args.think_ms:
                await anyio.sleep(self.rng.uniform(0, self.run.args.think_ms) / 1000)


def broken_reason(exc: BaseException) -> str | None:
    """The reason of the SessionBroken inside `exc` (the SDK may wrap it in exception groups)."""
    if isinstance(exc, SessionBroken):
        return str(exc)
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            reason = broken_reason(inner)
            if reason is not None:
                return reason
    return None


class CountingHandler(logging.Handler):
    """Counts the client libraries' log records (a dropped stream logs a traceback) instead of printing them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        exc = f" ({record.exc_info[0].__name__})" if record.exc_info and record.exc_info[0] else ""
        self.counts[f"{record.name}: {record.getMessage().splitlines()[0][:120]}{exc}"] += 1


def exception_detail(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(exception_detail(e) for e in exc.exceptions)[:300]
    return f"{type(exc).__name__}: {exc}"[:300]


def exception_kind(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "+".join(sorted({exception_kind(e) for e in exc.exceptions}))
    code = getattr(getattr(exc, "error", None), "code", None)
    return f"{type(exc).__name__}({code})" if code is not None else type(exc).__name__


async def client_loop(run: Run, client: int) -> None:
    rng = random.Random(run.args.seed * 1000 + client)
    state: dict[str, Any] = {"seq": 0, "decisions": []}
    backoff = 0.1
    while not run.done():
        session = Session(run, client, rng, state)
        calls = rng.randint(20, 300)
        drop_at = rng.randrange(calls) if rng.random() < run.args.drop_rate else None
        url, headers = session.transport()
        run.sessions[f"{session.source}/{session.era}"] += 1
        connected = False
        try:
            with anyio.fail_after(run.args.call_timeout * (calls + 2)):
                async with (
                    httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(run.args.call_timeout)) as http,
                    Client(streamable_http_client(url, http_client=http), mode=session.era) as c,  # type: ignore[arg-type]
                ):
                    connected = True
                    await session.run_calls(c, calls, drop_at)
            backoff = 0.1
        except Exception as exc:
            reason = broken_reason(exc)
            if not connected:
                at = run.now()
                kind = "timeout" if isinstance(exc, TimeoutError) else exception_kind(exc)
                record = CallRecord(at, at, client, "(connect)", session.source, session.era, 0.0, f"connect:{kind}")
                record.detail = exception_detail(exc)
                run.calls.append(record)
            elif reason is None:
                at = run.now()
                kind = f"session:{exception_kind(exc)}"
                record = CallRecord(at, at, client, "(session)", session.source, session.era, 0.0, kind)
                record.detail = exception_detail(exc)
                run.calls.append(record)
            if reason != "dropped by the client":
                await anyio.sleep(backoff)
                backoff = min(2.0, backoff * 2)


# ---------------------------------------------------------------------------------------------
# Restarts and sampling.


async def chaos(run: Run, rng: random.Random) -> None:
    """--restarts stops, alternating SIGTERM and SIGKILL, at jittered times in the middle of the run."""
    n = run.args.restarts
    if not n:
        return
    span = (0.3 * run.deadline, 0.9 * run.deadline)
    step = (span[1] - span[0]) / n
    times = [span[0] + step * (i + rng.uniform(0.2, 0.8)) for i in range(n)]
    kinds = [("SIGTERM", "SIGKILL")[i % 2] for i in range(n)]
    rng.shuffle(kinds)
    assert run.server is not None
    for at, how in zip(times, kinds, strict=True):
        await anyio.sleep(max(0.0, at - run.now()))
        if run.done():
            return
        restart = Restart(how, run.now())
        run.restarts.append(restart)
        restart.exit_code, restart.forced_kill = await anyio.to_thread.run_sync(run.server.stop, how)
        restart.t_exited = run.now()
        await anyio.to_thread.run_sync(run.server.start)
        restart.t_ready = run.now()


class LogWatcher:
    """Reads the server logs as they grow; error lines and exception lines get the time they were seen."""

    ERROR = re.compile(r"\b(ERROR|CRITICAL)\b")
    EXCEPTION = re.compile(r"^\s*([A-Za-z_][\w.]*(Error|Exception|Group))(:.*)?\s*$")

    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.offsets: dict[Path, int] = {}

    def poll(self, run: Run) -> None:
        for log in self.server.logs():
            with log.open("rb") as f:
                f.seek(self.offsets.get(log, 0))
                data = f.read()
            complete = data[: data.rfind(b"\n") + 1]
            self.offsets[log] = self.offsets.get(log, 0) + len(complete)
            for line in complete.decode(errors="replace").splitlines():
                if self.ERROR.search(line):
                    run.log_events.append((run.now(), log.name, "error", line.strip()[:300]))
                elif match := self.EXCEPTION.match(line):
                    run.log_events.append((run.now(), log.name, "exception", match.group(0).strip()[:300]))


async def sampler(run: Run, watcher: LogWatcher) -> None:
    hz = os.sysconf("SC_CLK_TCK")
    last: tuple[float, int | None, int, int, int] | None = None  # (t, pid, machine busy, server, self) jiffies
    while not run.done():
        pid = run.server.pid if run.server else None
        if pid:
            rss = proc_status_kb(pid, "VmRSS")
            threads = proc_status_kb(pid, "Threads")
            try:
                fds = len(os.listdir(f"/proc/{pid}/fd"))
            except OSError:
                fds = -1
            now = (run.now(), pid, cpu_jiffies()[0], process_jiffies(pid), process_jiffies("self"))
            if rss:
                sample = Sample(now[0], pid, rss / 1024, fds, threads or 0)
                if last is not None and last[1] == pid and now[0] > last[0]:
                    seconds = now[0] - last[0]
                    server, client = (now[3] - last[3]) / hz, (now[4] - last[4]) / hz
                    sample.server_cores, sample.client_cores = server / seconds, client / seconds
                    sample.other_cores = max(0.0, (now[2] - last[2]) / hz - server - client) / seconds
                run.samples.append(sample)
            last = now
        watcher.poll(run)
        await anyio.sleep(run.args.sample_s)


# ---------------------------------------------------------------------------------------------
# Verification: every acknowledged write in its own store, no token in any other.

TOKEN = re.compile(r"soak[0-9a-f]{6}c\d+n\d+")


def read_store(db: Path) -> dict[str, Any]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        integrity = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        rows = {
            "log_decision": conn.execute("SELECT id, summary FROM decisions").fetchall(),
            "log_progress": conn.execute("SELECT id, description FROM progress").fetchall(),
            "log_custom_data": conn.execute("SELECT id, key FROM custom_data").fetchall(),
            "update_active_context": conn.execute(
                "SELECT version, content FROM context_history WHERE kind = 'active'"
            ).fetchall(),
        }
    finally:
        conn.close()
    return {"integrity": integrity, "rows": rows}


def verify(run: Run, allow_root: Path) -> dict[str, Any]:
    stores = sorted(allow_root.rglob(".homeport/homeport.db"))
    expected_stores = {p / ".homeport" / "homeport.db" for p in run.projects}
    contents = {db: read_store(db) for db in stores}
    where: dict[str, set[Path]] = defaultdict(set)  # token -> stores that hold it
    by_ident: dict[tuple[Path, str, int], str] = {}
    for db, content in contents.items():
        for tool, rows in content["rows"].items():
            for ident, text in rows:
                by_ident[(db, tool, ident)] = text
                for token in TOKEN.findall(text):
                    where[token].add(db)
    lost, misplaced = [], []
    unacked_present = 0
    unacked_by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    for w in run.writes:
        own = run.projects[w.client] / ".homeport" / "homeport.db"
        if w.acked:
            text = by_ident.get((own, w.tool, w.ident or -1), "")
            if w.token not in text:
                lost.append(asdict(w))
        elif own in where.get(w.token, set()):
            unacked_present += 1
        if not w.acked:
            outcome = unacked_by_kind[w.error or "unknown"]
            outcome["not_acknowledged"] += 1
            outcome["stored"] += own in where.get(w.token, set())
        others = where.get(w.token, set()) - {own}
        if others:
            misplaced.append({**asdict(w), "found_in": sorted(str(p) for p in others)})
    return {
        "stores": [str(p) for p in stores],
        "unexpected_stores": [str(p) for p in stores if p not in expected_stores],
        "integrity": {str(db): c["integrity"] for db, c in contents.items()},
        "integrity_ok": all(c["integrity"] == ["ok"] for c in contents.values()),
        "writes_acknowledged": sum(w.acked for w in run.writes),
        "writes_unacknowledged": sum(not w.acked for w in run.writes),
        "unacknowledged_but_stored": unacked_present,
        "unacknowledged_by_error": {k: dict(v) for k, v in unacked_by_kind.items()},
        "lost_writes": len(lost),
        "lost": lost[:50],
        "misplaced_writes": len(misplaced),
        "misplaced": misplaced[:50],
    }


# ---------------------------------------------------------------------------------------------
# Report.


def near_restart(run: Run, t: float) -> bool:
    """Whether `t` falls between just before a stop and a few seconds after the server was ready again."""
    for r in run.restarts:
        ready = r.t_ready if r.t_ready == r.t_ready else t  # NaN: not ready yet when the run ended
        if r.t_signal - RESTART_WINDOW_BEFORE_S <= t <= ready + RESTART_WINDOW_AFTER_S:
            return True
    return False


def server_log_findings(run: Run) -> dict[str, Any]:
    """Error and exception lines of the server logs, each marked near a restart or near a dropped call."""
    drops = [c.end for c in run.calls if c.error == "dropped"]
    by_line: dict[tuple[str, str], dict[str, int]] = defaultdict(
        lambda: {"total": 0, "near_restart": 0, "near_client_drop": 0, "neither": 0}
    )
    for t, _log, kind, line in run.log_events:
        key = (kind, re.sub(r"\s+", " ", re.sub(r"^\[[^]]*\]\s*", "", line)).strip()[:160])
        entry = by_line[key]
        entry["total"] += 1
        # Log lines are read once per --sample-s, so they are timed to within that.
        if near_restart(run, t):
            entry["near_restart"] += 1
        elif any(t - 2 * run.args.sample_s - 1 <= d <= t + 0.5 for d in drops):
            entry["near_client_drop"] += 1
        else:
            entry["neither"] += 1
    return {
        "error_lines": sum(1 for e in run.log_events if e[2] == "error"),
        "lines": [
            {"kind": k, "line": line, **v} for (k, line), v in sorted(by_line.items(), key=lambda kv: -kv[1]["total"])
        ],
        "events": [{"t": round(t, 1), "log": log, "kind": k, "line": line} for t, log, k, line in run.log_events[:200]],
    }


def summarize(run: Run, verification: dict[str, Any], wall_s: float) -> dict[str, Any]:
    real = [c for c in run.calls if not c.tool.startswith("(")]
    ok = [c for c in real if c.error is None]
    errors: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"total": 0, "near_restart": 0, "away_from_restart": 0, "by_era": Counter(), "examples": []}
    )
    for c in run.calls:
        if c.error is None:
            continue
        e = errors[c.error]
        e["total"] += 1
        near = near_restart(run, c.end)
        e["near_restart" if near else "away_from_restart"] += 1
        e["by_era"][ERA_NAMES[c.era]] += 1
        if c.detail and len(e["examples"]) < 3 and all(x["detail"] != c.detail for x in e["examples"]):
            e["examples"].append({"t": round(c.end, 1), "tool": c.tool, "near_restart": near, "detail": c.detail})
    latency = {}
    for tool in sorted({c.tool for c in ok}):
        ms = [c.ms for c in ok if c.tool == tool]
        latency[tool] = {
            "n": len(ms),
            "p50": percentile(ms, 50),
            "p95": percentile(ms, 95),
            "p99": percentile(ms, 99),
            "max": max(ms),
        }
    for label, subset in (
        ("(all)", ok),
        ("(first call of a session)", [c for c in ok if c.first]),
        ("(later calls)", [c for c in ok if not c.first]),
    ):
        ms = [c.ms for c in subset]
        latency[label] = {
            "n": len(ms),
            "p50": percentile(ms, 50),
            "p95": percentile(ms, 95),
            "p99": percentile(ms, 99),
            "max": max(ms, default=float("nan")),
        }
    restarts = []
    for r in run.restarts:
        cut = [c for c in real if c.t <= r.t_signal <= c.end]
        r.in_flight = len(cut)
        r.in_flight_ok = sum(c.error is None for c in cut)
        r.in_flight_failed = dict(Counter(c.error for c in cut if c.error is not None))
        d = asdict(r)
        d["in_flight_outcomes"] = dict(Counter(f"{c.error or 'ok'} ({ERA_NAMES[c.era]})" for c in cut))
        d["stop_s"] = r.t_exited - r.t_signal
        d["down_s"] = r.t_ready - r.t_signal
        restarts.append(d)
    rss = [s.rss_mb for s in run.samples]

    def mean(values: list[float]) -> float:
        values = [v for v in values if v == v]
        return sum(values) / len(values) if values else float("nan")

    incarnations = []
    for pid in dict.fromkeys(s.pid for s in run.samples):
        mine = [s for s in run.samples if s.pid == pid]
        incarnations.append(
            {
                "pid": pid,
                "from_s": mine[0].t,
                "to_s": mine[-1].t,
                "rss_start_mb": mine[0].rss_mb,
                "rss_end_mb": mine[-1].rss_mb,
                "rss_max_mb": max(s.rss_mb for s in mine),
                "fds_start": mine[0].fds,
                "fds_end": mine[-1].fds,
                "fds_max": max(s.fds for s in mine),
                "threads_max": max(s.threads for s in mine),
            }
        )
    return {
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        # The interpreter's version, not its path (a path says nothing about Homeport).
        "machine": {k: v.split(" (/")[0] if k == "python" else v for k, v in machine_description().items()},
        "settings": {k: v for k, v in vars(run.args).items() if k != "out"},
        "projects": len(run.projects),
        "wall_s": wall_s,
        "calls": len(real),
        "calls_ok": len(ok),
        "calls_per_s": len(real) / wall_s if wall_s else float("nan"),
        "sessions": dict(run.sessions),
        "calls_by_tool": dict(Counter(c.tool for c in real)),
        "errors": dict(sorted(errors.items(), key=lambda kv: -kv[1]["total"])),
        "latency_ms": latency,
        "restarts": restarts,
        "final_stop": run.final_stop,
        "rss_mb": {
            "start": rss[0] if rss else None,
            "end": rss[-1] if rss else None,
            "max": max(rss, default=None),
        },
        "incarnations": incarnations,
        "cpu_cores_mean": {
            "server": mean([x.server_cores for x in run.samples]),
            "clients": mean([x.client_cores for x in run.samples]),
            "other_processes": mean([x.other_cores for x in run.samples]),
        },
        "timeline": {
            "window_s": plot_window(run),
            "latency_ms": [
                {"t": round(t, 1), "p50": p50, "p95": p95, "p99": p99, "calls": n}
                for t, p50, p95, p99, n in windows(run, plot_window(run))
            ],
            "rss": [
                {
                    "t": round(x.t, 1),
                    "pid": x.pid,
                    "rss_mb": round(x.rss_mb, 1),
                    "fds": x.fds,
                    "server_cores": round(x.server_cores, 2),
                    "other_cores": round(x.other_cores, 2),
                }
                for x in run.samples[:: max(1, round(5 / run.args.sample_s))]
            ],
        },
        "server_log": server_log_findings(run),
        "client_log": dict(run.client_log.most_common(20)),
        "verification": verification,
    }


def plot_window(run: Run) -> float:
    """Seconds per point of the latency plot: 1 s for short runs, 10 s for runs of 10 minutes and more."""
    return max(1.0, min(10.0, run.deadline / 60))


def windows(run: Run, width: float) -> list[tuple[float, float, float, float, int]]:
    """(mid, p50, p95, p99, calls) of successful calls per time window."""
    by_window: dict[int, list[float]] = defaultdict(list)
    for c in run.calls:
        if c.error is None and not c.tool.startswith("("):
            by_window[int(c.end // width)].append(c.ms)
    return [
        (
            (k + 0.5) * width,
            percentile(v, 50),
            percentile(v, 95),
            percentile(v, 99),
            len(v),
        )
        for k, v in sorted(by_window.items())
    ]


def plot(run: Run, summary: dict[str, Any], path: Path) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "plot skipped: matplotlib is not installed (pip install -e '.[bench]')"
    width = plot_window(run)
    rows = windows(run, width)
    fig, (ax_lat, ax_err, ax_rss) = plt.subplots(
        3, 1, figsize=(11, 8.5), sharex=True, gridspec_kw={"height_ratios": [3, 1, 2]}
    )
    if rows:
        t = [r[0] for r in rows]
        for i, (label, style) in enumerate((("p50", "-"), ("p95", "--"), ("p99", ":")), start=1):
            ax_lat.plot(t, [r[i] for r in rows], style, label=label)
        ax_lat.set_yscale("log")
    ax_lat.set_ylabel(f"latency, ms\n(successful calls, {width:g} s windows)")
    per_window_errors: Counter[int] = Counter(int(c.end // width) for c in run.calls if c.error is not None)
    per_window_calls: Counter[int] = Counter(int(c.end // width) for c in run.calls)
    ks = sorted(per_window_calls)
    ax_err.bar([(k + 0.5) * width for k in ks], [per_window_calls[k] / width for k in ks], width=width, label="calls/s")
    ax_err.bar(
        [(k + 0.5) * width for k in ks],
        [per_window_errors[k] / width for k in ks],
        width=width,
        color="tab:red",
        label="errors/s",
    )
    ax_err.set_ylabel("calls/s")
    ax_cpu = ax_err.twinx()
    ax_cpu.plot([x.t for x in run.samples], [x.server_cores for x in run.samples], color="tab:green", lw=0.8)
    ax_cpu.plot([x.t for x in run.samples], [x.other_cores for x in run.samples], color="tab:gray", lw=0.8)
    ax_cpu.set_ylabel("cores: server (green)\nother processes (grey)", fontsize=8)
    ax_cpu.set_ylim(bottom=0)
    for pid in dict.fromkeys(s.pid for s in run.samples):
        mine = [s for s in run.samples if s.pid == pid]
        ax_rss.plot([s.t for s in mine], [s.rss_mb for s in mine], color="tab:purple")
    ax_rss.set_ylabel("server RSS, MB")
    ax_rss.set_xlabel("seconds since start")
    for ax in (ax_lat, ax_err, ax_rss):
        for r in run.restarts:
            color = "tab:orange" if r.signal == "SIGTERM" else "tab:red"
            ax.axvline(r.t_signal, color=color, linestyle="--", linewidth=1)
            if ax is ax_lat:
                ax.annotate(r.signal, (r.t_signal, 1), xycoords=("data", "axes fraction"), rotation=90, va="top")
        ax.grid(alpha=0.3)
    ax_lat.legend(loc="upper left")
    ax_err.legend(loc="upper left")
    v = summary["verification"]
    fig.suptitle(
        f"Homeport soak: {summary['calls']:,} calls, {run.args.clients} clients, {len(run.restarts)} restarts, "
        f"{v['writes_acknowledged']:,} acknowledged writes, {v['lost_writes']} lost, {v['misplaced_writes']} misplaced"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return f"plot: {path}"


def print_summary(s: dict[str, Any]) -> None:
    v = s["verification"]
    print(f"\ncalls {s['calls']:,} ({s['calls_ok']:,} ok, {s['calls_per_s']:.0f}/s over {s['wall_s']:.0f} s)")
    print(f"sessions {sum(s['sessions'].values()):,}: {s['sessions']}")
    print("errors by kind (total / near a restart / away from restarts):")
    for kind, e in s["errors"].items():
        eras = ", ".join(f"{era} {n}" for era, n in e["by_era"].items())
        print(f"  {kind:40s} {e['total']:6d} {e['near_restart']:6d} {e['away_from_restart']:6d}   {eras}")
        for example in e["examples"][:1]:
            print(f"      e.g. {example['tool']} at {example['t']} s: {example['detail'][:140]}")
    print("latency ms (successful calls):        n      p50      p95      p99      max")
    for tool, lat in s["latency_ms"].items():
        print(
            f"  {tool[:28]:28s} {lat['n']:8d} {lat['p50']:8.2f} {lat['p95']:8.2f} {lat['p99']:8.2f} {lat['max']:8.1f}"
        )
    print("restarts:")
    for r in s["restarts"]:
        print(
            f"  {r['signal']:7s} at {r['t_signal']:6.1f} s: stopped in {r['stop_s']:.2f} s (exit {r['exit_code']}"
            f"{', forced SIGKILL' if r['forced_kill'] else ''}), ready after {r['down_s']:.2f} s; "
            f"in flight {r['in_flight']}: {r['in_flight_outcomes']}"
        )
    rss = s["rss_mb"]
    if rss["start"] is not None:
        print(f"server RSS MB: start {rss['start']:.1f}, end {rss['end']:.1f}, max {rss['max']:.1f}")
    for inc in s["incarnations"]:
        print(
            f"  pid {inc['pid']}: {inc['from_s']:.0f}-{inc['to_s']:.0f} s, RSS {inc['rss_start_mb']:.1f} -> "
            f"{inc['rss_end_mb']:.1f} (max {inc['rss_max_mb']:.1f}), fds {inc['fds_start']} -> {inc['fds_end']} "
            f"(max {inc['fds_max']}), threads max {inc['threads_max']}"
        )
    cpu = s["cpu_cores_mean"]
    print(
        f"CPU, mean cores: server {cpu['server']:.2f}, clients {cpu['clients']:.2f}, "
        f"other processes {cpu['other_processes']:.2f} (of {os.cpu_count()})"
    )
    log = s["server_log"]
    print(f"server log: {log['error_lines']} error lines (total / near a restart / near a client drop / neither)")
    for entry in log["lines"][:12]:
        print(
            f"  {entry['total']:5d} {entry['near_restart']:5d} {entry['near_client_drop']:5d} {entry['neither']:5d}  "
            f"{entry['kind']}: {entry['line'][:110]}"
        )
    if s["client_log"]:
        print("client library log records (SDK, httpx2):")
        for line, n in list(s["client_log"].items())[:8]:
            print(f"  {n:5d}  {line[:120]}")
    print(
        f"writes: {v['writes_acknowledged']:,} acknowledged, {v['writes_unacknowledged']:,} not "
        f"({v['unacknowledged_but_stored']:,} of those stored anyway); LOST {v['lost_writes']}, "
        f"MISPLACED {v['misplaced_writes']}; stores {len(v['stores'])} (unexpected {len(v['unexpected_stores'])}); "
        f"integrity {'ok' if v['integrity_ok'] else 'FAILED'}"
    )
    for kind, outcome in v["unacknowledged_by_error"].items():
        print(f"  not acknowledged after {kind}: {outcome['not_acknowledged']}, stored anyway {outcome['stored']}")


# ---------------------------------------------------------------------------------------------
# Main.


async def soak(args: argparse.Namespace, projects: list[Path], server: ServerProcess) -> Run:
    port = server.port
    await anyio.to_thread.run_sync(server.start)
    run = Run(args, projects, port)
    run.server = server
    rng = random.Random(args.seed)
    print(
        f"soak: {args.minutes:g} min, {args.clients} clients, {len(projects)} projects, {args.restarts} restarts, "
        f"server on 127.0.0.1:{port} (pid {server.pid})",
        flush=True,
    )

    async def progress() -> None:
        while not run.done():
            await anyio.sleep(30)
            errs = sum(c.error is not None for c in run.calls)
            print(f"  {run.now():5.0f} s: {len(run.calls):,} calls, {errs:,} errors", flush=True)

    watcher = LogWatcher(server)
    async with anyio.create_task_group() as tg:
        tg.start_soon(sampler, run, watcher)
        tg.start_soon(chaos, run, rng)
        if args.minutes >= 1:
            tg.start_soon(progress)
        async with anyio.create_task_group() as clients:
            for client in range(args.clients):
                clients.start_soon(client_loop, run, client)
        run.load_end = run.now()
        tg.cancel_scope.cancel()  # clients done: stop sampling, progress and any pending restart
    # A restart cut short by the end of the run may have left no server behind.
    if server.pid is None:
        await anyio.to_thread.run_sync(server.start)
    # A clean stop before the stores are read, so nothing is still being written; its log lines count too.
    final_stop = run.now()
    code, forced = await anyio.to_thread.run_sync(server.stop, "SIGTERM")
    run.final_stop = {"stop_s": run.now() - final_stop, "exit_code": code, "forced_kill": forced}
    watcher.poll(run)
    return run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--minutes", type=float, default=10.0, help="how long the load runs (default 10)")
    p.add_argument("--clients", type=int, default=4, help="concurrent clients, one project each (default 4)")
    p.add_argument("--seed", type=int, default=1, help="random seed of the schedule (default 1)")
    p.add_argument("--restarts", type=int, default=4, help="server stops, half SIGTERM, half SIGKILL (default 4)")
    p.add_argument("--idle-projects", type=int, default=2, help="projects no client uses (default 2)")
    p.add_argument("--drop-rate", type=float, default=0.2, help="share of sessions dropped mid-call (default 0.2)")
    p.add_argument("--think-ms", type=float, default=5.0, help="pause after each call, 0..this ms (default 5)")
    p.add_argument("--call-timeout", type=float, default=30.0, help="seconds one call may take (default 30)")
    p.add_argument("--max-calls", type=int, default=400_000, help="stop after this many calls (default 400,000)")
    p.add_argument("--sample-s", type=float, default=1.0, help="RSS sampling interval, s (default 1)")
    p.add_argument("--port", type=int, default=0, help="server port on 127.0.0.1 (default: a free one)")
    p.add_argument("--out", type=Path, default=RESULTS, help="where the JSON and PNG go (default bench/results)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (stores, server logs)")
    p.add_argument("--no-plot", action="store_true", help="write the JSON summary only")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="homeport-soak-"))
    client_log_handler = CountingHandler()
    # Made here, so that the server is stopped whatever ends the run (Ctrl-C too).
    server = ServerProcess(args.port or free_port(), work / "projects", work)
    try:
        projects = make_projects(work / "projects", args.clients + args.idle_projects)
        logging.getLogger().addHandler(client_log_handler)
        run = anyio.run(soak, args, projects, server)
        run.client_log = client_log_handler.counts
        wall = run.load_end
        verification = verify(run, work / "projects")
        summary = summarize(run, verification, wall)
        args.out.mkdir(parents=True, exist_ok=True)
        stem = args.out / f"{dt.date.today().isoformat()}-soak"
        stem.with_suffix(".json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
        print_summary(summary)
        print(f"summary: {stem.with_suffix('.json')}")
        if not args.no_plot:
            print(plot(run, summary, stem.with_suffix(".png")))
        bad = (
            verification["lost_writes"]
            or verification["misplaced_writes"]
            or verification["unexpected_stores"]
            or not verification["integrity_ok"]
            or "misrouted" in summary["errors"]
        )
        return 1 if bad else 0
    finally:
        if server.pid is not None:
            server.stop("SIGKILL")
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
