"""`homeport serve --http` as a real process: routing by header, query and argument, the allowlist,
Host/Origin checks, health, many concurrent clients, and session defaults.

One server serves the whole module. It runs with `--allow-root ALLOW` and its cwd is itself a
project inside ALLOW, so any call that fell back to the server's cwd would be visible (HTTP must
never use it).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import anyio
import httpx2
import pytest

from ._support import (
    HttpServer,
    error_text,
    http_client,
    make_project,
    ok,
    running_http_server,
    store_file,
    where,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MODES = ["auto", "legacy"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    allow = Path(str(tmp_path_factory.mktemp("allow"))).resolve()
    cwd = make_project(allow / "server-cwd")
    log = Path(str(tmp_path_factory.mktemp("logs"))) / "homeport-http.log"
    with running_http_server(allow_root=allow, cwd=cwd, log=log) as running:
        yield running


def new_project(server: HttpServer, name: str) -> Path:
    return make_project(server.allow_root / f"{name}-{uuid.uuid4().hex[:8]}")


@pytest.mark.parametrize("mode", MODES)
async def test_the_x_workspace_id_header_routes_the_call_with_source_header(server: HttpServer, mode: str) -> None:
    project = new_project(server, "header")
    async with http_client(server.mcp_url, mode=mode, headers={"X-Workspace-Id": str(project)}) as client:
        written = await client.call_tool("log_decision", {"summary": "routed by header"})
        read = await client.call_tool("get_decisions", {})
    assert where(written) == (str(project), "header")
    assert where(read) == (str(project), "header")
    assert [d["summary"] for d in ok(read)["decisions"]] == ["routed by header"]
    assert store_file(project).is_file()
    assert not (server.cwd / ".homeport").exists()


@pytest.mark.parametrize("mode", MODES)
async def test_a_file_uri_in_the_header_routes_like_the_path(server: HttpServer, mode: str) -> None:
    project = new_project(server, "header uri")  # a space: percent-encoded in the URI
    async with http_client(server.mcp_url, mode=mode, headers={"X-Workspace-Id": project.as_uri()}) as client:
        written = await client.call_tool("log_decision", {"summary": "routed by file URI"})
    assert "%20" in project.as_uri()
    assert where(written) == (str(project), "header")


@pytest.mark.parametrize("mode", MODES)
async def test_the_project_path_query_parameter_routes_the_call_with_source_query(
    server: HttpServer, mode: str
) -> None:
    project = new_project(server, "query")
    url = f"{server.mcp_url}?project_path={quote(str(project), safe='')}"
    async with http_client(url, mode=mode) as client:
        written = await client.call_tool("log_decision", {"summary": "routed by query"})
        read = await client.call_tool("get_decisions", {})
    assert where(written) == (str(project), "query")
    assert [d["summary"] for d in ok(read)["decisions"]] == ["routed by query"]


@pytest.mark.parametrize("mode", MODES)
async def test_the_argument_beats_the_header_and_the_header_beats_the_query(server: HttpServer, mode: str) -> None:
    by_argument = new_project(server, "argument")
    by_header = new_project(server, "header")
    by_query = new_project(server, "query")
    url = f"{server.mcp_url}?project_path={quote(str(by_query), safe='')}"
    async with http_client(url, mode=mode, headers={"X-Workspace-Id": str(by_header)}) as client:
        argued = await client.call_tool("log_decision", {"summary": "argument wins", "workspace": str(by_argument)})
        headed = await client.call_tool("where_am_i", {})
    assert where(argued) == (str(by_argument), "argument")
    assert (ok(headed)["root"], ok(headed)["source"]) == (str(by_header), "header")
    assert store_file(by_argument).is_file()
    assert not (by_header / ".homeport").exists()
    assert not (by_query / ".homeport").exists()


@pytest.mark.parametrize("mode", MODES)
async def test_a_workspace_outside_the_allowed_root_is_refused_naming_the_allowed_roots(
    server: HttpServer, mode: str, tmp_path: Path
) -> None:
    outside = make_project(tmp_path / "outside")
    async with http_client(server.mcp_url, mode=mode) as client:
        by_argument = error_text(await client.call_tool("log_decision", {"summary": "x", "workspace": str(outside)}))
    async with http_client(server.mcp_url, mode=mode, headers={"X-Workspace-Id": str(outside)}) as client:
        by_header = error_text(await client.call_tool("get_decisions", {}))
    for text in (by_argument, by_header):
        assert "outside the allowed roots" in text
        assert str(server.allow_root) in text
        assert "--allow-root" in text
    assert not (outside / ".homeport").exists()


@pytest.mark.parametrize("mode", MODES)
async def test_a_sibling_directory_sharing_the_allowed_roots_name_prefix_is_refused(
    server: HttpServer, mode: str
) -> None:
    evil = make_project(server.allow_root.parent / f"{server.allow_root.name}-evil")
    assert str(evil).startswith(str(server.allow_root))  # the string-prefix trap this test is about
    async with http_client(server.mcp_url, mode=mode) as client:
        by_argument = error_text(await client.call_tool("log_decision", {"summary": "x", "workspace": str(evil)}))
    async with http_client(server.mcp_url, mode=mode, headers={"X-Workspace-Id": str(evil)}) as client:
        by_header = error_text(await client.call_tool("log_decision", {"summary": "x"}))
    for text in (by_argument, by_header):
        assert "outside the allowed roots" in text
        assert str(server.allow_root) in text
    assert not (evil / ".homeport").exists()


def _initialize_body() -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "e2e-raw", "version": "0"},
            },
        }
    ).encode()


async def _raw_post(server: HttpServer, **headers: str) -> httpx2.Response:
    base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=60)) as http:
        return await http.post(server.mcp_url, content=_initialize_body(), headers={**base, **headers})


async def test_a_foreign_origin_gets_403_and_a_foreign_host_gets_421(server: HttpServer) -> None:
    # A same-origin request with the same body is accepted, so the refusals below are about the headers.
    allowed = await _raw_post(server, Origin=f"http://127.0.0.1:{server.port}")
    assert allowed.status_code == 200, allowed.text
    evil_origin = await _raw_post(server, Origin="http://evil.example")
    assert evil_origin.status_code == 403, evil_origin.text
    evil_host = await _raw_post(server, Host="evil.example")
    assert evil_host.status_code == 421, evil_host.text


async def test_healthz_reports_status_ok_as_json(server: HttpServer) -> None:
    async with httpx2.AsyncClient(timeout=60) as http:
        response = await http.get(f"{server.base}/healthz")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["status"] == "ok"
    # Unauthenticated and answered whatever the Host (a DNS-rebinding page can read it): no paths.
    assert str(server.allow_root) not in response.text and "allowed_roots" not in body


CLIENTS = 10
WRITES_PER_CLIENT = 20


async def test_ten_concurrent_clients_each_write_only_into_their_own_workspace(server: HttpServer) -> None:
    run = uuid.uuid4().hex[:6]
    projects = [new_project(server, f"tenant{i}") for i in range(CLIENTS)]
    markers = [f"mark{run}t{i}x" for i in range(CLIENTS)]
    modes = ["legacy" if i % 2 else "auto" for i in range(CLIENTS)]
    written: dict[int, list[dict]] = {i: [] for i in range(CLIENTS)}

    async def writer(i: int) -> None:
        headers = {"X-Workspace-Id": str(projects[i])}
        async with http_client(server.mcp_url, mode=modes[i], headers=headers) as client:
            for n in range(WRITES_PER_CLIENT):
                result = await client.call_tool(
                    "log_decision",
                    {
                        "summary": f"{markers[i]} decision {n}",
                        "rationale": f"written by client {i} ({modes[i]})",
                        "tags": [markers[i]],
                    },
                )
                written[i].append(ok(result))

    with anyio.fail_after(90):
        async with anyio.create_task_group() as tg:
            for i in range(CLIENTS):
                tg.start_soon(writer, i)

    for i in range(CLIENTS):
        assert {w["workspace"]["root"] for w in written[i]} == {str(projects[i])}
        assert {w["workspace"]["source"] for w in written[i]} == {"header"}

    found: dict[int, list[dict]] = {}
    leaks: dict[tuple[int, int], list[dict]] = {}

    async def checker(i: int) -> None:
        headers = {"X-Workspace-Id": str(projects[i])}
        async with http_client(server.mcp_url, mode=modes[i], headers=headers) as client:
            got = ok(await client.call_tool("get_decisions", {"limit": 1000}))
            assert got["workspace"] == {"root": str(projects[i]), "source": "header"}
            found[i] = got["decisions"]
            own = ok(await client.call_tool("search", {"query": markers[i], "limit": 200, "mode": "words"}))
            assert len(own["results"]) == WRITES_PER_CLIENT, own
            for j in range(CLIENTS):
                if j != i:
                    leaks[(i, j)] = ok(await client.call_tool("search", {"query": markers[j], "mode": "words"}))[
                        "results"
                    ]

    with anyio.fail_after(90):
        async with anyio.create_task_group() as tg:
            for i in range(CLIENTS):
                tg.start_soon(checker, i)

    for i in range(CLIENTS):
        assert len(found[i]) == WRITES_PER_CLIENT
        assert all(d["summary"].startswith(markers[i] + " ") for d in found[i]), found[i]
        assert all(d["tags"] == [markers[i]] for d in found[i])
        assert sorted(d["summary"] for d in found[i]) == sorted(
            f"{markers[i]} decision {n}" for n in range(WRITES_PER_CLIENT)
        )
    assert {k: v for k, v in leaks.items() if v} == {}

    for i in range(CLIENTS):
        with contextlib.closing(sqlite3.connect(store_file(projects[i]))) as db:
            total = db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0]
            own_rows = db.execute(
                "SELECT COUNT(*) FROM decisions WHERE summary LIKE ?", (f"{markers[i]} %",)
            ).fetchone()[0]
        assert (total, own_rows) == (WRITES_PER_CLIENT, WRITES_PER_CLIENT), projects[i]
    assert not (server.cwd / ".homeport").exists()


async def test_ten_first_writes_into_ten_fresh_workspaces_released_at_the_same_moment_all_succeed(
    server: HttpServer,
) -> None:
    """Regression: each first write creates its store on its own worker thread; in 52bb8a8 the
    concurrent Alembic migrations ran inside each other (process-global proxies), failing the calls,
    leaving stores stamped without their tables, and at times killing the server with SIGSEGV."""
    projects = [new_project(server, f"fresh{i}") for i in range(CLIENTS)]
    connected = 0
    all_connected = anyio.Event()
    results: dict[int, object] = {}

    async def first_writer(i: int) -> None:
        nonlocal connected
        async with http_client(
            server.mcp_url, mode="legacy" if i % 2 else "auto", headers={"X-Workspace-Id": str(projects[i])}
        ) as client:
            connected += 1
            if connected == CLIENTS:
                all_connected.set()
            await all_connected.wait()  # every first write leaves at the same moment
            results[i] = await client.call_tool("log_decision", {"summary": f"first decision of {i}"})

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for i in range(CLIENTS):
                tg.start_soon(first_writer, i)

    failures = {i: r.content[0].text for i, r in results.items() if r.is_error}  # type: ignore[attr-defined]
    assert failures == {}, f"{failures}\n--- server log ---\n{server.log_text()[-4000:]}"
    for i, project in enumerate(projects):
        assert where(results[i]) == (str(project), "header")
        with contextlib.closing(sqlite3.connect(store_file(project))) as db:
            assert db.execute("SELECT summary FROM decisions").fetchall() == [(f"first decision of {i}",)]
    assert server.process.poll() is None, "the server died"


async def test_use_workspace_over_http_legacy_sets_the_session_default_and_nothing_else_does(
    server: HttpServer,
) -> None:
    project = new_project(server, "session")
    async with http_client(server.mcp_url, mode="legacy") as client:
        used = ok(await client.call_tool("use_workspace", {"workspace": str(project)}))
        written = await client.call_tool("log_decision", {"summary": "lands in the session default"})
        read = await client.call_tool("get_decisions", {})
    assert used["bound_to_session"] is True
    assert where(written) == (str(project), "session")
    assert [d["summary"] for d in ok(read)["decisions"]] == ["lands in the session default"]

    # Another connection has neither header nor session; the server's cwd (a project inside the
    # allowed root) must not be used over HTTP.
    for mode in MODES:
        async with http_client(server.mcp_url, mode=mode) as stranger:
            text = error_text(await stranger.call_tool("get_decisions", {}))
            write_text = error_text(await stranger.call_tool("log_decision", {"summary": "nowhere"}))
        for message in (text, write_text):
            assert "no workspace" in message
            assert "X-Workspace-Id" in message
    assert not (server.cwd / ".homeport").exists()


async def test_use_workspace_over_http_auto_returns_a_handle_but_binds_nothing(server: HttpServer) -> None:
    project = new_project(server, "handle")
    async with http_client(server.mcp_url, mode="auto") as client:
        used = ok(await client.call_tool("use_workspace", {"workspace": str(project)}))
        without = await client.call_tool("get_decisions", {})
        with_handle = await client.call_tool("log_decision", {"summary": "by handle", "workspace": used["handle"]})
    assert used["bound_to_session"] is False
    assert "no workspace" in error_text(without)
    assert where(with_handle) == (str(project), "argument")


@pytest.mark.parametrize("mode", MODES)
async def test_a_write_waiting_for_another_process_stalls_no_other_client_and_is_written_once(
    server: HttpServer, mode: str
) -> None:
    # Memory calls run on the server's event loop; one that would wait there (here: for the write lock
    # another process holds) must go to a worker thread, so that every other client is still served.
    project, other = new_project(server, "locked"), new_project(server, "elsewhere")
    async with (
        http_client(server.mcp_url, mode=mode, headers={"X-Workspace-Id": str(project)}) as writer,
        http_client(server.mcp_url, mode=mode, headers={"X-Workspace-Id": str(other)}) as reader,
    ):
        ok(await writer.call_tool("log_decision", {"summary": "before the lock"}))  # the store is open
        ok(await reader.call_tool("log_decision", {"summary": "another project"}))
        holder = sqlite3.connect(store_file(project), isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process's write, in progress
        outcome: dict[str, object] = {}
        try:
            async with anyio.create_task_group() as tg:

                async def waiting_write() -> None:
                    outcome["write"] = await writer.call_tool("log_decision", {"summary": "waited for the lock"})

                tg.start_soon(waiting_write)
                await anyio.sleep(0.5)  # the write has reached the lock
                with anyio.fail_after(10):  # far below the store's 30 s busy timeout
                    same_store = ok(await writer.call_tool("get_decisions", {}))
                    other_store = ok(await reader.call_tool("log_decision", {"summary": "written meanwhile"}))
                assert "write" not in outcome  # still waiting: everything above was served meanwhile
                holder.execute("ROLLBACK")
        finally:
            if holder.in_transaction:
                holder.execute("ROLLBACK")
            holder.close()
        after = ok(await writer.call_tool("get_decisions", {}))
    assert [d["summary"] for d in same_store["decisions"]] == ["before the lock"]
    assert other_store["workspace"]["root"] == str(other)
    assert where(outcome["write"]) == (str(project), "header")
    assert [d["summary"] for d in after["decisions"]] == ["waited for the lock", "before the lock"]
