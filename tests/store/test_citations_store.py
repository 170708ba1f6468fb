"""Stored citations on every backend: written with the item, replaced, kept, confirmed, listed."""

from __future__ import annotations

import pytest

from homeport.errors import ItemNotFoundError
from homeport.store import citations, custom_data, decisions, patterns, progress


def anchor(path: str, start: int, end: int, quote: str = "def f():") -> dict:
    return {
        "path": path,
        "start_line": start,
        "end_line": end,
        "symbol": "f",
        "blob_id": "a" * 40,
        "span_hash": "b" * 64,
        "line_keys": "0011223344556677 8899aabbccddeeff",
        "span_chars": 30,
        "quote": quote,
    }


@pytest.fixture
def store(copy_store, tmp_path):
    s = copy_store(tmp_path / "ws")
    yield s
    s.close()


def test_citations_are_written_with_the_decision_and_replaced_or_kept_on_update(store):
    d = decisions.log_decision(store, "Retry", citations=[anchor("a.py", 1, 2), anchor("b.py", 5, 9, "x = 1")])
    rows = citations.rows_of(store, "decision", [d["id"]])[d["id"]]
    assert [(r["path"], r["start_line"], r["end_line"], r["quote"]) for r in rows] == [
        ("a.py", 1, 2, "def f():"),
        ("b.py", 5, 9, "x = 1"),
    ]
    assert rows[0]["cited_at"] and rows[0]["confirmed_at"] is None
    decisions.update_decision(store, d["id"], summary="Retry with backoff")  # no citations given: kept
    assert len(citations.rows_of(store, "decision", [d["id"]])[d["id"]]) == 2
    decisions.update_decision(store, d["id"], citations=[anchor("c.py", 3, 3)])
    assert [r["path"] for r in citations.rows_of(store, "decision", [d["id"]])[d["id"]]] == ["c.py"]
    decisions.update_decision(store, d["id"], citations=[])
    assert citations.rows_of(store, "decision", [d["id"]]) == {}


def test_every_item_type_keeps_its_own_citations_and_cited_items_lists_existing_ones(store):
    d = decisions.log_decision(store, "plain")
    p = citations.write_with_citations(
        store, "progress", [anchor("p.py", 1, 1)], lambda conn: progress.insert_progress(conn, "TODO", "ship")
    )
    s = citations.write_with_citations(
        store, "system_pattern", [anchor("s.py", 2, 3)], lambda conn: patterns.upsert_system_pattern(conn, "Repo", "x")
    )
    k = citations.write_with_citations(
        store, "custom_data", [anchor("k.py", 4, 4)], lambda conn: custom_data.upsert_custom_data(conn, "c", "k", 1)
    )
    citations.set_citations(store, "decision", d["id"], [anchor("d.py", 1, 1)])
    assert citations.cited_items(store) == [
        ("decision", d["id"], "plain"),
        ("progress", p["id"], "ship"),
        ("system_pattern", s["id"], "Repo"),
        ("custom_data", k["id"], "c/k"),
    ]
    # Ids are per type: progress 1 and decision 1 keep their own citations.
    assert [r["path"] for r in citations.rows_of(store, "progress", [p["id"]])[p["id"]]] == ["p.py"]
    assert [r["path"] for r in citations.rows_of(store, "decision", [d["id"]])[d["id"]]] == ["d.py"]
    decisions.delete_decision(store, d["id"])
    assert ("decision", d["id"], "plain") not in citations.cited_items(store)
    with pytest.raises(ItemNotFoundError):
        citations.set_citations(store, "decision", d["id"], [anchor("d.py", 1, 1)])


def test_confirming_reanchors_by_position_and_stamps_every_citation(store):
    d = decisions.log_decision(store, "Retry", citations=[anchor("a.py", 1, 2), anchor("b.py", 5, 9)])
    with store.write() as conn:
        stamp = citations.confirm(conn, "decision", d["id"], {1: anchor("b.py", 15, 19)})
    rows = citations.rows_of(store, "decision", [d["id"]])[d["id"]]
    assert [(r["path"], r["start_line"]) for r in rows] == [("a.py", 1), ("b.py", 15)]
    assert {r["confirmed_at"] for r in rows} == {stamp}


def test_a_reader_that_found_no_citations_sees_those_another_process_writes(store, tmp_path, store_backend):
    d = decisions.log_decision(store, "Retry")
    assert citations.rows_of(store, "decision", [d["id"]]) == {}
    assert citations.rows_of(store, "decision", [d["id"]]) == {}  # remembered as empty (SQLite)
    if store_backend == "sqlite":
        from homeport.store import Store

        other = Store.open(tmp_path / "ws", create=False)  # another connection, as another process has
        assert other is not None
        citations.set_citations(other, "decision", d["id"], [anchor("a.py", 1, 2)])
        other.close()
    else:
        citations.set_citations(store, "decision", d["id"], [anchor("a.py", 1, 2)])
    assert [r["path"] for r in citations.rows_of(store, "decision", [d["id"]])[d["id"]]] == ["a.py"]


def test_a_purged_item_leaves_no_citation_and_a_restored_one_gets_its_own_back(store):
    from homeport.store import item_history

    kept = decisions.log_decision(store, "kept", citations=[anchor("k.py", 1, 1, "KEY = 1")])
    gone = decisions.log_decision(store, "gone", citations=[anchor("g.py", 1, 1, "TOKEN = 2")])
    decisions.delete_decision(store, kept["id"])
    decisions.delete_decision(store, gone["id"])
    item_history.restore_version(store, "decision", kept["id"], 1)
    assert [r["quote"] for r in citations.rows_of(store, "decision", [kept["id"]])[kept["id"]]] == ["KEY = 1"]
    item_history.purge_item(store, "decision", gone["id"])
    assert citations.rows_of(store, "decision", [gone["id"]]) == {}
