"""`homeport copy` writes each batch in a few statements per table, not one round trip per row, and what it
writes is what the normal write path writes: search finds copied items, tags and uids are kept."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import event

from homeport.errors import InvalidItemError
from homeport.store import Store, custom_data, decisions, links, patterns, progress, provenance, search
from homeport.store.copying import copy_memory
from homeport.store.postgres import PostgresStores

pytestmark = pytest.mark.postgres


def _source(root: Path, extra: int) -> Store:
    root.mkdir()
    store = Store.open(root, create=True)
    assert store is not None
    d = decisions.log_decision(store, "Copy in few statements", rationale="round trips", tags=["db", "Speed"])
    parent = progress.log_progress(store, "TODO", "copy")
    progress.log_progress(store, "DONE", "verify", parent_id=parent["id"])
    p = patterns.log_system_pattern(store, "Checksums", "compare before commit", tags=["integrity"])
    custom_data.log_custom_data(store, "Glossary", "café", {"meaning": "a place"})
    links.link_items(store, "decision", d["id"], "system_pattern", p["id"], "implements")
    for i in range(extra):
        decisions.log_decision(store, f"decision {i}", tags=[f"t{i % 3}"])
        progress.log_progress(store, "TODO", f"task {i}", parent_id=parent["id"])
        links.link_items(store, "decision", d["id"], "progress", parent["id"] + 2 + i, f"rel{i}")
    return store


def _statements_of_copy(source: Store, target: Store) -> int:
    seen: list[str] = []

    def count(conn, cursor, statement, parameters, context, executemany) -> None:
        seen.append(statement)

    event.listen(target.engine, "before_cursor_execute", count)
    try:
        copy_memory(source, target)
    finally:
        event.remove(target.engine, "before_cursor_execute", count)
    return len(seen)


@pytest.fixture
def pg(store_postgres_url) -> Iterator[PostgresStores]:
    stores = PostgresStores(store_postgres_url)
    yield stores
    stores.close()


def test_the_statements_of_a_copy_do_not_grow_with_its_items(tmp_path, pg, request):
    small, large = _source(tmp_path / "small", 2), _source(tmp_path / "large", 60)
    counts = []
    for name, source in (("small", small), ("large", large)):
        target = pg.get(f"acme/{request.node.name}/{name}", create=True)
        assert target is not None
        counts.append(_statements_of_copy(source, target))
        source.close()
    # 174 more items (one batch either way): the same statements, one executemany per table.
    assert counts[1] == counts[0], counts


@pytest.mark.parametrize("direction", ["sqlite->postgres", "postgres->sqlite"])
def test_copied_items_are_found_by_search_with_their_tags_and_uids(tmp_path, pg, request, direction):
    sqlite = _source(tmp_path / "src", 3)
    key = f"acme/{request.node.name}"
    postgres = pg.get(key, create=True)
    assert postgres is not None
    if direction == "sqlite->postgres":
        source, target = sqlite, postgres
    else:
        copy_memory(sqlite, postgres)
        (tmp_path / "dst").mkdir()
        source, target = postgres, Store.open(tmp_path / "dst", create=True)
        assert target is not None
    copy_memory(source, target)
    for query, item_type in (
        ("few statements", "decision"),
        ("Checksums", "system_pattern"),
        ("café", "custom_data"),
        ("task 2", "progress"),
        ("speed", "decision"),
    ):
        hits = search.search(target, query)
        assert any(h["type"] == item_type for h in hits), (query, hits)
    copied = decisions.get_decisions(target, tags_any=["speed"])
    assert [d["summary"] for d in copied] == ["Copy in few statements"]
    assert copied[0]["tags"] == ["db", "Speed"]


def test_a_link_to_an_item_missing_from_the_source_is_refused_by_section_and_id(tmp_path, pg, request):
    source = _source(tmp_path / "src", 1)
    with source.write() as conn:  # a damaged source: the link's target is gone, the link stayed
        conn.exec_driver_sql("DELETE FROM item_tags WHERE item_type = 'system_pattern'")
        conn.exec_driver_sql("DELETE FROM system_patterns")
    target = pg.get(f"acme/{request.node.name}", create=True)
    assert target is not None
    with pytest.raises(InvalidItemError, match=r"links item 1: system_pattern 1 does not exist"):
        copy_memory(source, target)
    source.close()


def test_a_copy_keeps_the_writers_of_the_source_not_the_one_who_copies(tmp_path, pg, request):
    (tmp_path / "src").mkdir()
    source = Store.open(tmp_path / "src", create=True)
    assert source is not None
    with provenance.writing_as(provenance.Writer("bob", tool="log_decision")):
        d = decisions.log_decision(source, "written by bob")
        p = patterns.log_system_pattern(source, "Checksums", "compare before commit")
        links.link_items(source, "decision", d["id"], "system_pattern", p["id"], "implements")
    target = pg.get(f"acme/{request.node.name}", create=True)
    assert target is not None
    with provenance.writing_as(provenance.Writer("alice", tool="copy")):
        copy_memory(source, target)
    with target.read() as conn:
        written = provenance.writes_of_items(conn, "decision", [d["id"]])
        linked = provenance.writes_of_items(conn, "link", [1])
    assert written and linked
    every = [*written.values(), *linked.values()]
    assert all(w[0]["principal"] == "bob" and w[0]["tool"] == "log_decision" for w in every)
    source.close()
