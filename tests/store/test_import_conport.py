"""Importing a ConPort database: the mapping of every table, both schemas, idempotence, skips, dry runs."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from homeport.errors import InvalidItemError
from homeport.store import Store
from homeport.store._importing import MAX_LISTED
from homeport.store.contexts import get_context, get_history
from homeport.store.custom_data import get_custom_data, log_custom_data
from homeport.store.decisions import get_decisions
from homeport.store.fields import MAX_TEXT_CHARS
from homeport.store.import_conport import find_database, import_conport, read_conport
from homeport.store.links import get_linked_items
from homeport.store.patterns import get_system_patterns, log_system_pattern
from homeport.store.progress import get_progress_tree, log_progress

FIXTURES = Path(__file__).parents[1] / "fixtures" / "conport"
# Written by ConPort itself (make_fixture.py): 0.3.13 (Alembic schema) and 0.1.9 (the schema before it).
VERSIONS = ["v0.3.13", "v0.1.9"]


def fixture_db(version: str) -> Path:
    return FIXTURES / version / "context_portal" / "context.db"


@pytest.fixture
def store(tmp_path, copy_store) -> Store:
    s = copy_store(tmp_path / "ws")
    yield s
    s.close()


@pytest.mark.parametrize("version", VERSIONS)
def test_every_table_conport_writes_is_mapped(store, version):
    summary = import_conport(store, read_conport(fixture_db(version)))
    assert summary["created"] == {
        "product_context": 1,
        "active_context": 1,
        "decision": 2,
        "progress": 4,
        "system_pattern": 2,
        "custom_data": 3,
        "link": 4,
    }
    product = get_context(store, "product")["content"]
    assert product == {
        "name": "Camera Shop",
        "goal": "Sell second-hand cameras and lenses",
        "stack": ["Django", "PostgreSQL", "Celery"],
    }
    # ConPort's history: the first write, then the patch (its empty starting document is not a version)
    assert [h["content"] for h in get_history(store, "product")][::-1] == [
        {"name": "Camera Shop", "goal": "Sell second-hand cameras"},
        product,
    ]
    assert get_context(store, "active")["content"] == {"current_focus": "Winter sale"}

    stripe = next(d for d in get_decisions(store) if d["summary"] == "Use Stripe for payments")
    assert sorted(stripe["tags"]) == ["checkout", "conport", "payments"]
    assert stripe["implementation_details"].startswith("Webhooks verified")
    assert stripe["created_at"].startswith("2026-")  # ConPort's own time, not the import's

    [sale, django] = get_progress_tree(store)
    assert (sale["description"], sale["status"]) == ("Winter sale", "IN_PROGRESS")
    assert [(c["description"], c["status"]) for c in sale["children"]] == [
        ("Banner on the home page", "DONE"),
        ("Discount codes at checkout", "TODO"),
    ]
    assert django["children"] == []

    patterns = {p["name"]: p for p in get_system_patterns(store)}
    assert patterns["Feature flags in the admin"]["description"] == "Feature flags in the admin"
    assert sorted(patterns["Service functions own transactions"]["tags"]) == ["conport", "django"]
    assert get_custom_data(store, category="people", key="Ada")[0]["value"] == {
        "role": "maintains checkout",
        "on_call": ["December"],
    }
    assert get_custom_data(store, category="ProjectGlossary", key="SKU")[0]["value"] == "Stock keeping unit"
    assert get_custom_data(store, category="config", key="reservation_minutes")[0]["value"] == 15

    linked = {(i["type"], i["relationship"]) for i in get_linked_items(store, "decision", stripe["id"])}
    assert linked == {("progress", "tracks"), ("system_pattern", "implemented_by"), ("product_context", "records")}
    ada = get_custom_data(store, category="people", key="Ada")[0]
    assert [(i["type"], i["relationship"]) for i in get_linked_items(store, "custom_data", ada["id"])] == [
        ("progress", "works_on")  # ConPort named Ada by "people:Ada"
    ]
    [dangling] = summary["skipped"]
    assert dangling["where"] == "context_links 4" and "not in the database" in dangling["reason"]


@pytest.mark.parametrize("version", VERSIONS)
def test_importing_twice_adds_nothing(store, version):
    first = import_conport(store, read_conport(fixture_db(version)))
    second = import_conport(store, read_conport(fixture_db(version)))
    assert sum(second["created"].values()) == 0 and second["updated"] == 0
    assert second["unchanged"] == sum(first["created"].values())
    assert len(get_history(store, "product")) == 2


def test_a_dry_run_reports_the_same_and_writes_nothing(store):
    dry = import_conport(store, read_conport(fixture_db("v0.3.13")), dry_run=True)
    assert get_decisions(store) == [] and get_context(store, "product")["version"] == 0
    real = import_conport(store, read_conport(fixture_db("v0.3.13")))
    assert {k: v for k, v in dry.items() if k not in ("dry_run", "items")} == {
        k: v for k, v in real.items() if k not in ("dry_run", "items")
    }


def test_items_the_workspace_has_with_other_text_are_left_alone(store):
    log_system_pattern(store, "feature FLAGS in the admin", "Our own words")
    log_custom_data(store, "people", "Ada", "typed by hand")
    log_progress(store, "TODO", "Move to Django 5")
    summary = import_conport(store, read_conport(fixture_db("v0.3.13")))
    kept = {s["item"]: s["reason"] for s in summary["skipped"]}
    assert "left as it is" in kept["Feature flags in the admin"] and "left as it is" in kept["people: Ada"]
    assert "is TODO" in kept["Move to Django 5"]
    assert get_system_patterns(store)[0]["description"] == "Our own words"
    # the link from Ada is not made to the value typed by hand
    assert "custom_data people:Ada works_on progress_entry 1" in kept


def test_a_workspace_context_with_other_content_is_kept(store):
    from homeport.store.contexts import update_context

    update_context(store, "active", content={"current_focus": "Our own"})
    summary = import_conport(store, read_conport(fixture_db("v0.3.13")))
    assert get_context(store, "active")["content"] == {"current_focus": "Our own"}
    assert any(s["item"] == "the active context" for s in summary["skipped"])
    assert summary["created"]["product_context"] == 1


ADD_PROGRESS = "INSERT INTO progress_entries (timestamp, status, description, parent_id) VALUES ('x', 'TODO', ?, ?)"


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "context.db"
    shutil.copy(fixture_db("v0.3.13"), target)
    return target


def test_unknown_tables_and_rows_conport_never_writes_are_reported(store, tmp_path):
    source = _copy(tmp_path)
    with sqlite3.connect(source) as conn:
        conn.execute("CREATE TABLE sprint_notes (id INTEGER PRIMARY KEY, body TEXT)")
        conn.execute("INSERT INTO sprint_notes (body) VALUES ('a'), ('b')")
        conn.execute(ADD_PROGRESS, ("Orphan", 99))
        conn.execute(ADD_PROGRESS, ("Loop A", 7))
        conn.execute(ADD_PROGRESS, ("Loop B", 6))
        conn.execute(
            "INSERT INTO context_links (workspace_id, source_item_type, source_item_id, target_item_type, "
            "target_item_id, relationship_type) VALUES ('w', 'widget', '1', 'decision', '1', 'uses')"
        )
    conn.close()
    summary = import_conport(store, read_conport(source))
    reasons = {s["item"]: s["reason"] for s in summary["skipped"]}
    assert "2 row(s) were not read" in reasons["table sprint_notes"]
    assert "not in the database" in reasons["parent of 'Orphan'"]
    assert "loop" in reasons.get("parent of 'Loop A'", "") + reasons.get("parent of 'Loop B'", "")
    assert "'widget'" in reasons["widget 1 uses decision 1"]
    assert summary["created"]["progress"] == 7
    assert not any("fts" in s["item"] or "alembic" in s["item"] for s in summary["skipped"])


def test_an_item_over_a_size_cap_is_skipped_with_the_cap(store, tmp_path):
    source = _copy(tmp_path)
    with sqlite3.connect(source) as conn:
        conn.execute("UPDATE decisions SET rationale = ? WHERE id = 2", ("x" * (MAX_TEXT_CHARS + 1),))
    conn.close()
    summary = import_conport(store, read_conport(source))
    [big] = [s for s in summary["skipped"] if s["where"] == "decisions 2"]
    assert "over the limit" in big["reason"] and summary["created"]["decision"] == 1


def test_the_database_is_opened_read_only(store, tmp_path):
    source = _copy(tmp_path)
    before = source.read_bytes()
    import_conport(store, read_conport(source))
    assert source.read_bytes() == before
    with pytest.raises(InvalidItemError):  # a read-write open would create an empty database here
        read_conport(tmp_path / "missing.db")
    assert not (tmp_path / "missing.db").exists()


def test_a_file_that_is_no_conport_database_is_refused(tmp_path):
    (tmp_path / "notes.db").write_text("hello")
    with pytest.raises(InvalidItemError):
        read_conport(tmp_path / "notes.db")
    with sqlite3.connect(tmp_path / "other.db") as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    with pytest.raises(InvalidItemError) as caught:
        read_conport(tmp_path / "other.db")
    assert "none of ConPort's tables" in str(caught.value)


def test_a_conport_workspace_directory_names_its_database():
    assert find_database(FIXTURES / "v0.1.9") == fixture_db("v0.1.9")


def test_a_parent_chain_deeper_than_pythons_recursion_limit_is_imported(store, tmp_path):
    source = _copy(tmp_path)
    with sqlite3.connect(source) as conn:
        rows = [(f"Step {i}", None if i == 0 else 4 + i) for i in range(1500)]  # ids 5.. each under the one before
        conn.executemany(ADD_PROGRESS, rows)
    conn.close()
    summary = import_conport(store, read_conport(source))
    assert summary["created"]["progress"] == 4 + 1500 and summary["skipped"][1:] == []


def test_a_large_source_names_the_first_items_and_counts_them_all(store, tmp_path):
    source = _copy(tmp_path)
    with sqlite3.connect(source) as conn:
        conn.executemany(ADD_PROGRESS, [(f"Task {i}", None) for i in range(MAX_LISTED)])
    conn.close()
    seen: list[tuple[int, int]] = []
    summary = import_conport(store, read_conport(source), progress=lambda done, total: seen.append((done, total)))
    assert summary["created"]["progress"] == 4 + MAX_LISTED
    assert len(summary["items"]) == MAX_LISTED
    assert summary["items_left_off"] == sum(summary["created"].values()) - MAX_LISTED
    assert seen[-1] == (len(seen), read_conport(source).total())


def test_a_row_the_store_refuses_is_undone_and_skipped_and_the_rest_imported(store, tmp_path):
    source = _copy(tmp_path)
    with sqlite3.connect(source) as conn:
        # the store refuses this tag only after the decision row is written: the savepoint undoes it
        conn.execute("UPDATE decisions SET tags = ? WHERE id = 2", ('["ok", "bad\\u001ftag"]',))
        conn.execute("UPDATE progress_entries SET status = '  ' WHERE id = 4")
    conn.close()
    summary = import_conport(store, read_conport(source))
    reasons = {s["where"]: s["reason"] for s in summary["skipped"]}
    assert "U+001F" in reasons["decisions 2"] and "status is empty" in reasons["progress_entries 4"]
    assert [d["summary"] for d in get_decisions(store)] == ["Use Stripe for payments"]
    assert summary["created"]["decision"] == 1 and summary["created"]["progress"] == 3
