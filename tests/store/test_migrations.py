"""The Alembic migrations: from an empty database, from revision 0001 with data in it, down and back up."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from homeport.store import (
    SCHEMA_REVISION,
    Store,
    contexts,
    custom_data,
    decisions,
    links,
    patterns,
    progress,
    search,
    store_path_for,
)
from homeport.store.migrate import downgrade, head_revision, upgrade
from homeport.store.schema import metadata
from homeport.store.transfer import _collect, export_memory, import_memory

NEW_IN_0002 = {"system_patterns", "links"}
NEW_IN_0004 = {"item_uids"}  # 0003 adds PostgreSQL's search index only
NEW_IN_0005 = {"item_writers"}
NEW_IN_0006 = {"item_vectors"}
NEW_IN_0007 = {"copy_checkpoint"}
NEW_IN_0008 = {"item_versions"}
NEW_IN_0010 = {"item_branches"}
NEW_IN_0012 = {"sync_items", "sync_state", "sync_conflicts"}
NEW_IN_0009 = {"item_citations"}
NEW_IN_0011 = {"item_states", "changesets"}
NEW_IN_0013 = {"store_workspace"}
TABLES_0001 = {"contexts", "context_history", "decisions", "progress", "custom_data", "item_tags", "search_index"}


@pytest.fixture
def bare(tmp_path: Path):
    """A Store on an empty database file: nothing created or migrated yet."""
    store_path_for(tmp_path).parent.mkdir()
    s = Store(tmp_path)
    yield s
    s.close()


def tables(store: Store) -> set[str]:
    with sqlite3.connect(store.path) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return {n for n in names if not n.startswith(("sqlite_", "search_index_"))}


def revision(store: Store) -> str | None:
    with sqlite3.connect(store.path) as conn:
        return conn.execute("SELECT version_num FROM alembic_version").fetchone()[0]


def index_columns(store: Store) -> list[str]:
    with sqlite3.connect(store.path) as conn:
        return [r[1] for r in conn.execute("PRAGMA table_info(search_index)")]


def test_an_empty_database_migrates_to_head_with_every_table(bare):
    upgrade(bare.engine)
    assert revision(bare) == head_revision() == SCHEMA_REVISION
    added = (
        NEW_IN_0002 | NEW_IN_0004 | NEW_IN_0005 | NEW_IN_0006 | NEW_IN_0007 | NEW_IN_0008 | NEW_IN_0009
        | NEW_IN_0011
        | NEW_IN_0013
    )
    added |= NEW_IN_0010
    added |= NEW_IN_0012
    assert tables(bare) == TABLES_0001 | added | {"alembic_version"}
    assert index_columns(bare) == ["item_type", "item_id", "category", "updated_at", "title", "body", "tags"]
    d = decisions.log_decision(bare, "works at head", tags=["t"])
    p = patterns.log_system_pattern(bare, "p", "d")
    assert links.link_items(bare, "decision", d["id"], "system_pattern", p["id"], "implements")["created"]
    assert [h["id"] for h in search.search(bare, "head", tags_any=["T"])] == [d["id"]]


def test_the_migrations_build_exactly_the_tables_the_code_declares(bare):
    upgrade(bare.engine)
    with bare.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    # The FTS5 index is created by hand (dialect-specific) and is not part of the declared metadata.
    diff = [d for d in diff if not (d[0] == "remove_table" and d[1].name.startswith("search_index"))]
    assert diff == []


def test_migrating_twice_is_a_no_op(bare):
    upgrade(bare.engine)
    decisions.log_decision(bare, "kept")
    upgrade(bare.engine)
    assert [d["summary"] for d in decisions.get_decisions(bare)] == ["kept"]


# --- from 0001 with data ---------------------------------------------------------------------------------------

STAMP_OLD = "2026-01-01T09:00:00.000000Z"
STAMP_NEW = "2026-03-01T09:00:00.000000Z"


def fill_0001(store: Store) -> None:
    """Rows as the 0001 code wrote them, with plain SQL, including its (narrower) search index."""
    glossary_value = json.dumps({"meaning": "write-ahead log"}, sort_keys=True)
    product = json.dumps({"goal": "remember decisions"}, sort_keys=True)
    rows = [
        (
            "INSERT INTO decisions (id, summary, rationale, implementation_details, created_at, updated_at) "
            "VALUES (1, 'Use SQLite WAL', 'readers never block writers', NULL, ?, ?)",
            (STAMP_OLD, STAMP_OLD),
        ),
        (
            "INSERT INTO decisions (id, summary, rationale, implementation_details, created_at, updated_at) "
            "VALUES (2, 'Adopt FTS5', NULL, 'one index for all', ?, ?)",
            (STAMP_NEW, STAMP_NEW),
        ),
        ("INSERT INTO item_tags VALUES ('decision', 1, 'DB', 'db')", ()),
        ("INSERT INTO item_tags VALUES ('decision', 1, 'Perf', 'perf')", ()),
        (
            "INSERT INTO progress (id, status, description, parent_id, created_at, updated_at) "
            "VALUES (1, 'TODO', 'ship the store', NULL, ?, ?)",
            (STAMP_OLD, STAMP_OLD),
        ),
        (
            "INSERT INTO progress (id, status, description, parent_id, created_at, updated_at) "
            "VALUES (2, 'DONE', 'write migrations', 1, ?, ?)",
            (STAMP_NEW, STAMP_NEW),
        ),
        (
            "INSERT INTO custom_data (id, category, key, value, created_at, updated_at) "
            "VALUES (1, 'ProjectGlossary', 'WAL', ?, ?, ?)",
            (glossary_value, STAMP_OLD, STAMP_OLD),
        ),
        (
            "INSERT INTO custom_data (id, category, key, value, created_at, updated_at) "
            "VALUES (2, 'notes', 'wal-size', '\"keep the wal small\"', ?, ?)",
            (STAMP_OLD, STAMP_OLD),
        ),
        ("INSERT INTO contexts (kind, content, version, updated_at) VALUES ('product', ?, 2, ?)", (product, STAMP_NEW)),
        (
            "INSERT INTO context_history (kind, version, content, changed_at) VALUES ('product', 1, '{}', ?)",
            (STAMP_OLD,),
        ),
        (
            "INSERT INTO context_history (kind, version, content, changed_at) VALUES ('product', 2, ?, ?)",
            (product, STAMP_NEW),
        ),
        (
            "INSERT INTO search_index (item_type, item_id, title, body, tags) VALUES "
            "('decision', 1, 'Use SQLite WAL', 'readers never block writers', 'DB Perf'), "
            "('decision', 2, 'Adopt FTS5', 'one index for all', ''), "
            "('progress', 1, 'ship the store', 'ship the store\nTODO', ''), "
            "('progress', 2, 'write migrations', 'write migrations\nDONE', ''), "
            "('custom_data', 1, 'ProjectGlossary: WAL', ?, ''), "
            "('custom_data', 2, 'notes: wal-size', 'keep the wal small', ''), "
            "('product_context', 1, 'product context', ?, '')",
            (glossary_value, product),
        ),
    ]
    with sqlite3.connect(store.path) as conn:
        for sql, params in rows:
            conn.execute(sql, params)


@pytest.fixture
def at_0001(bare):
    upgrade(bare.engine, "0001")
    assert revision(bare) == "0001" and tables(bare) == TABLES_0001 | {"alembic_version"}
    assert "category" not in index_columns(bare)
    fill_0001(bare)
    return bare


def hits(store, query, **kw) -> list[tuple[str, int]]:
    return [(h["type"], h["id"]) for h in search.search(store, query, **kw)]


def test_upgrading_from_0001_keeps_every_item(at_0001):
    upgrade(at_0001.engine)
    assert revision(at_0001) == SCHEMA_REVISION
    assert tables(at_0001) >= NEW_IN_0002
    assert [(d["id"], d["summary"], d["tags"]) for d in decisions.get_decisions(at_0001)] == [
        (2, "Adopt FTS5", []),
        (1, "Use SQLite WAL", ["DB", "Perf"]),
    ]
    tree = progress.get_progress_tree(at_0001)
    assert [(n["description"], [c["description"] for c in n["children"]]) for n in tree] == [
        ("ship the store", ["write migrations"])
    ]
    [term] = custom_data.get_custom_data(at_0001, category="ProjectGlossary")
    assert term["value"] == {"meaning": "write-ahead log"}
    assert contexts.get_context(at_0001, "product") == {
        "content": {"goal": "remember decisions"},
        "version": 2,
        "updated_at": STAMP_NEW,
    }
    assert [v["version"] for v in contexts.get_history(at_0001, "product")] == [2, 1]


def test_items_from_0001_are_searchable_with_every_new_filter(at_0001):
    upgrade(at_0001.engine)
    assert set(hits(at_0001, "wal")) == {("decision", 1), ("custom_data", 1), ("custom_data", 2)}
    assert hits(at_0001, "wal", category="ProjectGlossary") == [("custom_data", 1)]
    assert hits(at_0001, "wal", tags_any=["perf"]) == [("decision", 1)]
    assert hits(at_0001, "index OR wal", since="2026-02-01T00:00:00Z") == [("decision", 2)]
    assert hits(at_0001, "migrations", types=["progress"]) == [("progress", 2)]
    assert hits(at_0001, "remember") == [("product_context", 1)]
    assert "[readers]" in search.mark(search.search(at_0001, "readers")[0], "[", "]")


def test_the_index_rebuilt_by_the_migration_is_the_one_the_code_writes(at_0001, tmp_path):
    upgrade(at_0001.engine)
    with at_0001.read() as conn:
        migrated = sorted(conn.exec_driver_sql("SELECT * FROM search_index").all())
    export_memory(at_0001, at_0001.root)
    import_memory(at_0001, at_0001.root, mode="replace")  # every item indexed again by the store code
    with at_0001.read() as conn:
        assert sorted(conn.exec_driver_sql("SELECT * FROM search_index").all()) == migrated


def test_new_item_types_and_links_work_on_items_from_0001(at_0001):
    upgrade(at_0001.engine)
    p = patterns.log_system_pattern(at_0001, "WAL everywhere", "every store uses WAL")
    links.link_items(at_0001, "decision", 1, "system_pattern", p["id"], "implements")
    links.link_items(at_0001, "progress", 2, "decision", 1, "implements")
    links.link_items(at_0001, "decision", 1, "product_context", 1, "serves")
    assert {(x["type"], x["id"]) for x in links.get_linked_items(at_0001, "decision", 1)} == {
        ("system_pattern", p["id"]),
        ("progress", 2),
        ("product_context", 1),
    }
    assert decisions.log_decision(at_0001, "after the upgrade")["id"] == 3


def test_opening_a_0001_store_migrates_it_with_its_data(at_0001):
    at_0001.close()
    s = Store.open(at_0001.root, create=False)
    try:
        assert revision(s) == SCHEMA_REVISION
        assert hits(s, "FTS5") == [("decision", 2)]
    finally:
        s.close()


# --- down and back up ------------------------------------------------------------------------------------------


def test_downgrade_to_base_and_back_up_gives_a_working_empty_store(bare):
    upgrade(bare.engine)
    decisions.log_decision(bare, "gone after base")
    downgrade(bare.engine, "base")
    assert tables(bare) == {"alembic_version"}
    with sqlite3.connect(bare.path) as conn:
        assert conn.execute("SELECT count(*) FROM alembic_version").fetchone()[0] == 0
    upgrade(bare.engine)
    assert revision(bare) == SCHEMA_REVISION
    assert decisions.get_decisions(bare) == [] and search.search(bare, "gone") == []
    assert decisions.log_decision(bare, "back up")["id"] == 1
    assert hits(bare, "back") == [("decision", 1)]


def test_downgrade_to_0001_keeps_the_old_items_and_upgrading_again_reindexes_them(bare):
    upgrade(bare.engine)
    d = decisions.log_decision(bare, "survives the downgrade", tags=["kept"])
    custom_data.log_custom_data(bare, "ProjectGlossary", "term", "a glossary entry")
    p = patterns.log_system_pattern(bare, "dropped", "with its table", tags=["orphan"])
    links.link_items(bare, "decision", d["id"], "system_pattern", p["id"], "implements")
    before = _collect(bare)
    downgrade(bare.engine, "0001")
    assert revision(bare) == "0001" and not tables(bare) & (
        NEW_IN_0002 | NEW_IN_0004 | NEW_IN_0005 | NEW_IN_0006 | NEW_IN_0007
    )
    assert "category" not in index_columns(bare)
    upgrade(bare.engine)
    after = _collect(bare)
    # The uids went with the downgrade; upgrading again gives each item a new one (same creation time).
    for section in ("decisions", "custom_data"):
        assert all(item.pop("uid") for item in after[section]) and all(item.pop("uid") for item in before[section])
    assert after["decisions"] == before["decisions"] and after["custom_data"] == before["custom_data"]
    assert after["system_patterns"] == [] and after["links"] == []
    assert hits(bare, "survives", tags_any=["KEPT"]) == [("decision", d["id"])]
    assert hits(bare, "glossary", category="ProjectGlossary") == [("custom_data", 1)]
    # A pattern made after the round trip does not inherit the tags of the dropped one.
    assert patterns.log_system_pattern(bare, "fresh", "new")["tags"] == []
    assert patterns.get_system_patterns(bare, tags_any=["orphan"]) == []


def test_upgrading_from_0002_keeps_the_items_and_records_writers_from_then_on(bare):
    from homeport.store import contexts, provenance

    upgrade(bare.engine, "0002")
    # Written as the 0002 code wrote it: today's item writes also keep tables of later revisions in step.
    with sqlite3.connect(bare.path) as conn:
        conn.execute(
            "INSERT INTO decisions (id, summary, created_at, updated_at) VALUES (1, ?, ?, ?)",
            ("written before writers were kept", STAMP_OLD, STAMP_OLD),
        )
    upgrade(bare.engine)
    assert "item_writers" in tables(bare)
    assert [d["summary"] for d in decisions.get_decisions(bare)] == ["written before writers were kept"]
    with provenance.writing_as(provenance.Writer("ada", "claude-code", "2.1", "update_product_context")):
        contexts.update_context(bare, "product", content={"goal": "x"})
    contexts.update_context(bare, "product", content={"goal": "y"})  # no writer named: none recorded
    history = contexts.get_history(bare, "product")
    assert [h["written_by"] for h in history] == [
        None,
        {"principal": "ada", "client": "claude-code", "client_version": "2.1", "tool": "update_product_context"},
    ]
    downgrade(bare.engine, "0002")
    assert "item_writers" not in tables(bare)
