#!/usr/bin/env python3
"""Homeport-only figures: HTTP concurrency, routing cost by source, 10,000 workspaces, search at scale.

Four sections (choose with --only; all by default):

  http        `homeport serve --http` as a subprocess on 127.0.0.1, with 1, 8 and 32 concurrent
              clients (official client, Streamable HTTP, workspace in the X-Workspace-Id header)
              running the mixed workload (write, read, search, set, get in turn): calls/s, p50/p95,
              and the server's CPU. The echo floor served over HTTP the same way is the reference.
  routing     cost per call by workspace source. In-process (`Client(server)` on
              build_runtime/build_server): argument, config (--workspace), cwd, handle
              (use_workspace), session (legacy connection), roots (2026-07-28: fetched every call;
              legacy: cached per connection), and argument, handle and config from a client that
              declared roots (they bound every source: a round trip per call on 2026-07-28 unless
              the call passes a handle, one per connection on legacy). Over HTTP (one client):
              argument, header, query.
              Plus the resolver alone (no MCP) per source, in microseconds.
  workspaces  one in-process server, W workspaces (default 10,000) touched round-robin (a write
              to each, then a read of each) against the same calls on a single workspace: p50/p95,
              open file descriptors of this process (/proc/self/fd) and its RSS. The first touch of
              a workspace creates and migrates its store; a sample of those is timed, the others get
              a copy of a freshly migrated empty store (seeding, not measured).
  search      one workspace seeded with 1k, 10k and 100k decisions (synthetic Zipf-distributed
              words; the first 200 through decisions.log_decision, the rest in one transaction
              through the same insert path, so items, tags and the search_index FTS5 table agree),
              then searches by query class: p50/p95 through the store function and through the
              `search` tool of an in-process server.

Results: printed and written to bench/results/<date>-homeport-only[-quick].md (+ .json).
Everything runs on 127.0.0.1 and in temporary directories that are removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import fields
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ListRootsResult, Root

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    BENCH,
    RESULTS,
    describe_exception,
    fmt,
    machine_description,
    machine_markdown,
    md_table,
    open_fds,
    percentile,
    proc_status_kb,
    process_jiffies,
    wait_until_quiet,
)
from adapters import OPS, custom_key, custom_value, decision, query

HOMEPORT_CMD = [sys.executable, "-c", "from homeport.cli import main; main()"]


# ---------------------------------------------------------------------------------------------
# Helpers.


def _check(result: Any, what: str) -> Any:
    if result.is_error:
        text = result.content[0].text if result.content else ""
        raise RuntimeError(f"{what} failed: {text[:300]}")
    return result


async def mixed_op(client: Any, k: int, workspace: str | None = None) -> None:
    """The k-th call of the mixed workload (Homeport's tool names), optionally naming the workspace."""
    op = OPS[k % len(OPS)]
    extra = {"workspace": workspace} if workspace else {}
    i = k // len(OPS)
    if op == "write":
        args, tool = {**decision(i)}, "log_decision"
    elif op == "read":
        args, tool = {"limit": 10}, "get_decisions"
    elif op == "search":
        args, tool = {"query": query(i), "limit": 10}, "search"
    elif op == "set":
        args, tool = {"category": "bench", "key": custom_key(i), "value": custom_value(i)}, "log_custom_data"
    else:
        args, tool = {"category": "bench", "key": custom_key(i)}, "get_custom_data"
    _check(await client.call_tool(tool, {**args, **extra}), tool)


def stats(lat_ms: list[float]) -> dict[str, float]:
    return {
        "n": len(lat_ms),
        "p50": percentile(lat_ms, 50),
        "p95": percentile(lat_ms, 95),
        "p99": percentile(lat_ms, 99),
        "max": max(lat_ms) if lat_ms else float("nan"),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_settings(**kwargs: Any) -> Any:
    """ServeSettings with only the fields this Homeport version has (the settings grow over time)."""
    from homeport.core import ServeSettings

    names = {f.name for f in fields(ServeSettings)}
    return ServeSettings(**{k: v for k, v in kwargs.items() if k in names})


def in_process_server(**settings: Any) -> tuple[Any, Any]:
    from homeport.core import build_runtime
    from homeport.server import build_server

    runtime = build_runtime(serve_settings(**settings))
    return runtime, build_server(runtime)


class HttpServer:
    """A server subprocess on 127.0.0.1:port, ready when GET /healthz answers."""

    def __init__(self, cmd: list[str], port: int, cwd: Path, log: Path, env: dict[str, str] | None = None) -> None:
        self.cmd, self.port, self.cwd, self.log, self.env = cmd, port, cwd, log, env
        self.proc: subprocess.Popen | None = None
        self.startup_s = float("nan")

    def __enter__(self) -> HttpServer:
        self._log = open(self.log, "w")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            self.cmd, cwd=self.cwd, stdout=self._log, stderr=subprocess.STDOUT, env={**os.environ, **(self.env or {})}
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}: {self.log.read_text()[-800:]}")
            try:
                if httpx2.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1).status_code == 200:
                    self.startup_s = time.perf_counter() - t0
                    return self
            except httpx2.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError("server did not answer /healthz within 60 s")

    def __exit__(self, *exc: Any) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


