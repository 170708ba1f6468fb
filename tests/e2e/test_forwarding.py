"""Several servers, one owner per workspace: a stdio front end forwards each call to the live owner of
its workspace (real processes: two `serve --http --own` owners and a stdio `homeport serve`)."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import pytest

from ._support import (
    clean_env,
    error_text,
    http_client,
    make_project,
    ok,
    running_http_server,
    serve_args,
    stdio_client,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(180)]

DEADLINE_S = 30.0


@dataclass
class RunningOwner:
    process: subprocess.Popen[bytes]
    endpoint: str
    root: Path

    @property
    def pid(self) -> int:
        return self.process.pid


def _registered(state: Path, pid: int) -> str | None:
    with contextlib.suppress(OSError, ValueError):
        owners = json.loads((state / "registry.json").read_text(encoding="utf-8"))["owners"]
        for entry in owners.values():
            if entry["pid"] == pid:
                return str(entry["endpoint"])
    return None


def start_owner(state: Path, root: Path, log: Path, *extra: str, **env: str) -> RunningOwner:
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, *serve_args("--http", "--own", "--allow-root", str(root), *extra)],
            cwd=root,
            env=clean_env(HOMEPORT_STATE_DIR=str(state), **env),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text(errors="replace")
        endpoint = _registered(state, process.pid)
        if endpoint:
            with contextlib.suppress(httpx2.TransportError, ValueError):
                if httpx2.get(endpoint + "/healthz", timeout=1.0).json().get("pid") == process.pid:
                    return RunningOwner(process, endpoint, root)
        time.sleep(0.1)
    process.kill()
    raise AssertionError(f"owner of {root} not serving:\n{log.read_text(errors='replace')}")


@pytest.fixture
def mesh(tmp_path: Path) -> Iterator[tuple[Path, Path, dict[str, Path], list[RunningOwner]]]:
    """(state dir, base, projects alpha/beta/gamma, owners of alpha and beta)."""
    base = (tmp_path / "src").resolve()
    projects = {name: make_project(base / name) for name in ("alpha", "beta", "gamma")}
    state = tmp_path / "state"
    owners = [start_owner(state, projects[n], tmp_path / f"{n}.log") for n in ("alpha", "beta")]
    try:
        yield state, base, projects, owners
    finally:
        for owner in owners:
            if owner.process.poll() is None:
                owner.process.terminate()
            owner.process.wait(timeout=DEADLINE_S)


def front_end(state: Path, base: Path):
    env = clean_env(HOMEPORT_STATE_DIR=str(state))
    return stdio_client(cwd=base, mode="auto", args=("--allow-root", str(base)), env=env)


async def test_a_stdio_front_end_routes_each_workspace_to_its_owner_and_serves_the_rest_itself(mesh) -> None:
    state, base, projects, (alpha_owner, beta_owner) = mesh
    async with front_end(state, base) as client:
        for name, owner in (("alpha", alpha_owner), ("beta", beta_owner)):
            root = str(projects[name])
            written = ok(await client.call_tool("log_decision", {"workspace": root, "summary": f"for {name}"}))
            # The owner served it; the result names the source the caller used (the argument), not the
            # header the owner was sent, and the owner that served it (issue 22, finding 12).
            assert written["workspace"]["root"] == root and written["workspace"]["source"] == "argument"
            assert written["workspace"]["served_by"] == {"pid": owner.pid, "endpoint": owner.endpoint}
            where = ok(await client.call_tool("where_am_i", {"workspace": root}))
            assert where["served_by"] == {
                "process": "owner",
                "pid": owner.pid,
                "endpoint": owner.endpoint,
                "owns": root,
            }
            read = ok(await client.call_tool("get_decisions", {"workspace": root}))
            assert [d["summary"] for d in read["decisions"]] == [f"for {name}"]
        local = ok(await client.call_tool("log_decision", {"workspace": str(projects["gamma"]), "summary": "here"}))
        assert local["workspace"]["source"] == "argument"
        where = ok(await client.call_tool("where_am_i", {"workspace": str(projects["gamma"])}))
        assert where["served_by"]["process"] == "this"


async def test_errors_and_large_results_come_back_from_the_owner_unchanged(mesh) -> None:
    state, base, projects, _owners = mesh
    root = str(projects["alpha"])
    big = "x" * 99_000  # under the 100,000-character rationale cap; three of them make a ~300 KB result
    async with front_end(state, base) as client:
        missing = await client.call_tool("delete_decision", {"workspace": root, "decision_id": 424242})
        assert missing.is_error and missing.structured_content["error"]["code"] == "item_not_found"
        assert "424242" in error_text(missing)
        for n in range(3):
            ok(await client.call_tool("log_decision", {"workspace": root, "summary": f"big {n}", "rationale": big}))
        read = ok(await client.call_tool("get_decisions", {"workspace": root}))
        assert [d["rationale"] for d in read["decisions"][:3]] == [big] * 3
        assert read["workspace"]["source"] == "argument" and "served_by" in read["workspace"]


async def test_the_front_ends_guards_run_before_anything_is_forwarded(mesh, tmp_path) -> None:
    state, base, projects, _owners = mesh
    outside = make_project(tmp_path / "outside")
    async with front_end(state, base) as client:
        refused = await client.call_tool("get_decisions", {"workspace": str(outside)})
        assert refused.structured_content["error"]["code"] == "workspace_denied"
        unknown = await client.call_tool("get_decisions", {"workspace": str(projects["alpha"]), "projectRoot": "/"})
        assert unknown.structured_content["error"]["code"] == "unknown_argument"


async def test_an_owner_that_died_fails_one_call_clearly_is_pruned_and_the_next_call_is_served_here(mesh) -> None:
    state, base, projects, (alpha_owner, _beta) = mesh
    root = str(projects["alpha"])
    async with front_end(state, base) as client:
        ok(await client.call_tool("log_decision", {"workspace": root, "summary": "before"}))  # forwarded
        alpha_owner.process.send_signal(signal.SIGKILL)
        alpha_owner.process.wait(timeout=DEADLINE_S)
        failed = await client.call_tool("get_decisions", {"workspace": root})
        assert failed.is_error and failed.structured_content["error"]["code"] == "owner_unavailable"
        assert str(alpha_owner.pid) in error_text(failed)
        assert _registered(state, alpha_owner.pid) is None
        after = ok(await client.call_tool("get_decisions", {"workspace": root}))
        assert after["workspace"]["source"] == "argument"
        assert [d["summary"] for d in after["decisions"]] == ["before"]


async def test_an_http_front_end_forwards_by_header_and_reports_the_owner(mesh, tmp_path) -> None:
    state, base, projects, (alpha_owner, _beta) = mesh
    env = clean_env(HOMEPORT_STATE_DIR=str(state))
    with running_http_server(allow_root=base, cwd=base, log=tmp_path / "front.log", env=env) as front:
        headers = {"X-Workspace-Id": str(projects["alpha"])}
        async with http_client(front.mcp_url, mode="auto", headers=headers) as client:
            written = ok(await client.call_tool("log_progress", {"status": "TODO", "description": "via front"}))
            assert written["workspace"] == {**written["workspace"], "root": str(projects["alpha"]), "source": "header"}
            where = ok(await client.call_tool("where_am_i", {}))
            assert where["served_by"]["pid"] == alpha_owner.pid
        # The store was opened by the owner, never by the front end.
        assert httpx2.get(front.base + "/healthz").json()["open_stores"] == 0
        assert httpx2.get(alpha_owner.endpoint + "/healthz").json()["open_stores"] == 1


@pytest.fixture
def db_owner(tmp_path: Path) -> Iterator[tuple[Path, Path, Path, RunningOwner]]:
    """(state, base, project, owner): the project's database URL needs a variable only the owner's environment has."""
    try:
        import psycopg

        psycopg.connect(host="127.0.0.1", port=5432, user="postgres", dbname="test", connect_timeout=3).close()
    except Exception as exc:
        pytest.skip(f"PostgreSQL is not reachable at 127.0.0.1:5432 as postgres ({exc})")
    base = (tmp_path / "src").resolve()
    project = make_project(base / "app")
    (project / ".homeport").mkdir()
    (project / ".homeport" / "config.toml").write_text(
        '[database]\nurl = "postgresql://${HOMEPORT_TEST_PG_USER}@127.0.0.1:5432/test"\n', encoding="utf-8"
    )
    state = tmp_path / "state"
    # The operator trusts this project's configuration: ${HOMEPORT_TEST_PG_USER} comes from the owner's environment;
    # and accepts that its account (postgres, a superuser) can reach the database host's files.
    owner = start_owner(
        state,
        project,
        tmp_path / "owner.log",
        "--trust-workspace-config",
        "--allow-database-file-access",
        HOMEPORT_TEST_PG_USER="postgres",
    )
    try:
        yield state, base, project, owner
    finally:
        if owner.process.poll() is None:
            owner.process.terminate()
        owner.process.wait(timeout=DEADLINE_S)


@pytest.mark.postgres
async def test_an_owner_with_the_database_credentials_answers_run_query_for_a_front_end_without_them(
    db_owner,
) -> None:
    state, base, project, _owner = db_owner
    async with front_end(state, base) as client:
        answer = ok(await client.call_tool("run_query", {"workspace": str(project), "query": "SELECT 41 + 1 AS n"}))
        assert "42" in json.dumps(answer)
        assert answer["workspace"]["source"] == "argument" and "served_by" in answer["workspace"]


@pytest.mark.postgres
async def test_an_owner_killed_mid_call_fails_that_call_clearly_and_the_next_is_served_here(db_owner) -> None:
    state, base, project, owner = db_owner
    async with front_end(state, base) as client:
        ok(await client.call_tool("run_query", {"workspace": str(project), "query": "SELECT 1 AS warm"}))
        outcome: dict[str, object] = {}

        async def slow_call() -> None:
            outcome["result"] = await client.call_tool(
                "run_query", {"workspace": str(project), "query": "SELECT pg_sleep(4) AS slept"}
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow_call)
            await anyio.sleep(1.0)  # the query is running in the owner
            owner.process.send_signal(signal.SIGKILL)
        failed = outcome["result"]
        assert failed.is_error and failed.structured_content["error"]["code"] == "owner_unavailable"
        assert _registered(state, owner.pid) is None
        after = ok(await client.call_tool("get_decisions", {"workspace": str(project)}))
        assert after["workspace"]["source"] == "argument"


def test_homeport_where_names_the_owner_that_serves_the_workspace(mesh) -> None:
    state, base, projects, (alpha_owner, _beta) = mesh
    out = subprocess.run(
        [sys.executable, "-c", "from homeport.cli import main; main()", "where", str(projects["alpha"]), "--json"],
        cwd=base,
        env=clean_env(HOMEPORT_STATE_DIR=str(state)),
        capture_output=True,
        text=True,
        check=True,
        timeout=DEADLINE_S,
    )
    served_by = json.loads(out.stdout)["served_by"]
    assert (served_by["process"], served_by["pid"]) == ("owner", alpha_owner.pid)


async def test_concurrent_calls_share_the_pooled_clients_and_each_lands_in_its_owners_workspace(mesh) -> None:
    state, base, projects, _owners = mesh
    async with front_end(state, base) as client:

        async def write(name: str, n: int) -> None:
            result = ok(
                await client.call_tool("log_decision", {"workspace": str(projects[name]), "summary": f"{name} {n}"})
            )
            assert result["workspace"]["root"] == str(projects[name])

        async with anyio.create_task_group() as tg:
            for n in range(15):
                for name in ("alpha", "beta", "gamma"):
                    tg.start_soon(write, name, n)
        for name in ("alpha", "beta", "gamma"):
            read = ok(await client.call_tool("get_decisions", {"workspace": str(projects[name]), "limit": 50}))
            assert sorted(d["summary"] for d in read["decisions"]) == sorted(f"{name} {n}" for n in range(15))


async def test_a_forwarded_call_is_served_by_the_instance_it_reaches_never_forwarded_again(tmp_path) -> None:
    base = (tmp_path / "src").resolve()
    api = make_project(base / "api")
    state = tmp_path / "state"
    folder_owner = start_owner(state, base, tmp_path / "folder.log")  # owns the folder ...
    api_owner = start_owner(state, api, tmp_path / "api.log")  # ... and this one the project inside it
    try:

        def open_stores(owner: RunningOwner) -> int:
            return int(httpx2.get(owner.endpoint + "/healthz").json()["open_stores"])

        async with http_client(folder_owner.endpoint + "/mcp", mode="auto", headers={"X-Workspace-Id": str(api)}) as c:
            ok(await c.call_tool("log_decision", {"summary": "forwarded"}))
        assert (open_stores(folder_owner), open_stores(api_owner)) == (0, 1)  # the deeper owner served it
        headers = {"X-Workspace-Id": str(api), "X-Homeport-Forwarded-By": "12345"}
        async with http_client(folder_owner.endpoint + "/mcp", mode="auto", headers=headers) as c:
            ok(await c.call_tool("log_decision", {"summary": "one hop at most"}))
        assert open_stores(folder_owner) == 1
    finally:
        for owner in (folder_owner, api_owner):
            owner.process.terminate()
            owner.process.wait(timeout=DEADLINE_S)
