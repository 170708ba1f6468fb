"""A SQLite store and a PostgreSQL store (a team server's) converge through the same ref."""

from __future__ import annotations

import time

import pytest

from homeport.store import decisions, links, patterns, progress
from homeport.sync import open_conflicts, sync_memory

from ._repos import git

pytestmark = pytest.mark.postgres


@pytest.fixture
def postgres_store(store_postgres_url):
    from homeport.store.postgres import PostgresStores

    stores = PostgresStores(store_postgres_url)
    yield lambda key: stores.get(key, create=True)
    stores.close()


def test_sqlite_and_postgresql_stores_converge_and_report_conflicts(clone, tmp_path, remote, postgres_store):
    a, lite = clone("a")
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(remote), str(b))
    pg = postgres_store(str(b))

    d = decisions.log_decision(lite, "one memory, two backends", rationale="sqlite here", tags=["sync"])
    p = patterns.log_system_pattern(lite, "Hidden ref", "the memory lives on refs/homeport/memory")
    links.link_items(lite, "decision", d["id"], "system_pattern", p["id"], "documented_by")
    sync_memory(lite, a)
    sync_memory(pg, b)

    (got,) = decisions.get_decisions(pg)
    assert (got["summary"], got["tags"]) == ("one memory, two backends", ["sync"])
    assert [x["relationship"] for x in links.get_linked_items(pg, "decision", got["id"])] == ["documented_by"]

    decisions.update_decision(pg, got["id"], rationale="postgresql there")
    _next_millisecond()  # an edit's clock is its millisecond: in the same one the random replica id decides
    decisions.update_decision(lite, d["id"], rationale="sqlite, edited concurrently")
    progress.log_progress(pg, "DONE", "written on the team server")
    sync_memory(pg, b)
    sync_memory(lite, a)
    sync_memory(pg, b)

    for store in (lite, pg):
        (item,) = decisions.get_decisions(store)
        assert item["rationale"] == "sqlite, edited concurrently"  # the later edit
        assert [x["description"] for x in progress.get_progress(store)] == ["written on the team server"]
        assert open_conflicts(store)["count"] == 1
    assert git(a, "rev-parse", "refs/homeport/memory^{tree}") == git(b, "rev-parse", "refs/homeport/memory^{tree}")


@pytest.fixture
def shared_layout_stores(store_postgres_url):
    """PostgreSQL's shared layout (every workspace in one set of tables) in a database of its own."""
    import psycopg

    from homeport.store.postgres import PostgresStores

    name = store_postgres_url.rsplit("/", 1)[1] + "_sync_shared"
    with psycopg.connect(host="127.0.0.1", port=5432, user="postgres", dbname="test", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    stores = PostgresStores(f"postgresql://postgres@127.0.0.1:5432/{name}?layout=shared")
    yield stores
    stores.close()
    with psycopg.connect(host="127.0.0.1", port=5432, user="postgres", dbname="test", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_two_workspaces_of_the_shared_layout_sync_without_seeing_each_other(
    clone, tmp_path, remote, shared_layout_stores
):
    a, lite = clone("a")
    for name in ("b", "c"):
        git(tmp_path, "clone", "-q", str(remote), str(tmp_path / name))
    b, c = (
        shared_layout_stores.get(str(tmp_path / "b"), create=True),
        shared_layout_stores.get(str(tmp_path / "c"), create=True),
    )
    d = decisions.log_decision(lite, "shared tables", tags=["x"])
    sync_memory(lite, a)
    sync_memory(b, tmp_path / "b")
    sync_memory(c, tmp_path / "c")
    decisions.update_decision(b, 1, summary="edited in b")
    _next_millisecond()  # an edit's clock is its millisecond: in the same one the random replica id decides
    decisions.update_decision(c, 1, summary="edited in c")  # later: wins
    for store, path in ((b, tmp_path / "b"), (c, tmp_path / "c"), (b, tmp_path / "b"), (lite, a)):
        sync_memory(store, path)
    assert [x["summary"] for s in (lite, b, c) for x in decisions.get_decisions(s)] == ["edited in c"] * 3
    assert [open_conflicts(s)["count"] for s in (lite, b, c)] == [1, 1, 1]
    assert d["id"] == 1


def _next_millisecond() -> None:
    start = time.time_ns() // 1_000_000
    while time.time_ns() // 1_000_000 <= start + 1:
        pass
