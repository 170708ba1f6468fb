"""A ConPort import keeps each item's time as ConPort wrote it, to the microsecond (issue 27: whole seconds)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from homeport.store import Store
from homeport.store.custom_data import get_custom_data
from homeport.store.decisions import get_decisions
from homeport.store.import_conport import import_conport, read_conport
from homeport.store.patterns import get_system_patterns
from homeport.store.progress import get_progress

FIXTURES = Path(__file__).parents[1] / "fixtures" / "conport"
VERSIONS = ["v0.3.13", "v0.1.9"]


def fixture_db(version: str) -> Path:
    return FIXTURES / version / "context_portal" / "context.db"


def as_time(text: str) -> datetime:
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def conport_times(db: Path, table: str) -> list[datetime] | None:
    """The times ConPort wrote in `table`, or None when its schema has no timestamp there (0.1.9's
    system_patterns and custom_data: the import uses its own time then)."""
    with sqlite3.connect(db) as conn:
        if "timestamp" not in [column for _, column, *_ in conn.execute(f"PRAGMA table_info({table})")]:
            return None
        return sorted(as_time(t) for (t,) in conn.execute(f"SELECT timestamp FROM {table}"))


@pytest.fixture
def store(tmp_path, copy_store) -> Store:
    s = copy_store(tmp_path / "ws")
    yield s
    s.close()


@pytest.mark.parametrize("version", VERSIONS)
def test_imported_items_keep_conports_timestamps_to_the_microsecond(store, version):
    db = fixture_db(version)
    import_conport(store, read_conport(db))
    imported = {
        "decisions": [d["created_at"] for d in get_decisions(store, limit=100)],
        "progress_entries": [p["created_at"] for p in get_progress(store, limit=100)],
        "system_patterns": [p["created_at"] for p in get_system_patterns(store, limit=100)],
        "custom_data": [c["created_at"] for c in get_custom_data(store)],
    }
    for table, times in imported.items():
        written = conport_times(db, table)
        if written is not None:
            assert sorted(as_time(t) for t in times) == written, table


def test_the_older_schema_really_has_sub_second_times(store):
    # Without fractions in the fixture the test above could not fail.
    assert any(t.microsecond for t in conport_times(fixture_db("v0.1.9"), "decisions") or [])
