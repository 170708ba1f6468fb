"""A store from before item versions (revision 0007) migrates with its data: every item gets version 1."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import text

from homeport.store import SCHEMA_REVISION, Store, custom_data, decisions, patterns, progress, provenance
from homeport.store.item_history import get_item_history
from homeport.store.migrate import alembic_config, downgrade
from homeport.store.versions import fields_of

ADA = provenance.Writer("ada", "claude-code", "2.1", "log_decision")
BOB = provenance.Writer("bob", "cursor", "1.0", "log_progress")


def _fill(store) -> dict[str, dict]:
    """Items as a 0007 Homeport leaves them: some changed, one deleted."""
    d = decisions.log_decision(store, "Use WAL", rationale="fast", tags=["db", "Perf"])
    decisions.update_decision(store, d["id"], summary="Use SQLite WAL")
    p = progress.log_progress(store, "TODO", "ship")
    progress.update_progress(store, p["id"], status="DONE")
    s = patterns.log_system_pattern(store, "Repository", "one per table", tags=["x"])
    c = custom_data.log_custom_data(store, "ProjectGlossary", "WAL", {"meaning": "write-ahead log"})
    gone = decisions.log_decision(store, "deleted before the upgrade")
    decisions.delete_decision(store, gone["id"])
    return {"decision": d, "progress": p, "system_pattern": s, "custom_data": c, "gone": gone}


def _writers_as_0007_recorded_them(conn, filled: dict[str, dict]) -> None:
    """0007 added an item_writers row for each write made by a named writer: ada created the decision,
    bob changed it and created the progress entry; nobody was named for the rest."""
    rows = [
        ("decision", filled["decision"]["id"], ADA, "2026-01-01T09:00:00.000000Z"),
        ("decision", filled["decision"]["id"], BOB, "2026-01-02T09:00:00.000000Z"),
        ("progress", filled["progress"]["id"], BOB, "2026-01-03T09:00:00.000000Z"),
    ]
    for item_type, item_id, w, at in rows:
        conn.execute(
            text(
                "INSERT INTO item_writers (item_type, item_id, version, principal, client, client_version, tool, "
                "written_at) VALUES (:t, :i, NULL, :p, :c, :cv, :tool, :at)"
            ),
            {
                "t": item_type,
                "i": item_id,
                "p": w.principal,
                "c": w.client,
                "cv": w.client_version,
                "tool": w.tool,
                "at": at,
            },
        )


def _current(store) -> dict[tuple[str, int], tuple[dict, str]]:
    rows = {
        "decision": decisions.get_decisions(store),
        "progress": progress.get_progress(store),
        "system_pattern": patterns.get_system_patterns(store),
        "custom_data": custom_data.get_custom_data(store),
    }
    return {(t, r["id"]): (fields_of(t, r), r["updated_at"]) for t, items in rows.items() for r in items}


def _check_migrated(store, filled: dict[str, dict], before: dict) -> None:
    assert _current(store) == before  # every item as it was
    for (item_type, item_id), (fields, updated_at) in before.items():
        [v1] = get_item_history(store, item_type, item_id, limit=100)
        assert (v1["version"], v1["fields"], v1["deleted"], v1["changed_at"]) == (1, fields, False, updated_at)
    # the writer of each item's last recorded write; none where nothing was recorded
    assert get_item_history(store, "decision", filled["decision"]["id"])[0]["written_by"]["principal"] == "bob"
    assert get_item_history(store, "progress", filled["progress"]["id"])[0]["written_by"]["principal"] == "bob"
    assert get_item_history(store, "custom_data", filled["custom_data"]["id"])[0]["written_by"] is None
    # the last recorded write moved into version 1: each write is listed once, oldest first
    d_id = filled["decision"]["id"]
    with store.read() as conn:
        writes = provenance.writes_of_items(conn, "decision", [d_id])[d_id]
        left = conn.execute(text("SELECT count(*) FROM item_writers WHERE item_type <> 'link'")).scalar()
    assert [w["principal"] for w in writes] == ["ada", "bob"] and left == 1
    # from then on, writes add versions
    decisions.update_decision(store, filled["decision"]["id"], summary="Use WAL mode")
    assert [v["version"] for v in get_item_history(store, "decision", filled["decision"]["id"])] == [2, 1]


def test_a_sqlite_store_at_0007_with_items_is_migrated_on_open_and_every_item_gets_version_1(tmp_path: Path):
    store = Store.open(tmp_path, create=True)
    assert store is not None
    filled = _fill(store)
    before = _current(store)
    downgrade(store.engine, "0007")
    with store.engine.begin() as conn:
        _writers_as_0007_recorded_them(conn, filled)
    store.close()
    with Store(tmp_path).engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == "0007"
        assert "item_versions" not in {
            r[0] for r in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    migrated = Store.open(tmp_path, create=False)
    assert migrated is not None
    with migrated.read() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == SCHEMA_REVISION
    _check_migrated(migrated, filled, before)
    migrated.close()


@pytest.mark.postgres
def test_a_postgresql_workspace_at_0007_with_items_is_migrated_on_open_and_every_item_gets_version_1(
    store_postgres_url: str,
):
    from homeport.store.postgres import PostgresStores, schema_for

    key = f"/srv/src/versions-{uuid.uuid4().hex[:8]}"
    stores = PostgresStores(store_postgres_url)
    store = stores.get(key, create=True)
    assert store is not None
    filled = _fill(store)
    before = _current(store)
    schema = schema_for(key)
    with stores.engine.connect() as conn:  # take the schema back to 0007 as that Homeport left it
        conn.exec_driver_sql(f"SET search_path TO {schema}")
        config = alembic_config()
        config.attributes["connection"] = conn
        command.downgrade(config, "0007")
        _writers_as_0007_recorded_them(conn, filled)
        conn.exec_driver_sql("UPDATE homeport.workspaces SET revision = '0007' WHERE key = %(k)s", {"k": key})
        conn.commit()
    stores.close()

    stores = PostgresStores(store_postgres_url)
    try:
        migrated = stores.get(key, create=False)
        assert migrated is not None
        assert stores.revisions()[key] == SCHEMA_REVISION
        _check_migrated(migrated, filled, before)
    finally:
        stores.close()
