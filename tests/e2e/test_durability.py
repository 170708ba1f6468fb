"""Durability: servers killed with SIGKILL in the middle of write bursts lose no acknowledged write.

Each cycle starts a server on one workspace, lets three concurrent writers log custom data as fast
as the server answers, and kills the server with SIGKILL at a random moment. A write counts as
acknowledged when its result reached the client. After every cycle, over stdio and over HTTP,
every acknowledged write is in the store (opened directly) and SQLite's integrity check is ok.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from ._support import clean_env, make_project, running_http_server, serve_args, store_file

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

KILLS_EACH = 10  # stdio and HTTP: 20 kills in all
WRITERS = 3


def stored_keys(root: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{store_file(root)}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return {row[0] for row in conn.execute("SELECT key FROM custom_data")}
    finally:
        conn.close()


def child_serving(marker: str) -> int:
    """The pid of this process's child whose command line holds `marker` (the stdio server)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if ppid == os.getpid() and marker.encode() in cmdline:
            return int(entry)
    raise AssertionError(f"no child process serving {marker}")


async def burst(client: Client, cycle: int, acked: set[str], first: anyio.Event) -> None:
    async def writer(w: int) -> None:
        n = 0
        while True:
            key = f"{cycle}-{w}-{n}"
            try:
                result = await client.call_tool("log_custom_data", {"category": "kill", "key": key, "value": n})
            except Exception:
                return  # the server is gone: this write was never acknowledged
            if result.is_error:
                return
            acked.add(key)
            first.set()
            n += 1

    async with anyio.create_task_group() as group:
        for w in range(WRITERS):
            group.start_soon(writer, w)


async def kill_after_first_ack(pid: int, first: anyio.Event, rng: random.Random) -> None:
    await first.wait()
    await anyio.sleep(rng.uniform(0.05, 0.6))
    os.kill(pid, signal.SIGKILL)


async def test_stdio_servers_killed_mid_burst_keep_every_acknowledged_write(tmp_path: Path) -> None:
    root = make_project(tmp_path / "shop")
    rng, acked = random.Random(7), set[str]()
    for cycle in range(KILLS_EACH):
        params = StdioServerParameters(
            command=sys.executable, args=serve_args("--workspace", str(root)), cwd=str(tmp_path), env=clean_env()
        )
        first = anyio.Event()
        with anyio.fail_after(300):
            try:
                mode = "auto" if cycle % 2 else "legacy"
                async with (
                    Client(params, mode=mode, read_timeout_seconds=10) as client,  # type: ignore[arg-type]
                    anyio.create_task_group() as group,
                ):
                    group.start_soon(burst, client, cycle, acked, first)
                    group.start_soon(kill_after_first_ack, child_serving(str(root)), first, rng)
            except Exception:
                pass  # the client notices its server died; what matters is what the store kept
        missing = acked - stored_keys(root)
        assert not missing, f"cycle {cycle}: {len(missing)} acknowledged writes lost, e.g. {sorted(missing)[:3]}"
    assert len(acked) > KILLS_EACH * WRITERS


async def test_http_servers_killed_mid_burst_keep_every_acknowledged_write(tmp_path: Path) -> None:
    root = make_project(tmp_path / "shop")
    rng, acked = random.Random(11), set[str]()
    for cycle in range(KILLS_EACH):
        with running_http_server(allow_root=tmp_path, cwd=tmp_path, log=tmp_path / f"server{cycle}.log") as server:
            first = anyio.Event()
            with anyio.fail_after(300):
                try:
                    async with (
                        httpx2.AsyncClient(headers={"X-Workspace-Id": str(root)}, timeout=10) as http,
                        Client(
                            streamable_http_client(server.mcp_url, http_client=http),  # type: ignore[arg-type]
                            mode="auto" if cycle % 2 else "legacy",
                            read_timeout_seconds=10,
                        ) as client,
                        anyio.create_task_group() as group,
                    ):
                        group.start_soon(burst, client, cycle, acked, first)
                        group.start_soon(kill_after_first_ack, server.process.pid, first, rng)
                except Exception:
                    pass
        missing = acked - stored_keys(root)
        assert not missing, f"cycle {cycle}: {len(missing)} acknowledged writes lost, e.g. {sorted(missing)[:3]}"
    assert len(acked) > KILLS_EACH * WRITERS
