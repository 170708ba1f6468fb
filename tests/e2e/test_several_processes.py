"""Several `homeport serve --http` processes on one PostgreSQL store behave as one server.

A 2026-07-28 client keeps nothing on a server between calls, so a load balancer may send each of
its requests to any process. Here every HTTP request of one SDK `Client` goes to a process chosen
at random (a seeded generator, so a failure replays): handles minted by one process are used on
the others, and the roots round trip (an `InputRequiredResult`, then the client's retry with the
answer) often has its two legs on different processes. Then clients write concurrently through
every process, and every acknowledged write must be in the store exactly once.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ListRootsResult, Root

from ._serving import Served, serving
from ._support import clean_env, error_text, make_project, ok

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.postgres]

PROCESSES = 3


@dataclass
class Sent:
    port: int
    method: str
    tool: str | None
    retry: bool  # a tools/call carrying the client's answer to an InputRequiredResult


@dataclass
class RandomProcess(httpx2.AsyncBaseTransport):
    """Send each request to one of `ports` at random, as a load balancer without stickiness would."""

    ports: list[int]
    rng: random.Random
    sent: list[Sent] = field(default_factory=list)
    inner: httpx2.AsyncHTTPTransport = field(default_factory=httpx2.AsyncHTTPTransport)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self.rng.choice(self.ports)
        request.url = request.url.copy_with(port=port)
        request.headers["host"] = f"127.0.0.1:{port}"
        self.sent.append(Sent(port, *_what(request)))
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _what(request: httpx2.Request) -> tuple[str, str | None, bool]:
    try:
        body = json.loads(request.content or b"{}")
    except ValueError:
        return request.method, None, False
    params = body.get("params") or {}
    return str(body.get("method")), params.get("name"), bool(params.get("inputResponses"))


@contextlib.asynccontextmanager
async def random_client(servers: list[Served], seed: int, roots: list[Path] | None = None):
    transport = RandomProcess([s.port for s in servers], random.Random(seed))

    async def list_roots(_context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=p.as_uri(), name=p.name) for p in roots or []])

    http = httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(30, read=120))
    async with http:
        url = f"{servers[0].base}/mcp"
        async with Client(
            streamable_http_client(url, http_client=http),
            mode="auto",
            list_roots_callback=list_roots if roots is not None else None,
        ) as client:
            yield client, transport


@pytest.fixture
def cluster(tmp_path: Path, store_postgres_url: str) -> Iterator[tuple[list[Served], Path]]:
    """PROCESSES servers on one PostgreSQL store, each with its own data and state directory (as on
    separate machines): nothing but the store is shared."""
    base = tmp_path / "src"
    base.mkdir()
    with contextlib.ExitStack() as stack:
        servers = []
        for n in range(PROCESSES):
            home = tmp_path / f"home{n}"
            home.mkdir()
            env = clean_env(HOME=str(home), HOMEPORT_STATE_DIR=str(home / "state"))
            args = ["--store", store_postgres_url, "--allow-root", str(base), "--data-dir", str(home / "data")]
            servers.append(stack.enter_context(serving(args, cwd=base, log=tmp_path / f"serve{n}.log", env=env)))
        yield servers, base


def _crossed_round_trips(sent: list[Sent]) -> int:
    """Round trips whose retry landed on another process than the question."""
    crossed = 0
    for before, after in itertools.pairwise(sent):
        if after.retry and before.tool == after.tool and before.port != after.port:
            crossed += 1
    return crossed


async def test_one_client_spread_over_every_process_at_random_gets_every_call_right(cluster) -> None:
    servers, base = cluster
    app, lib = make_project(base / "app"), make_project(base / "lib")
    async with random_client(servers, seed=20260728, roots=[base]) as (client, transport):
        # A path argument from a client with roots: a roots round trip on every call.
        where = ok(await client.call_tool("where_am_i", {"workspace": str(app)}))
        assert where["root"] == str(app)
        assert where["declared_roots"] == [base.as_uri()]
        handle = ok(await client.call_tool("use_workspace", {"workspace": str(app)}))["handle"]
        assert handle.startswith("ws_")

        logged = []
        for n in range(12):
            result = ok(await client.call_tool("log_decision", {"workspace": handle, "summary": f"app decision {n}"}))
            assert result["workspace"] == {"root": str(app), "source": "argument"}
            logged.append(result["id"])
        for n in range(4):
            result = ok(
                await client.call_tool(
                    "log_progress", {"workspace": str(lib), "status": "TODO", "description": f"lib task {n}"}
                )
            )
            assert result["workspace"]["root"] == str(lib)
        ok(
            await client.call_tool(
                "update_active_context", {"workspace": handle, "content": {"focus": "several processes"}}
            )
        )

        decisions = ok(await client.call_tool("get_decisions", {"workspace": handle, "limit": 100}))
        assert sorted(d["id"] for d in decisions["decisions"]) == sorted(logged)
        assert ok(await client.call_tool("get_active_context", {"workspace": handle}))["content"] == {
            "focus": "several processes"
        }
        progress = ok(await client.call_tool("get_progress", {"workspace": str(lib)}))
        assert sorted(p["description"] for p in progress["progress"]) == [f"lib task {n}" for n in range(4)]
        assert ok(await client.call_tool("get_decisions", {"workspace": str(lib)}))["decisions"] == []
        # By words: in auto mode what meaning adds depends on whether the server has embedded the items yet.
        hits = ok(await client.call_tool("search", {"workspace": handle, "query": "decision", "mode": "words"}))
        assert len(hits["results"]) == 12

    calls = [s for s in transport.sent if s.method == "tools/call"]
    assert {s.port for s in calls} == {s.port for s in servers}, "every process answered calls"
    handle_calls = {s.port for s in calls if s.tool == "log_decision"}
    assert len(handle_calls) > 1, "the handle was used on processes other than the one that minted it"
    assert _crossed_round_trips(transport.sent) >= 3, transport.sent


async def test_a_handle_from_one_process_is_refused_by_a_deployment_with_another_key(
    tmp_path: Path, store_postgres_url: str
) -> None:
    base = tmp_path / "src"
    app = make_project(base / "app")
    env = clean_env(HOME=str(tmp_path), HOMEPORT_STATE_DIR=str(tmp_path / "state"))
    args = ["--store", store_postgres_url, "--allow-root", str(base)]
    with (
        serving(args, cwd=base, log=tmp_path / "a.log", env=env) as shared,
        serving(args, cwd=base, log=tmp_path / "b.log", env={**env, "HOMEPORT_HANDLE_KEY": "k" * 40}) as other,
    ):
        async with random_client([shared], seed=1) as (client, _):
            handle = ok(await client.call_tool("use_workspace", {"workspace": str(app)}))["handle"]
        async with random_client([other], seed=1) as (client, _):
            text = error_text(await client.call_tool("get_decisions", {"workspace": handle}))
    assert "unknown or expired" in text and "[invalid_workspace]" in text


WRITERS = 6
WRITES_EACH = 15


async def test_concurrent_writers_through_every_process_lose_nothing_and_duplicate_nothing(cluster) -> None:
    servers, base = cluster
    app = make_project(base / "shared-app")
    acknowledged: list[tuple[str, str]] = []

    async def writer(n: int) -> None:
        async with random_client(servers, seed=1000 + n) as (client, _):
            handle = ok(await client.call_tool("use_workspace", {"workspace": str(app)}))["handle"]
            for k in range(WRITES_EACH):
                summary = f"writer {n} write {k}"
                tool, args = (
                    ("log_decision", {"summary": summary})
                    if k % 2
                    else ("log_custom_data", {"category": f"writer{n}", "key": f"w{k}", "value": summary})
                )
                result = ok(await client.call_tool(tool, {"workspace": handle, **args}))
                assert result["workspace"]["root"] == str(app)
                acknowledged.append((tool, summary))

    with anyio.fail_after(240):
        async with anyio.create_task_group() as tg:
            for n in range(WRITERS):
                tg.start_soon(writer, n)
    assert len(acknowledged) == WRITERS * WRITES_EACH

    async with random_client(servers, seed=7) as (client, _):
        decisions = ok(await client.call_tool("get_decisions", {"workspace": str(app), "limit": 1000}))["decisions"]
        custom = ok(await client.call_tool("get_custom_data", {"workspace": str(app)}))["items"]
    summaries = [d["summary"] for d in decisions]
    values = [c["value"] for c in custom]
    expected_decisions = sorted(s for tool, s in acknowledged if tool == "log_decision")
    expected_custom = sorted(s for tool, s in acknowledged if tool == "log_custom_data")
    assert sorted(summaries) == expected_decisions  # every one present, none twice
    assert sorted(values) == expected_custom
    assert len({d["id"] for d in decisions}) == len(decisions)


@pytest.fixture
def logical_cluster(tmp_path: Path, store_postgres_url: str) -> Iterator[list[Served]]:
    """Two `--logical-workspaces` servers on one PostgreSQL store with different data directories."""
    with contextlib.ExitStack() as stack:
        servers = []
        for n in range(2):
            home = tmp_path / f"home{n}"
            home.mkdir()
            env = clean_env(HOME=str(home), HOMEPORT_STATE_DIR=str(home / "state"))
            srv = home / "srv"
            srv.mkdir()
            args = ["--store", store_postgres_url, "--logical-workspaces", "--allow-root", str(srv)]
            args += ["--data-dir", str(home / "data")]
            servers.append(stack.enter_context(serving(args, cwd=srv, log=tmp_path / f"serve{n}.log", env=env)))
        yield servers


async def test_a_logical_workspace_is_one_memory_whichever_process_and_data_directory_serves_it(
    logical_cluster, store_postgres_url: str, tmp_path: Path
) -> None:
    """`acme/api` is the workspace's key in the shared store, never a path under one process's data
    directory: what one process writes, the other reads, and `homeport copy --key acme/api` fills it."""
    from ._support import http_client

    first, second = logical_cluster
    headers = {"X-Workspace-Id": "acme/api"}
    async with http_client(f"{first.base}/mcp", mode="auto", headers=headers) as client:
        written = ok(await client.call_tool("log_decision", {"summary": "one memory for acme/api"}))
        assert written["workspace"] == {"key": "acme/api", "source": "header"}
    async with http_client(f"{second.base}/mcp", mode="legacy", headers=headers) as client:
        read = ok(await client.call_tool("get_decisions", {}))
        assert [d["summary"] for d in read["decisions"]] == ["one memory for acme/api"]

    from homeport.store.postgres import PostgresStores

    stores = PostgresStores(store_postgres_url, pool_size=1)
    try:
        assert "acme/api" in stores.revisions()
        under_data_dirs = [key for key in stores.revisions() if key.startswith(str(tmp_path))]
        assert not under_data_dirs, stores.revisions()
    finally:
        stores.engine.dispose()


async def test_where_am_i_names_the_postgresql_store_not_a_sqlite_file(cluster, store_postgres_url: str) -> None:
    from ._support import http_client

    servers, base = cluster
    app = make_project(base / "app")
    async with http_client(f"{servers[0].base}/mcp", mode="auto", headers={"X-Workspace-Id": str(app)}) as client:
        before = ok(await client.call_tool("where_am_i", {}))
        ok(await client.call_tool("log_decision", {"summary": "kept in PostgreSQL"}))
        after = ok(await client.call_tool("where_am_i", {}))
        handle = ok(await client.call_tool("use_workspace", {"workspace": str(app)}))
    assert (before["store_kind"], before["store_exists"], after["store_exists"]) == ("postgresql", False, True)
    assert after["store"].endswith(f"(workspace {app})") and "homeport.db" not in after["store"]
    assert handle["store"] == after["store"]
    assert not (app / ".homeport" / "homeport.db").exists()
