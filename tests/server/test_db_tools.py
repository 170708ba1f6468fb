"""Project-database tools through the MCP client: routed by workspace, read-only, errors as isError."""

from __future__ import annotations

import sqlite3

import pytest
from mcp import Client

pytestmark = pytest.mark.anyio


@pytest.fixture
def django_project(projects):
    root = projects["alpha"]
    db = sqlite3.connect(root / "db.sqlite3")
    db.execute("CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL)")
    db.executemany("INSERT INTO books (title) VALUES (?)", [("Dune",), ("Emma",)])
    db.commit()
    db.close()
    return root


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tables_schema_type_and_query_of_the_workspace_database(server_factory, django_project, mode):
    ws = str(django_project)
    async with Client(server_factory(), mode=mode) as c:
        r = await c.call_tool("get_tables", {"workspace": ws})
        assert "books" in r.structured_content["tables"]
        assert r.structured_content["workspace"] == {"root": ws, "source": "argument"}
        r = await c.call_tool("get_schema", {"table": "books", "workspace": ws})
        assert [col["name"] for col in r.structured_content["columns"]] == ["id", "title"]
        r = await c.call_tool("get_database_type", {"workspace": ws})
        assert r.structured_content["database_type"] == "sqlite"
        r = await c.call_tool(
            "run_query", {"query": "SELECT title FROM books WHERE id = :id", "params": {"id": 2}, "workspace": ws}
        )
        assert r.structured_content["rows"] == [["Emma"]] and r.structured_content["columns"] == ["title"]


async def test_writes_are_refused_and_the_database_is_unchanged(server_factory, django_project):
    before = (django_project / "db.sqlite3").read_bytes()
    async with Client(server_factory()) as c:
        for query in ("DELETE FROM books", "SELECT 1; DROP TABLE books", "ATTACH DATABASE '/tmp/x.db' AS x"):
            r = await c.call_tool("run_query", {"query": query, "workspace": str(django_project)})
            assert r.is_error, query
    assert (django_project / "db.sqlite3").read_bytes() == before


async def test_a_workspace_without_a_database_says_where_it_looked(server_factory, projects):
    async with Client(server_factory()) as c:
        r = await c.call_tool("get_tables", {"workspace": str(projects["beta"])})
        assert r.is_error and ".env" in r.content[0].text and "config.toml" in r.content[0].text


@pytest.mark.parametrize(
    ("transport", "override", "trusted"),
    [("stdio", None, True), ("http", None, False), ("http", True, True), ("stdio", False, False)],
)
def test_workspace_database_configuration_is_trusted_over_stdio_and_not_over_http(
    runtime_factory, transport, override, trusted
):
    runtime = runtime_factory(transport=transport, trust_workspace_config=override)
    assert runtime.databases.trust_workspace_config is trusted


async def test_over_http_a_workspace_cannot_point_the_server_at_another_host(server_factory, projects):
    root = projects["alpha"]
    (root / ".env").write_text("DATABASE_URL=postgresql://app@db.example.com/app\n", encoding="utf-8")
    async with Client(server_factory(transport="http", allow_roots=(root.parent,))) as c:
        r = await c.call_tool("get_database_type", {"workspace": str(root)})
    assert r.is_error and r.structured_content["error"]["code"] == "database_not_allowed"
    assert "db.example.com" in r.content[0].text
