"""A store from before branches were recorded (revision 0009) migrates with its data: every item was made
on the default branch, so a reader on any branch sees it; new writes record where they are made."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from alembic import command

from _git_repos import git
from homeport.store import SCHEMA_REVISION, Store, branches, decisions, patterns
from homeport.store.item_history import get_item_history
from homeport.store.migrate import alembic_config, downgrade


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "README").write_text("r\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    return root


def _fill(store) -> list[int]:
    d = decisions.log_decision(store, "Written before 0010")
    p = patterns.log_system_pattern(store, "Old pattern", "from before")
    return [d["id"], p["id"]]


def _check_migrated(store, root: Path, ids: list[int]) -> None:
    git(root, "checkout", "-q", "-b", "elsewhere")
    (root / "e.txt").write_text("e\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "elsewhere")
    with branches.working_in(root) as place:
        assert [d["id"] for d in decisions.get_decisions(store)] == [ids[0]]
        assert [p["id"] for p in patterns.get_system_patterns(store)] == [ids[1]]
    assert place.hidden_on_other_branches == 0
    assert get_item_history(store, "decision", ids[0])[0]["made_in"] is None
    with branches.working_in(root):
        new = decisions.log_decision(store, "Written on elsewhere after 0010")
    assert get_item_history(store, "decision", new["id"])[0]["made_in"] == {
        "branch": "elsewhere",
        "commit": git(root, "rev-parse", "HEAD"),
        "worktree": str(root),
    }
    git(root, "checkout", "-q", "main")
    with branches.working_in(root) as place:
        assert [d["id"] for d in decisions.get_decisions(store)] == [ids[0]]
    assert place.hidden_on_other_branches == 1


def test_a_sqlite_store_at_0009_with_items_migrates_and_its_items_are_seen_on_every_branch(
    tmp_path: Path, repository: Path
):
    where = tmp_path / "store"
    store = Store.open(where, create=True)
    assert store is not None
    ids = _fill(store)
    downgrade(store.engine, "0009")
    store.close()
    with Store(where).engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == "0009"
        columns = {r[1] for r in conn.exec_driver_sql("PRAGMA table_info(item_versions)")}
        assert "branch" not in columns
    migrated = Store.open(where, create=False)
    assert migrated is not None
    with migrated.read() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == SCHEMA_REVISION
    _check_migrated(migrated, repository, ids)
    migrated.close()


@pytest.mark.postgres
def test_a_postgresql_workspace_at_0009_migrates_and_its_items_are_seen_on_every_branch(
    store_postgres_url: str, repository: Path
):
    from homeport.store.postgres import PostgresStores, schema_for

    key = f"/srv/src/branches-{uuid.uuid4().hex[:8]}"
    stores = PostgresStores(store_postgres_url)
    store = stores.get(key, create=True)
    assert store is not None
    ids = _fill(store)
    with stores.engine.connect() as conn:
        conn.exec_driver_sql(f"SET search_path TO {schema_for(key)}")
        config = alembic_config()
        config.attributes["connection"] = conn
        command.downgrade(config, "0009")
        conn.exec_driver_sql("UPDATE homeport.workspaces SET revision = '0009' WHERE key = %(k)s", {"k": key})
        conn.commit()
    stores.close()
    stores = PostgresStores(store_postgres_url)
    try:
        migrated = stores.get(key, create=False)
        assert migrated is not None
        assert stores.revisions()[key] == SCHEMA_REVISION
        _check_migrated(migrated, repository, ids)
    finally:
        stores.close()