def http_client(url: str, headers: dict[str, str] | None = None) -> Client:
    http = httpx2.AsyncClient(headers=headers or {}, timeout=httpx2.Timeout(60, read=300))
    return Client(streamable_http_client(url, http_client=http)), http


# ---------------------------------------------------------------------------------------------
# Section: HTTP concurrency.


async def http_level(url: str, clients: int, total_calls: int, headers: dict[str, str], pid: int) -> dict[str, Any]:
    per_client = max(1, total_calls // clients)
    opened: list[Any] = []
    async with AsyncExitStack() as stack:
        for _ in range(clients):
            client, http = http_client(url, headers)
            await stack.enter_async_context(http)
            opened.append(await stack.enter_async_context(client))
        for c in opened:  # warm every connection
            for k in range(len(OPS)):
                await mixed_op(c, k)
        lat: list[float] = []

        async def run_client(c: Any, offset: int) -> None:
            for k in range(per_client):
                t = time.perf_counter()
                with anyio.fail_after(120):
                    await mixed_op(c, offset + k)
                lat.append((time.perf_counter() - t) * 1000)

        server_j0, self_j0 = process_jiffies(pid), process_jiffies("self")
        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for n, c in enumerate(opened):
                tg.start_soon(run_client, c, len(OPS) + n * per_client)
        wall = time.perf_counter() - t0
        hz = os.sysconf("SC_CLK_TCK")
        server_cores = (process_jiffies(pid) - server_j0) / hz / wall
        client_cores = (process_jiffies("self") - self_j0) / hz / wall
    return {
        "clients": clients,
        "calls": len(lat),
        "wall_s": wall,
        "cps": len(lat) / wall,
        **stats(lat),
        "server_cores": server_cores,
        "client_cores": client_cores,
        "server_hwm_mb": (proc_status_kb(pid, "VmHWM") or 0) / 1024,
    }


async def section_http(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"levels": {}, "floor_levels": {}}
    ws = root / "http-ws"
    ws.mkdir()
    for name, cmd in (
        ("homeport", [*HOMEPORT_CMD, "serve", "--http", "--port", "{port}", "--allow-root", str(root)]),
        (
            "echo",
            [sys.executable, str(BENCH / "servers" / "echo_server.py"), "--http", "{port}", "--workspace", str(ws)],
        ),
    ):
        port = free_port()
        wait_until_quiet(max_wait=args.quiet_wait) if args.quiet_wait else None
        with HttpServer(
            [c.replace("{port}", str(port)) for c in cmd],
            port,
            root,
            root / f"{name}-http.log",
            env={"HOMEPORT_DATA_DIR": str(root / "homeport-data")},
        ) as server:
            out[f"{name}_startup_s"] = server.startup_s
            for level in args.http_clients:
                print(f"  http {name}: {level} client(s), {args.http_calls} calls", flush=True)
                res = await http_level(server.url, level, args.http_calls, {"X-Workspace-Id": str(ws)}, server.proc.pid)
                out["levels" if name == "homeport" else "floor_levels"][level] = res
            if name == "homeport":
                out["routing_http"] = await http_routing(server.url, ws, args.routing_calls)
    return out


async def http_routing(url: str, ws: Path, n: int) -> dict[str, Any]:
    """One client: the same read with the workspace as argument, header, and query parameter."""
    res: dict[str, Any] = {}
    variants = {
        "argument (HTTP)": (url, {}, str(ws)),
        "header (HTTP)": (url, {"X-Workspace-Id": str(ws)}, None),
        "query (HTTP)": (f"{url}?project_path={ws}", {}, None),
    }
    for label, (u, headers, arg) in variants.items():
        client, http = http_client(u, headers)
        async with http, client as c:
            lat = await timed_reads(c, n, arg)
        res[label] = stats(lat)
    return res


# ---------------------------------------------------------------------------------------------
# Section: routing overhead by source (in-process).


async def timed_reads(c: Any, n: int, workspace: str | None, warmup: int = 20) -> list[float]:
    """n timed `get_custom_data` calls (a small read: routing dominates), after warm-up."""
    args: dict[str, Any] = {"category": "bench", "key": "k"}
    if workspace:
        args["workspace"] = workspace
    for _ in range(warmup):
        _check(await c.call_tool("get_custom_data", args), "get_custom_data")
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        _check(await c.call_tool("get_custom_data", args), "get_custom_data")
        lat.append((time.perf_counter() - t) * 1000)
    return lat


async def section_routing(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    from servers.echo_server import build_echo_server

    from homeport.workspace import CallInputs

    ws = root / "route-ws"
    ws.mkdir()
    n = args.routing_calls
    out: dict[str, Any] = {"end_to_end": {}, "resolver_us": {}}

    # Seed the store so reads find it.
    _, srv = in_process_server(transport="stdio", workspace=str(ws))
    async with Client(srv) as c:
        _check(await c.call_tool("log_custom_data", {"category": "bench", "key": "k", "value": 1}), "seed")

    async def roots_cb(_ctx: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=ws.as_uri(), name="ws")])

    floor = build_echo_server(str(ws))
    async with Client(floor) as c:
        await c.call_tool("log_custom_data", {"category": "bench", "key": "k", "value": 1})
        out["end_to_end"]["echo floor (in-process)"] = stats(await timed_reads(c, n, None))

    cases = [  # label, settings, client kwargs, workspace argument ("handle": mint one first)
        ("config (--workspace)", {"workspace": str(ws)}, {}, None),
        ("argument", {}, {}, str(ws)),
        ("handle (use_workspace)", {}, {}, "handle"),
        ("session (legacy use_workspace)", {}, {"mode": "legacy"}, "session"),
        ("cwd", {"cwd": ws}, {}, None),
        ("roots (2026-07-28: fetched every call)", {}, {"list_roots_callback": roots_cb}, None),
        ("roots (legacy: cached per connection)", {}, {"mode": "legacy", "list_roots_callback": roots_cb}, None),
        # Declared roots bound every source: what naming the workspace costs when the client has roots.
        ("argument (legacy)", {}, {"mode": "legacy"}, str(ws)),
        ("argument + roots declared (legacy)", {}, {"mode": "legacy", "list_roots_callback": roots_cb}, str(ws)),
        ("argument + roots declared (2026-07-28)", {}, {"list_roots_callback": roots_cb}, str(ws)),
        ("handle + roots declared (2026-07-28)", {}, {"list_roots_callback": roots_cb}, "handle"),
        (
            "config + roots declared (legacy)",
            {"workspace": str(ws)},
            {"mode": "legacy", "list_roots_callback": roots_cb},
            None,
        ),
        ("config + roots declared (2026-07-28)", {"workspace": str(ws)}, {"list_roots_callback": roots_cb}, None),
    ]
    for label, settings, client_kwargs, arg in cases:
        runtime, srv = in_process_server(transport="stdio", **settings)
        try:
            async with Client(srv, **client_kwargs) as c:
                if arg in ("handle", "session"):
                    r = _check(await c.call_tool("use_workspace", {"workspace": str(ws)}), "use_workspace")
                    handle = (r.structured_content or json.loads(r.content[0].text))["handle"]
                    arg = handle if arg == "handle" else None
                probe = await c.call_tool(
                    "get_custom_data", {"category": "bench", "key": "k", **({"workspace": arg} if arg else {})}
                )
                data = probe.structured_content or json.loads(probe.content[0].text)
                source = (data.get("workspace") or {}).get("source")
                lat = await timed_reads(c, n, arg)
            out["end_to_end"][label] = {**stats(lat), "source": source}
        except Exception as exc:
            out["end_to_end"][label] = {"error": describe_exception(exc)}
        finally:
            runtime.close()

    # The resolver alone, per source (no MCP, no store).
    runtime, _ = in_process_server(transport="stdio", cwd=ws)
    handle = runtime.handles.mint("local", ws)
    resolver = runtime.resolver
    inputs = {
        "argument": CallInputs(argument=str(ws)),
        "handle": CallInputs(argument=handle),
        "roots": CallInputs(roots=[ws.as_uri()]),
        "cwd": CallInputs(),
    }
    runtime_cfg, _ = in_process_server(transport="stdio", workspace=str(ws))
    for label, call in inputs.items():
        out["resolver_us"][label] = _time_resolver(resolver, call)
    out["resolver_us"]["config"] = _time_resolver(runtime_cfg.resolver, CallInputs())
    runtime_http, _ = in_process_server(transport="http", allow_roots=(root,))
    out["resolver_us"]["header (http)"] = _time_resolver(runtime_http.resolver, CallInputs(header=str(ws)))
    for r in (runtime, runtime_cfg, runtime_http):
        r.close()
    return out


