"""The write path's shortcuts keep their answers: the duplicate notice's rare-word query, prepared statements."""

from __future__ import annotations

from pathlib import Path

import pytest

from homeport.errors import ItemNotFoundError
from homeport.store import decisions, progress, search, tidy_proposals, versions


@pytest.fixture
def store(tmp_path: Path, copy_store):
    s = copy_store(tmp_path)
    yield s
    s.close()


def _is_sqlite(store) -> bool:
    with store.read() as conn:
        return conn.dialect.name == "sqlite"


def test_rarest_words_keeps_the_rare_ones_within_the_budget_and_drops_absent_words(store):
    for i in range(6):
        decisions.log_decision(store, f"alpha note {i}")
    decisions.log_decision(store, "zeta alpha")
    words = ["alpha", "zeta", "missing"]
    if not _is_sqlite(store):  # PostgreSQL: the words as they are (its query is not this one)
        assert search.rarest_words(store, words, budget=3) == words
        return
    assert search.rarest_words(store, words, budget=3) == ["zeta"]
    assert search.rarest_words(store, words, budget=10) == ["zeta", "alpha"]  # rarest first, 1 + 7 rows
    # every word past the budget: nothing tells them apart, so all of them, as before
    assert search.rarest_words(store, ["alpha", "note"], budget=2) == ["alpha", "note"]
    assert search.rarest_words(store, ["alpha"], budget=0) == ["alpha"]


def test_a_duplicate_is_noticed_among_hundreds_of_items_sharing_its_common_words(store):
    for i in range(230):  # past the budget: "sqlite", "store", "local" are in every one of them
        decisions.log_decision(store, f"Use SQLite for the local store of service {i}", rationale="keeps it simple")
    first = decisions.log_decision(store, "Use SQLite in WAL mode for the local store", rationale="readers never wait")
    again = decisions.log_decision(
        store, "Use SQLite with WAL mode for the local store", rationale="readers never wait"
    )
    same = tidy_proposals.near_duplicate(store, "decision", again)
    assert same is not None and same["id"] == first["id"]
    other = decisions.log_decision(store, "Use SQLite for the local store of service 7b", rationale="unrelated")
    assert (tidy_proposals.near_duplicate(store, "decision", other) or {}).get("id") != first["id"]


def test_update_decision_rewrites_the_row_keeps_a_version_and_refuses_an_unknown_id(store):
    d = decisions.log_decision(store, "Use WAL", rationale="why", implementation_details="how", tags=["db"])
    got = decisions.update_decision(store, d["id"], summary="  Use WAL mode ", rationale="")
    assert (got["summary"], got["rationale"], got["implementation_details"], got["tags"]) == (
        "Use WAL mode",
        None,
        "how",
        ["db"],
    )
    assert got["created_at"] == d["created_at"] and got["updated_at"] >= d["updated_at"]
    assert decisions.get_decisions(store, limit=1)[0]["summary"] == "Use WAL mode"
    with store.read() as conn:
        assert versions.latest_versions(conn, "decision", d["id"])[0] == 2
    with pytest.raises(ItemNotFoundError):
        decisions.update_decision(store, d["id"] + 1000, summary="x")


def test_log_progress_inserts_with_and_without_a_parent_and_refuses_an_unknown_parent(store):
    top = progress.log_progress(store, "TODO", "Ship it")
    child = progress.log_progress(store, "DONE", "Write the notes", parent_id=top["id"])
    assert child["parent_id"] == top["id"] and child["id"] != top["id"]
    assert [p["id"] for p in progress.get_progress(store)] == [child["id"], top["id"]]
    with pytest.raises(ItemNotFoundError):
        progress.log_progress(store, "TODO", "Orphan", parent_id=top["id"] + 1000)
