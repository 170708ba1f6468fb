"""Misrouting under load: 16 HTTP clients and 4 stdio servers at once, every source, 3,280 calls (10,000 deep).

Each client owns one workspace and names it its own way (argument, header, query, a handle,
a legacy session default; over stdio --workspace, the cwd, CLAUDE_PROJECT_DIR, the argument).
Every result must name the client's workspace, and afterwards every store, opened directly,
holds exactly the items its own client wrote: none lost, none from anyone else.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from ._support import clean_env, make_project, ok, running_http_server, stdio_client, store_file

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HTTP_CLIENTS = 16
STDIO_CLIENTS = 4
# The number of calls is the test's strength, like a property's examples: 16 x 250 + 4 x 1,500 = 10,000 under
# HOMEPORT_HYPOTHESIS=deep, 16 x 80 + 4 x 500 = 3,280 by default (stdio calls cost the client a fifth of what
# HTTP calls do). Either way every way of naming a workspace is used by hundreds of calls, in both protocol eras.
DEEP = os.environ.get("HOMEPORT_HYPOTHESIS", "ci") == "deep"
HTTP_CALLS_EACH = 250 if DEEP else 80
STDIO_CALLS_EACH = 1500 if DEEP else 500
# What the default must still cover: each way of naming a workspace at least this many calls, and each
# protocol era over each transport at least ERA_CALLS.
WAY_CALLS = 200
ERA_CALLS = 400
HTTP_WAYS = ("argument", "header", "query", "handle", "session")
STDIO_WAYS = ("config", "cwd", "client_env", "argument")


@contextlib.asynccontextmanager
async def http_client(url: str, mode: str, headers: dict[str, str]) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120)) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,  # type: ignore[arg-type]
    ):
        yield client


async def drive(
    client: Client, name: str, root: Path, workspace: str | None, written: dict[str, set[str]], count: int
) -> int:
    """`count` calls: writes, reads and searches; every result must name `root`."""
    extra = {"workspace": workspace} if workspace else {}
    mine = written.setdefault(name, set())
    for n in range(count):
        if n % 3 == 2:
            result = ok(await client.call_tool("get_custom_data", {"category": "load", **extra}))
            assert {item["key"] for item in result["items"]} <= mine | {f"{name}-{n - 1}"}
        elif n % 5 == 4:
            result = ok(await client.call_tool("search", {"query": name, **extra}))
        else:
            key = f"{name}-{n}"
            result = ok(
                await client.call_tool("log_custom_data", {"category": "load", "key": key, "value": name, **extra})
            )
            mine.add(key)
        assert result["workspace"]["root"] == str(root), (name, n, result["workspace"])
    return count


async def test_sixteen_http_clients_and_four_stdio_servers_never_write_into_each_others_workspaces(
    tmp_path: Path,
) -> None:
    roots = [make_project(tmp_path / f"ws{i:02d}") for i in range(HTTP_CLIENTS + STDIO_CLIENTS)]
    written: dict[str, set[str]] = {}
    calls: Counter[tuple[str, str, str]] = Counter()  # (transport, way, era): calls made
    with running_http_server(allow_root=tmp_path, cwd=tmp_path, log=tmp_path / "server.log") as server:

        async def http_one(i: int) -> None:
            root, way = roots[i], HTTP_WAYS[i % len(HTTP_WAYS)]
            mode = "legacy" if way == "session" or i % 2 else "auto"
            url, headers, argument = server.mcp_url, {}, None
            if way == "header":
                headers = {"X-Workspace-Id": str(root)}
            elif way == "query":
                url = f"{server.mcp_url}?project_path={root}"
            elif way == "argument":
                argument = str(root)
            async with http_client(url, mode, headers) as client:
                if way in ("handle", "session"):
                    handle = ok(await client.call_tool("use_workspace", {"workspace": str(root)}))["handle"]
                    argument = handle if way == "handle" else None
                made = await drive(client, f"c{i:02d}", root, argument, written, HTTP_CALLS_EACH)
                calls["http", way, mode] += made  # after the await: `+= await` reads the count before it

        async def stdio_one(i: int) -> None:
            root, way = roots[i], STDIO_WAYS[i - HTTP_CLIENTS]
            args: tuple[str, ...] = ()
            env = clean_env()
            cwd: Path = tmp_path  # not a project: only the chosen way names one
            if way == "config":
                args = ("--workspace", str(root))
            elif way == "cwd":
                cwd = root
            elif way == "client_env":
                env = clean_env(CLAUDE_PROJECT_DIR=str(root))
            mode = "auto" if i % 2 else "legacy"
            async with stdio_client(cwd=cwd, mode=mode, args=args, env=env) as client:
                argument = str(root) if way == "argument" else None
                made = await drive(client, f"c{i:02d}", root, argument, written, STDIO_CALLS_EACH)
                calls["stdio", way, mode] += made

        with anyio.fail_after(600):
            async with anyio.create_task_group() as group:
                for i in range(HTTP_CLIENTS):
                    group.start_soon(http_one, i)
                for i in range(HTTP_CLIENTS, HTTP_CLIENTS + STDIO_CLIENTS):
                    group.start_soon(stdio_one, i)

    assert calls.total() == HTTP_CLIENTS * HTTP_CALLS_EACH + STDIO_CLIENTS * STDIO_CALLS_EACH
    by_way: Counter[tuple[str, str]] = Counter()
    by_era: Counter[tuple[str, str]] = Counter()
    for (transport, way, era), n in calls.items():
        by_way[transport, way] += n
        by_era[transport, era] += n
    assert set(by_way) == {("http", w) for w in HTTP_WAYS} | {("stdio", w) for w in STDIO_WAYS}
    assert min(by_way.values()) >= WAY_CALLS, by_way
    assert set(by_era) == {(t, e) for t in ("http", "stdio") for e in ("auto", "legacy")}
    assert min(by_era.values()) >= ERA_CALLS, by_era
    for i, root in enumerate(roots):
        conn = sqlite3.connect(f"file:{store_file(root)}?mode=ro", uri=True)
        try:
            rows: list[Any] = conn.execute("SELECT key, value FROM custom_data WHERE category = 'load'").fetchall()
        finally:
            conn.close()
        assert {key for key, _ in rows} == written[f"c{i:02d}"], root
        assert {json.loads(value) for _, value in rows} == {f"c{i:02d}"}, root
    assert not store_file(tmp_path).exists()