def _time_resolver(resolver: Any, call: Any, n: int = 3000) -> dict[str, float]:
    for _ in range(200):
        resolver.resolve(call)
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        resolver.resolve(call)
        lat.append((time.perf_counter() - t) * 1e6)
    return {"p50": percentile(lat, 50), "p95": percentile(lat, 95)}


# ---------------------------------------------------------------------------------------------
# Section: many workspaces.


async def section_workspaces(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    from homeport.store import Store, store_path_for

    count = args.workspaces
    base = root / "many"
    base.mkdir()
    out: dict[str, Any] = {"workspaces": count}

    # A freshly migrated, empty store to copy into the workspaces that are not created through the API.
    template = root / "template-ws"
    template.mkdir()
    store = Store.open(template, create=True)
    store.close()
    tpl_db = store_path_for(template)
    with sqlite3.connect(tpl_db) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    out["template_kb"] = tpl_db.stat().st_size / 1024

    runtime, srv = in_process_server(transport="stdio")
    fds_before = open_fds()
    max_fds = fds_before
    dirs = [base / f"ws{i:05d}" for i in range(count)]
    t0 = time.perf_counter()
    sample = min(args.create_sample, count)
    for i, d in enumerate(dirs):
        d.mkdir()
        if i >= sample:
            store_dir = store_path_for(d).parent
            store_dir.mkdir()
            shutil.copyfile(tpl_db, store_path_for(d))
            for extra in (".gitignore",):
                if (tpl_db.parent / extra).exists():
                    shutil.copyfile(tpl_db.parent / extra, store_dir / extra)
    out["seed_s"] = time.perf_counter() - t0

    async with Client(srv) as c:
        # Single workspace: the same calls, one workspace.
        single = base / "single"
        single.mkdir()
        _check(await c.call_tool("log_decision", {**decision(0), "workspace": str(single)}), "seed")
        n_single = min(count, args.single_calls)
        lat_sw, lat_sr = [], []
        for k in range(n_single):
            t = time.perf_counter()
            _check(await c.call_tool("log_decision", {**decision(k), "workspace": str(single)}), "write")
            lat_sw.append((time.perf_counter() - t) * 1000)
        for _ in range(n_single):
            t = time.perf_counter()
            _check(await c.call_tool("get_decisions", {"limit": 10, "workspace": str(single)}), "read")
            lat_sr.append((time.perf_counter() - t) * 1000)
        out["single"] = {"write": stats(lat_sw), "read": stats(lat_sr), "all": stats(lat_sw + lat_sr)}

        # First touch through the API: creates and migrates the store.
        lat_create = []
        for d in dirs[:sample]:
            t = time.perf_counter()
            _check(await c.call_tool("log_decision", {**decision(0), "workspace": str(d)}), "create")
            lat_create.append((time.perf_counter() - t) * 1000)
        out["first_touch_create"] = stats(lat_create)

        # Round-robin: a write to every workspace, then a read of every workspace.
        lat_w, lat_r = [], []
        t0 = time.perf_counter()
        for phase, lat in (("write", lat_w), ("read", lat_r)):
            for i, d in enumerate(dirs):
                t = time.perf_counter()
                if phase == "write":
                    _check(await c.call_tool("log_decision", {**decision(i), "workspace": str(d)}), "write")
                else:
                    _check(await c.call_tool("get_decisions", {"limit": 10, "workspace": str(d)}), "read")
                lat.append((time.perf_counter() - t) * 1000)
                if i % 100 == 0:
                    max_fds = max(max_fds, open_fds())
                if i and i % 2000 == 0:
                    print(f"    round-robin {phase}: {i:,}/{count:,}", flush=True)
        out["round_robin_s"] = time.perf_counter() - t0
        out["round_robin"] = {"write": stats(lat_w), "read": stats(lat_r), "all": stats(lat_w + lat_r)}
    out["fds_before"] = fds_before
    out["fds_max"] = max(max_fds, open_fds())
    out["fds_end"] = open_fds()
    out["open_stores"] = len(runtime.stores)
    out["rss_mb"] = (proc_status_kb("self", "VmRSS") or 0) / 1024
    out["hwm_mb"] = (proc_status_kb("self", "VmHWM") or 0) / 1024
    runtime.close()
    out["fds_after_close"] = open_fds()
    return out


# ---------------------------------------------------------------------------------------------
# Section: search at scale.


def _vocabulary(size: int, rng: random.Random) -> list[str]:
    syll = [
        "ka",
        "lo",
        "mi",
        "ren",
        "tas",
        "vo",
        "qui",
        "ber",
        "dun",
        "sel",
        "pra",
        "gor",
        "zin",
        "ux",
        "fal",
        "hem",
        "jor",
        "nik",
        "ost",
        "wey",
    ]
    tech = [
        "sqlite",
        "cache",
        "deploy",
        "auth",
        "schema",
        "queue",
        "token",
        "index",
        "migration",
        "search",
        "latency",
        "billing",
        "session",
        "webhook",
        "retry",
        "tenant",
        "invoice",
        "export",
        "backup",
        "locale",
    ]
    words = set(tech)
    out = list(tech)
    while len(out) < size:
        w = "".join(rng.choice(syll) for _ in range(rng.randint(2, 4)))
        if w not in words:
            words.add(w)
            out.append(w)
    rng.shuffle(out)
    return out


class Corpus:
    """Zipf-distributed words (s = 1) over a 5,000-word vocabulary; deterministic."""

    def __init__(self, seed: int = 6) -> None:
        self.rng = random.Random(seed)
        self.vocab = _vocabulary(5000, self.rng)
        weights = [1 / (r + 1) for r in range(len(self.vocab))]
        total = sum(weights)
        self.cum = []
        acc = 0.0
        for w in weights:
            acc += w / total
            self.cum.append(acc)

    def words(self, n: int) -> list[str]:
        import bisect

        return [self.vocab[min(bisect.bisect_left(self.cum, self.rng.random()), len(self.vocab) - 1)] for _ in range(n)]

    def item(self) -> dict[str, Any]:
        return {
            "summary": " ".join(self.words(self.rng.randint(6, 10))).capitalize(),
            "rationale": " ".join(self.words(self.rng.randint(15, 30))) + ".",
            "tags": self.words(2),
        }

    def queries(self) -> dict[str, list[str]]:
        v = self.vocab
        return {
            "very frequent word (rank 1-3)": [v[0], v[1], v[2]],
            "frequent word (rank 10-30)": v[10:30:2],
            "medium word (rank 100-300)": v[100:300:20],
            "rare word (rank 1000-5000)": v[1000:5000:400],
            "two medium words (AND)": [f"{v[100 + i]} {v[150 + i]}" for i in range(0, 50, 5)],
            "prefix (medium word, 3 letters*)": [v[100 + i][:3] + "*" for i in range(0, 100, 10)],
        }


def _seed(store: Any, corpus: Corpus, count: int, already: int) -> float:
    """Add decisions until the store holds `count`.

    The first 200 go through decisions.log_decision (one transaction each). The rest go through
    the same insert path (decisions.insert_decision: the decisions row, its tags, its search_index
    row) inside one transaction, with `search.unindex_item` switched off while it runs: every id
    is new, so the DELETE it issues before each insert can find nothing, but it scans the FTS
    table (item_type/item_id are UNINDEXED columns), which would make seeding quadratic.
    """
    from homeport.store import decisions
    from homeport.store import search as search_mod

    t0 = time.perf_counter()
    k = already
    while k < min(count, 200):
        decisions.log_decision(store, **corpus.item())
        k += 1
    if k < count:
        insert = getattr(decisions, "insert_decision", None)
        if insert is None:  # older store API: one transaction per item
            while k < count:
                decisions.log_decision(store, **corpus.item())
                k += 1
        else:
            saved = search_mod.unindex_item
            search_mod.unindex_item = lambda *a, **kw: None
            try:
                with store.write() as conn:
                    while k < count:
                        insert(conn, **corpus.item())
                        k += 1
            finally:
                search_mod.unindex_item = saved
    return time.perf_counter() - t0


def _write_latency(store: Any, corpus: Corpus, n: int) -> dict[str, float]:
    """decisions.log_decision at the store's current size (each call adds one item)."""
    from homeport.store import decisions

    lat = []
    for _ in range(n):
        t = time.perf_counter()
        decisions.log_decision(store, **corpus.item())
        lat.append((time.perf_counter() - t) * 1000)
    return stats(lat)


async def section_search(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    from homeport.store import Store, store_path_for
    from homeport.store import search as search_mod

    ws = root / "search-ws"
    ws.mkdir()
    store = Store.open(ws, create=True)
    corpus = Corpus()
    queries = corpus.queries()
    out: dict[str, Any] = {"sizes": {}}
    have = 0
    runtime, srv = in_process_server(transport="stdio", workspace=str(ws))
    try:
        for size in args.search_sizes:
            seed_s = _seed(store, corpus, size - args.write_probe, have)
            write = _write_latency(store, corpus, args.write_probe)  # the last items of this size
            have = size
            with sqlite3.connect(store_path_for(ws)) as con:
                con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                indexed = con.execute("SELECT count(*) FROM search_index WHERE item_type = 'decision'").fetchone()[0]
            print(f"  search: {size:,} items (seeded in {seed_s:.1f} s)", flush=True)
            res: dict[str, Any] = {
                "seed_s": seed_s,
                "indexed": indexed,
                "write": write,
                "db_mb": store_path_for(ws).stat().st_size / 1024 / 1024,
                "store": {},
                "tool": {},
            }
            all_store, all_tool = [], []
            async with Client(srv) as c:
                for cls, qs in queries.items():
                    lat_s, lat_t, hits = [], [], []
                    for q in qs[:2]:  # warm-up
                        search_mod.search(store, q, limit=10)
                    for rep in range(args.search_reps):
                        for q in qs:
                            t = time.perf_counter()
                            found = search_mod.search(store, q, limit=10)
                            lat_s.append((time.perf_counter() - t) * 1000)
                            if rep == 0:
                                hits.append(len(found))
                            t = time.perf_counter()
                            _check(await c.call_tool("search", {"query": q, "limit": 10}), "search")
                            lat_t.append((time.perf_counter() - t) * 1000)
                    res["store"][cls] = {
                        **stats(lat_s),
                        "mean_hits": sum(hits) / max(1, len(hits)),
                        "matches": _matches(store_path_for(ws), qs),
                    }
                    res["tool"][cls] = stats(lat_t)
                    all_store += lat_s
                    all_tool += lat_t
            res["store"]["all queries"] = stats(all_store)
            res["tool"]["all queries"] = stats(all_tool)
            out["sizes"][size] = res
    finally:
        store.close()
        runtime.close()
    return out


def _matches(db: Path, qs: list[str]) -> float:
    """Mean number of rows each query matches (how much bm25 has to rank)."""
    from homeport.store.search import plain_words

    counts = []
    with sqlite3.connect(db) as con:
        for q in qs:
            try:
                counts.append(
                    con.execute("SELECT count(*) FROM search_index WHERE search_index MATCH ?", (q,)).fetchone()[0]
                )
            except sqlite3.OperationalError:
                counts.append(
                    con.execute(
                        "SELECT count(*) FROM search_index WHERE search_index MATCH ?", (plain_words(q),)
                    ).fetchone()[0]
                )
    return sum(counts) / max(1, len(counts))


# ---------------------------------------------------------------------------------------------
# Report.


def report(args: argparse.Namespace, res: dict[str, Any], machine: dict[str, str], started: str, elapsed: float) -> str:
    o: list[str] = [
        f"# Homeport-only figures ({started})\n",
        f"Command: `python3 bench/homeport_only.py {' '.join(args.argv)}`".rstrip() + "  ",
        f"Run took {elapsed / 60:.1f} min.\n",
        "## Machine\n",
        machine_markdown(machine) + "\n",
    ]
    verdicts: list[list[str]] = []

    if "http" in res:
        h = res["http"]
        o.append("## Streamable HTTP, concurrent clients\n")
        o.append(
            "Official client, one process for all clients (2026-07-28 protocol), workspace in the "
            "X-Workspace-Id header, mixed workload (write, read, search, set, get in turn). "
            f"{args.http_calls} calls per level. Server and client CPU in cores "
            f"(the machine has {os.cpu_count()}): when the client process is near a full core, "
            "the client, not the server, limits the rate. "
            f"Start-up to /healthz: Homeport {fmt(h.get('homeport_startup_s'))} s, echo floor "
            f"{fmt(h.get('echo_startup_s'))} s.\n"
        )
        rows = []
        for level, r in h["levels"].items():
            f = h["floor_levels"].get(level, {})
            rows.append(
                [
                    level,
                    fmt(r["cps"]),
                    fmt(r["p50"]),
                    fmt(r["p95"]),
                    fmt(r["server_cores"]),
                    fmt(r["client_cores"]),
                    fmt(f.get("cps")),
                    fmt(f.get("p50")),
                    fmt(f.get("p95")),
                    f"{r['cps'] / f['cps']:.2f}×" if f else "–",
                ]
            )
        o.append(
            md_table(
                [
                    "clients",
                    "Homeport calls/s",
                    "p50 (ms)",
                    "p95 (ms)",
                    "server CPU",
                    "client CPU",
                    "floor calls/s",
                    "floor p50",
                    "floor p95",
                    "Homeport ÷ floor calls/s",
                ],
                rows,
            )
            + "\n"
        )

    if "routing" in res:
        r = res["routing"]
        o.append("## Routing cost by workspace source\n")
        o.append(
            f"`get_custom_data` of one key (a small read, so routing dominates), {args.routing_calls} "
            "sequential calls per case after 20 warm-up calls. In-process cases use `Client(server)` "
            "(2026-07-28 unless marked legacy); HTTP cases go through `homeport serve --http` with one "
            "client. Δ is p50 minus the p50 of the cheapest Homeport source of the same transport.\n"
        )
        e2e = dict(r["end_to_end"])
        e2e.update(res.get("http", {}).get("routing_http", {}))
        inproc = [v["p50"] for k, v in e2e.items() if "p50" in v and "HTTP" not in k and "floor" not in k]
        http = [v["p50"] for k, v in e2e.items() if "p50" in v and "HTTP" in k]
        rows = []
        for label, v in e2e.items():
            if "error" in v:
                rows.append([label, "–", "–", "–", "–", v["error"][:120]])
                continue
            base = min(http) if "HTTP" in label else min(inproc) if inproc else v["p50"]
            delta = "" if "floor" in label else f"{v['p50'] - base:+.3f}"
            rows.append([label, fmt(v["p50"], 3), fmt(v["p95"], 3), delta, v.get("source", "–") or "–", ""])
        o.append(
            md_table(["source", "p50 (ms)", "p95 (ms)", "Δ p50 (ms)", "reported source", "note"], rows, "lrrrll") + "\n"
        )
        o.append("The resolver alone (`WorkspaceResolver.resolve`, no MCP, no store), per call:\n")
        o.append(
            md_table(
                ["source", "p50 (µs)", "p95 (µs)"],
                [[k, fmt(v["p50"]), fmt(v["p95"])] for k, v in r["resolver_us"].items()],
            )
            + "\n"
        )

    if "workspaces" in res:
        w = res["workspaces"]
        o.append(f"## {w['workspaces']:,} workspaces, round-robin, one in-process server\n")
        o.append(
            f"A write to each workspace in turn, then a read of each (`log_decision` / `get_decisions` "
            f"limit 10, workspace as argument), against {w['single']['write']['n']:,} writes and as many "
            f"reads on one workspace. {w['first_touch_create']['n']:,} workspaces were created through the "
            f"API (first touch: store created and migrated); the other "
            f"{w['workspaces'] - w['first_touch_create']['n']:,} got a copy of a migrated empty store "
            f"({w['template_kb']:.0f} kB, seeding in {w['seed_s']:.1f} s, not measured). The store cache "
            f"keeps {w['open_stores']} stores open. RSS and fds are this process's (server and client).\n"
        )
        rows = []
        for op in ("write", "read", "all"):
            s, rr = w["single"][op], w["round_robin"][op]
            rows.append(
                [op, fmt(s["p50"]), fmt(s["p95"]), fmt(rr["p50"]), fmt(rr["p95"]), f"{rr['p95'] / s['p95']:.2f}×"]
            )
        rows.append(
            [
                "first touch (create + migrate)",
                "–",
                "–",
                fmt(w["first_touch_create"]["p50"]),
                fmt(w["first_touch_create"]["p95"]),
                "–",
            ]
        )
        o.append(
            md_table(
                [
                    "calls",
                    "single p50 (ms)",
                    "single p95 (ms)",
                    "round-robin p50 (ms)",
                    "round-robin p95 (ms)",
                    "p95 ratio",
                ],
                rows,
            )
            + "\n"
        )
        o.append(
            md_table(
                ["open fds before", "max during", "at end", "after closing stores", "RSS at end (MB)", "peak RSS (MB)"],
                [
                    [
                        w["fds_before"],
                        w["fds_max"],
                        w["fds_end"],
                        w["fds_after_close"],
                        fmt(w["rss_mb"]),
                        fmt(w["hwm_mb"]),
                    ]
                ],
            )
            + "\n"
        )
        ratio_all = w["round_robin"]["all"]["p95"] / w["single"]["all"]["p95"]
        verdicts.append(
            [
                f"{w['workspaces']:,} workspaces: p95 ≤ 2× single-workspace p95",
                f"{ratio_all:.2f}× ({fmt(w['round_robin']['all']['p95'])} vs {fmt(w['single']['all']['p95'])} ms)",
                "meets" if ratio_all <= 2 else "**misses**",
            ]
        )
        verdicts.append(
            ["open file descriptors < 300", f"max {w['fds_max']}", "meets" if w["fds_max"] < 300 else "**misses**"]
        )

    if "search" in res:
        s = res["search"]
        o.append("## Search at scale (one workspace, in-process)\n")
        o.append(
            "Decisions with Zipf-distributed words (5,000-word vocabulary, 21-40 words each), "
            "`limit` 10. `store` = `homeport.store.search.search` called directly; `tool` = the "
            f"`search` tool through an in-process `Client(server)`. {args.search_reps} rounds of each "
            "class's queries. Matches = rows the query matches (what bm25 must rank).\n"
        )
        sizes = list(s["sizes"])
        classes = list(next(iter(s["sizes"].values()))["store"])
        rows = []
        for cls in classes:
            row = [cls]
            for size in sizes:
                st, tl = s["sizes"][size]["store"][cls], s["sizes"][size]["tool"][cls]
                m = st.get("matches")
                row += [
                    f"{fmt(st['p50'])} / {fmt(st['p95'])}",
                    f"{fmt(tl['p50'])} / {fmt(tl['p95'])}",
                    fmt(m, 0) if m is not None else "–",
                ]
            rows.append(row)
        header = ["query class"]
        for size in sizes:
            header += [f"{size:,}: store p50 / p95 (ms)", f"{size:,}: tool p50 / p95 (ms)", f"{size:,}: matches"]
        o.append(md_table(header, rows) + "\n")
        o.append(
            f"Store size, seeding time, and the cost of one more write (`decisions.log_decision`, "
            f"{args.write_probe} calls made as the last items of each size):\n"
        )
        o.append(
            md_table(
                ["items", "indexed", "db (MB)", "seeding (s)", "write p50 (ms)", "write p95 (ms)"],
                [
                    [
                        f"{k:,}",
                        f"{v['indexed']:,}",
                        fmt(v["db_mb"]),
                        fmt(v["seed_s"]),
                        fmt(v["write"]["p50"]),
                        fmt(v["write"]["p95"]),
                    ]
                    for k, v in s["sizes"].items()
                ],
            )
            + "\n"
        )
        big = max(sizes)
        st, tl = s["sizes"][big]["store"]["all queries"], s["sizes"][big]["tool"]["all queries"]
        worst = max((c for c in classes if c != "all queries"), key=lambda c: s["sizes"][big]["store"][c]["p95"])
        verdicts.append(
            [
                f"search at {big:,} items: p95 < 15 ms in-process (store function, all classes)",
                f"{fmt(st['p95'])} ms (worst class: {worst}, {fmt(s['sizes'][big]['store'][worst]['p95'])} ms)",
                "meets" if st["p95"] < 15 else "**misses**",
            ]
        )
        verdicts.append(
            [
                f"search at {big:,} items: p95 < 15 ms through the in-process tool",
                f"{fmt(tl['p95'])} ms",
                "meets" if tl["p95"] < 15 else "**misses**",
            ]
        )

    if verdicts:
        o.append("## Targets (issue 6)\n")
        o.append(md_table(["target", "measured", "verdict"], verdicts, "lll") + "\n")
    if res.get("errors"):
        o.append("## Errors\n")
        o += [f"- {e}" for e in res["errors"]]
    return "\n".join(o)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench/homeport_only.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples:\n  python3 bench/homeport_only.py --quick\n"
        "  python3 bench/homeport_only.py\n"
        "  python3 bench/homeport_only.py --only search "
        "--search-sizes 1000,10000,100000\n",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="small sizes: 300 HTTP calls per level, 200 routing calls, 500 workspaces, search at 1k/10k",
    )
    p.add_argument("--only", default="http,routing,workspaces,search", help="sections to run (comma-separated)")
    p.add_argument("--http-clients", default="1,8,32", help="concurrency levels (default 1,8,32)")
    p.add_argument(
        "--http-calls", type=int, default=None, help="calls per concurrency level (default 1600; --quick 300)"
    )
    p.add_argument("--routing-calls", type=int, default=None, help="calls per routing case (default 1000; --quick 200)")
    p.add_argument(
        "--workspaces", type=int, default=None, help="workspaces touched round-robin (default 10000; --quick 500)"
    )
    p.add_argument(
        "--create-sample",
        type=int,
        default=200,
        help="workspaces created through the API (timed first touch); the rest are seeded by copy (default 200)",
    )
    p.add_argument(
        "--single-calls", type=int, default=2000, help="writes and reads on the single workspace (default 2000)"
    )
    p.add_argument("--search-sizes", default=None, help="items (default 1000,10000,100000; --quick 1000,10000)")
    p.add_argument("--search-reps", type=int, default=None, help="rounds of each query class (default 10; --quick 3)")
    p.add_argument(
        "--write-probe",
        type=int,
        default=50,
        help="timed log_decision calls at each search size (the last items of that size; default 50)",
    )
    p.add_argument(
        "--quiet-wait",
        type=float,
        default=120.0,
        help="wait up to this many seconds for other processes to go quiet before each section (0: no wait)",
    )
    p.add_argument("--out", type=Path, default=RESULTS, help="results directory (default bench/results)")
    args = p.parse_args(argv)
    args.argv = argv
    q = args.quick
    args.http_calls = args.http_calls or (300 if q else 1600)
    args.routing_calls = args.routing_calls or (200 if q else 1000)
    args.workspaces = args.workspaces or (500 if q else 10_000)
    args.search_sizes = [int(x) for x in (args.search_sizes or ("1000,10000" if q else "1000,10000,100000")).split(",")]
    args.search_reps = args.search_reps or (3 if q else 10)
    args.http_clients = [int(x) for x in args.http_clients.split(",")]
    args.sections = [s.strip() for s in args.only.split(",") if s.strip()]
    return args


async def main_async(args: argparse.Namespace) -> int:
    started = time.strftime("%Y-%m-%d %H:%M")
    t_start = time.monotonic()
    machine = machine_description()
    res: dict[str, Any] = {"errors": []}
    root = Path(tempfile.mkdtemp(prefix="homeport-only-"))
    sections = {
        "http": section_http,
        "routing": section_routing,
        "workspaces": section_workspaces,
        "search": section_search,
    }
    try:
        for name in args.sections:
            if name not in sections:
                res["errors"].append(f"unknown section {name!r}")
                continue
            if args.quiet_wait:
                wait_until_quiet(max_wait=args.quiet_wait)
            print(f"section {name}", flush=True)
            t = time.monotonic()
            sub = root / name
            sub.mkdir()
            try:
                res[name] = await sections[name](args, sub)
            except Exception as exc:
                res["errors"].append(f"{name}: {describe_exception(exc)}")
                print(f"  [fail] {res['errors'][-1]}", flush=True)
            print(f"  {name} took {time.monotonic() - t:.0f} s", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    text = report(args, res, machine, started, time.monotonic() - t_start)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = time.strftime("%Y-%m-%d") + "-homeport-only" + ("-quick" if args.quick else "")
    (args.out / f"{stem}.md").write_text(text)
    (args.out / f"{stem}.json").write_text(json.dumps({"machine": machine, **res}, indent=1, default=str))
    print()
    print(text)
    print(f"written: {args.out / (stem + '.md')}, {args.out / (stem + '.json')}")
    return 1 if res["errors"] else 0


def main(argv: list[str] | None = None) -> int:
    return anyio.run(main_async, parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
