"""Store transactions: begun on the driver connection, shared by prepared statements and SQLAlchemy Core."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, select

from homeport.errors import StoreError
from homeport.store import Store, decisions
from homeport.store.custom_data import get_custom_data, upsert_custom_data
from homeport.store.database import NO_CHECKPOINT_ON_CLOSE, Prepared, dict_rows, driver
from homeport.store.schema import system_patterns
from homeport.store.tags import set_tags


class Boom(Exception):
    pass


@pytest.fixture
def store(copy_store, tmp_path):
    s = copy_store(tmp_path)
    yield s
    s.close()


def _pattern(name: str):
    return insert(system_patterns).values(
        name=name, name_key=name, description="", created_at="2026", updated_at="2026"
    )


def _pattern_names(store) -> list[str]:
    with store.read() as conn:
        return [r.name for r in conn.execute(select(system_patterns.c.name))]


def test_a_failing_write_block_leaves_nothing_of_its_prepared_or_core_statements(store):
    with pytest.raises(Boom), store.write() as conn:
        decisions.insert_decision(conn, "prepared insert", tags=["t"])  # driver connection
        conn.execute(_pattern("core insert"))  # SQLAlchemy joins the same transaction
        raise Boom

    assert decisions.get_decisions(store) == []
    assert _pattern_names(store) == []
    with store.read() as conn:  # the index and the tags went with it
        assert conn.exec_driver_sql("SELECT count(*) FROM search_index").scalar() == 0
        assert conn.exec_driver_sql("SELECT count(*) FROM item_tags").scalar() == 0


def test_a_write_block_commits_prepared_and_core_statements_together(store):
    with store.write() as conn:
        decisions.insert_decision(conn, "prepared insert")
        conn.execute(_pattern("core insert"))

    assert [d["summary"] for d in decisions.get_decisions(store)] == ["prepared insert"]
    assert _pattern_names(store) == ["core insert"]


def test_a_block_that_only_used_prepared_statements_is_committed_on_the_driver_connection(store, sqlite_only):
    with store.write() as conn:
        upsert_custom_data(conn, "c", "k", {"v": 1})
        assert not conn.in_transaction()  # SQLAlchemy never began: the driver's transaction is the only one

    assert [r["value"] for r in get_custom_data(store, category="c", key="k")] == [{"v": 1}]


def test_a_constraint_failure_is_a_store_error_and_the_connection_stays_usable(store):
    with store.write() as conn:
        first = decisions.insert_decision(conn, "one")

    with pytest.raises(StoreError, match=r"(?i)UNIQUE constraint failed|duplicate key"), store.write() as conn:
        decisions.insert_decision(conn, "same id", item_id=first["id"])

    for _ in range(3):  # the pooled connection was rolled back, not left inside the failed transaction
        decisions.log_decision(store, "after the failure")
    assert len(decisions.get_decisions(store)) == 4


def test_a_failure_in_a_later_statement_rolls_back_earlier_prepared_statements(store):
    with pytest.raises(StoreError), store.write() as conn:
        item = decisions.insert_decision(conn, "kept only if all lands")
        set_tags(conn, "decision", item["id"], ["ok"])
        conn.exec_driver_sql("INSERT INTO no_such_table VALUES (1)")

    assert decisions.get_decisions(store) == []


def test_prepared_statements_fill_in_values_bound_in_the_statement(store):
    statement = Prepared(select(system_patterns.c.name).where(system_patterns.c.name == "fixed"))
    # The literal is a parameter, supplied from the compiled statement (SQLite's form; PostgreSQL's is compiled there).
    assert ":" in statement.sql
    with store.write() as conn:
        conn.execute(_pattern("fixed"))
        assert dict_rows(statement.run(conn)) == [{"name": "fixed"}]


def _in_main_file_alone(db: Path, tmp_path: Path, sql: str) -> Any:
    """Copy homeport.db without its -wal/-shm (what a naive backup does) and query the copy."""
    copy = tmp_path / "backup.db"
    shutil.copyfile(db, copy)
    with contextlib.closing(sqlite3.connect(copy)) as raw:
        return raw.execute(sql).fetchone()


def test_a_closed_store_has_every_write_in_its_main_file(copy_store, tmp_path, sqlite_only):
    store = copy_store(tmp_path / "ws")
    for i in range(5):
        decisions.log_decision(store, f"decision {i}")
    store.close()
    assert _in_main_file_alone(store.path, tmp_path, "SELECT count(*) FROM decisions") == (5,)


@pytest.mark.skipif(NO_CHECKPOINT_ON_CLOSE is None, reason="needs Python 3.12+ (sqlite3.Connection.setconfig)")
def test_closing_a_store_keeps_its_wal_so_reopening_does_not_create_it_again(copy_store, tmp_path, sqlite_only):
    store = copy_store(tmp_path / "ws")
    decisions.log_decision(store, "kept")
    store.close()
    assert Path(f"{store.path}-wal").exists() and Path(f"{store.path}-shm").exists()
    reopened = Store.open(tmp_path / "ws", create=False)
    assert [d["summary"] for d in decisions.get_decisions(reopened)] == ["kept"]
    reopened.close()


def test_a_new_store_once_closed_has_its_schema_in_its_main_file(tmp_path):
    store = Store.open(tmp_path / "ws", create=True)
    store.close()
    assert _in_main_file_alone(store.path, tmp_path, "SELECT version_num FROM alembic_version") is not None


def test_a_commit_that_fails_is_rolled_back_and_the_connection_stays_usable(store, store_backend):
    if store_backend == "postgres-shared":
        pytest.skip("the shared layout's tenant role may create no tables, and its foreign keys are not deferred")
    with store.write() as conn:  # a deferred foreign key is checked only at COMMIT
        conn.exec_driver_sql("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        conn.exec_driver_sql(
            "CREATE TABLE child (parent_id INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)"
        )

    with pytest.raises(StoreError, match=r"(?i)FOREIGN KEY"), store.write() as conn:
        decisions.insert_decision(conn, "lost with the failed commit")
        driver(conn).execute("INSERT INTO child VALUES (42)")

    for _ in range(2):  # the failed transaction was not left open on a pooled connection
        decisions.log_decision(store, "after")
    assert [d["summary"] for d in decisions.get_decisions(store)] == ["after", "after"]
