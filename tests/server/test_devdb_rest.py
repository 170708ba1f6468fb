"""DevDB's REST paths on an HTTP server: the database tools through the pipeline, never a second copy.

In process over httpx's ASGI transport: the app `serve --http` builds, with hostile inputs (a write
statement, a cross-origin page, a rebinding Host, no token, another principal's workspace).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from homeport.cli._compose import dashboard_app
from homeport.core import ServeSettings, build_runtime
from homeport.files.directory import DirectoryFile
from homeport.files.tokens import TokenStore
from homeport.server import build_http_app, build_server
from homeport.server.devdb_rest import devdb_routes

pytestmark = pytest.mark.anyio

BASE = "http://127.0.0.1:8765"


@pytest.fixture
def world(tmp_path):
    tmp = Path(os.path.realpath(tmp_path))
    app = tmp / "src" / "app"
    (app / ".git").mkdir(parents=True)
    db = sqlite3.connect(app / "db.sqlite3")
    db.execute("CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL)")
    db.executemany("INSERT INTO books (title) VALUES (?)", [("Dune",), ("Emma",)])
    db.commit()
    db.close()
    other = tmp / "elsewhere" / "vault"
    (other / ".git").mkdir(parents=True)
    return {"tmp": tmp, "app": app, "other": other}


@pytest.fixture
def make_app(world):
    runtimes = []

    def build(**overrides: Any):
        tmp = world["tmp"]
        values: dict[str, Any] = {
            "transport": "http",
            "allow_roots": (tmp,),
            "cwd": tmp / "src",
            "data_dir": tmp / "data",
            "directory_file": tmp / "data" / "directory.toml",
            "home": tmp / "home",
            **overrides,
        }
        runtime = build_runtime(ServeSettings(**values))
        runtimes.append(runtime)
        return build_http_app(build_server(runtime), runtime, dashboard=dashboard_app, rest=devdb_routes)

    yield build
    for runtime in runtimes:
        runtime.close()


def _client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE)


async def test_the_four_paths_answer_as_devdb_does_for_the_workspace_header(make_app, world):
    ws = {"X-Workspace-Id": str(world["app"])}
    async with _client(make_app()) as http:
        tables = await http.get("/tables", headers=ws)
        assert tables.status_code == 200, tables.text
        assert "books" in tables.json()["tables"]
        assert tables.json()["workspace"] == {"root": str(world["app"]), "source": "header"}
        schema = await http.get("/tables/books/schema", headers=ws)
        assert schema.status_code == 200 and "CREATE TABLE books" in schema.json()["schema"]
        kind = await http.get("/database-type", params={"projectRoot": str(world["app"])})
        assert kind.status_code == 200 and kind.json()["type"] == "sqlite"
        rows = await http.post("/query", headers=ws, json={"query": "SELECT title FROM books ORDER BY id"})
        assert rows.status_code == 200, rows.text
        assert rows.json()["result"] == [{"title": "Dune"}, {"title": "Emma"}]
        bound = await http.post(
            "/query", headers=ws, json={"query": "SELECT title FROM books WHERE id = :id", "params": {"id": 2}}
        )
        assert bound.json()["result"] == [{"title": "Emma"}]


async def test_a_write_statement_is_refused_and_the_database_is_unchanged(make_app, world):
    before = (world["app"] / "db.sqlite3").read_bytes()
    ws = {"X-Workspace-Id": str(world["app"])}
    async with _client(make_app()) as http:
        for query in ("DELETE FROM books", "DROP TABLE books", "SELECT 1; DELETE FROM books"):
            refused = await http.post("/query", headers=ws, json={"query": query})
            assert refused.status_code in (400, 403), (query, refused.text)
            assert refused.json()["error"]["code"]
    assert (world["app"] / "db.sqlite3").read_bytes() == before


async def test_a_cross_origin_page_or_a_rebinding_host_is_refused_before_anything_runs(make_app, world):
    ws = {"X-Workspace-Id": str(world["app"])}
    async with _client(make_app()) as http:
        page = await http.post("/query", headers={**ws, "Origin": "http://evil.example"}, json={"query": "SELECT 1"})
        assert page.status_code == 403
        rebinding = await http.get("/tables", headers={**ws, "Host": "evil.example:8765"})
        assert rebinding.status_code == 421
        # A form post (a "simple" cross-site request needs no preflight) is not JSON: refused.
        form = await http.post("/query", headers=ws, content=b"query=SELECT+1")
        assert form.status_code == 400


async def test_without_a_workspace_the_answer_names_both_ways_to_give_one(make_app):
    async with _client(make_app()) as http:
        answer = await http.get("/tables")
        assert answer.status_code == 400
        assert "X-Workspace-Id" in answer.text and "projectRoot" in answer.text


async def test_bad_bodies_are_refused_with_the_reason(make_app, world):
    ws = {"X-Workspace-Id": str(world["app"])}
    async with _client(make_app()) as http:
        for body in (b"[1]", b"{", b'{"query": 5}', b'{"query": "SELECT 1", "extra": 1}'):
            answer = await http.post("/query", headers={**ws, "Content-Type": "application/json"}, content=body)
            assert answer.status_code == 400, body


async def test_under_auth_no_token_is_refused_and_a_token_sees_only_its_workspaces(make_app, world):
    tmp = world["tmp"]
    directory = DirectoryFile(tmp / "data" / "directory.toml")
    directory.add_organization("acme")
    directory.add_agent("acme", "ada")
    directory.add_workspace_root("acme", str(tmp / "src"))
    tokens = TokenStore(tmp / "data" / "tokens.json")
    ada = tokens.add("ada")
    app = make_app(auth=True)
    async with _client(app) as http:
        bare = await http.get("/tables", headers={"X-Workspace-Id": str(world["app"])})
        assert bare.status_code == 401
        forged = await http.get(
            "/tables", headers={"X-Workspace-Id": str(world["app"]), "Authorization": "Bearer not-a-token"}
        )
        assert forged.status_code == 401
        auth = {"Authorization": f"Bearer {ada}"}
        mine = await http.get("/tables", headers={**auth, "X-Workspace-Id": str(world["app"])})
        assert mine.status_code == 200, mine.text
        theirs = await http.get("/tables", params={"projectRoot": str(world["other"])}, headers=auth)
        assert theirs.status_code == 403


async def test_the_paths_are_not_served_when_the_database_tools_are_not(make_app, world):
    async with _client(make_app(tool_groups=("memory",))) as http:
        assert (await http.get("/tables", headers={"X-Workspace-Id": str(world["app"])})).status_code == 404
