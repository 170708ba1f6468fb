"""Engines per workspace: reused, closed when idle, bounded; opened read-only by construction."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pymysql
import pytest
from pymysql.constants import CLIENT
from sqlalchemy.exc import OperationalError as SQLAlchemyOperationalError

from homeport.errors import ProjectDatabaseError
from homeport.projectdb import ProjectDatabases, discover_database
from homeport.projectdb.connections import DRIVER_ERRORS, EngineCache, checkout, database_error, driver_message

from .conftest import write_config


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def sqlite_workspace(base: Path, name: str) -> Path:
    root = base / name
    root.mkdir()
    connection = sqlite3.connect(root / "db.sqlite3")
    connection.execute("CREATE TABLE t (id INTEGER)")
    connection.commit()
    connection.close()
    return root


def disposals(engine) -> list[object]:
    seen: list[object] = []
    original = engine.dispose

    def dispose(*args, **kwargs):
        seen.append(engine)
        return original(*args, **kwargs)

    engine.dispose = dispose
    return seen


def test_an_engine_is_reused_for_the_same_workspace_and_url(tmp_path):
    root = sqlite_workspace(tmp_path, "a")
    cache = EngineCache()
    source = discover_database(root, {})
    assert cache.engine_for(root, source) is cache.engine_for(root, discover_database(root, {}))
    assert len(cache) == 1
    cache.close_all()


def test_workspaces_and_write_modes_get_engines_of_their_own(tmp_path):
    a, b = sqlite_workspace(tmp_path, "a"), sqlite_workspace(tmp_path, "b")
    cache = EngineCache()
    engine_a = cache.engine_for(a, discover_database(a, {}))
    engine_b = cache.engine_for(b, discover_database(b, {}))
    write_config(a, "sqlite:///db.sqlite3", allow_writes=True)
    engine_a_writes = cache.engine_for(a, discover_database(a, {}))
    assert len({id(engine_a), id(engine_b), id(engine_a_writes)}) == 3
    assert len(cache) == 3
    cache.close_all()
    assert len(cache) == 0


def test_idle_engines_are_closed_the_next_time_the_cache_is_used(tmp_path):
    a, b = sqlite_workspace(tmp_path, "a"), sqlite_workspace(tmp_path, "b")
    clock = FakeClock()
    cache = EngineCache(max_idle_seconds=300, clock=clock)
    old = cache.engine_for(a, discover_database(a, {}))
    closed = disposals(old)
    clock.now += 299
    cache.engine_for(b, discover_database(b, {}))
    assert closed == [] and len(cache) == 2
    clock.now += 2  # a is now idle for 301 s, b for 2 s
    cache.engine_for(b, discover_database(b, {}))
    assert closed == [old] and len(cache) == 1
    assert cache.engine_for(a, discover_database(a, {})) is not old
    cache.close_all()


def test_an_engine_running_a_long_query_is_not_idle(tmp_path):
    a, b = sqlite_workspace(tmp_path, "a"), sqlite_workspace(tmp_path, "b")
    clock = FakeClock()
    cache = EngineCache(max_idle_seconds=300, clock=clock)
    source = discover_database(a, {})
    engine = cache.engine_for(a, source)
    connection = checkout(engine, source)
    clock.now += 301
    cache.engine_for(b, discover_database(b, {}))
    assert cache.engine_for(a, source) is engine
    connection.close()
    clock.now += 301
    cache.engine_for(b, discover_database(b, {}))
    assert cache.engine_for(a, source) is not engine
    cache.close_all()


def test_the_cache_is_bounded_and_closes_the_least_recently_used_engine(tmp_path):
    roots = [sqlite_workspace(tmp_path, name) for name in ("a", "b", "c")]
    clock = FakeClock()
    cache = EngineCache(max_engines=2, clock=clock)
    engines = []
    for root in roots[:2]:
        engines.append(cache.engine_for(root, discover_database(root, {})))
        clock.now += 1
    closed = disposals(engines[0])
    cache.engine_for(roots[0], discover_database(roots[0], {}))  # a is now the most recent
    clock.now += 1
    closed_b = disposals(engines[1])
    cache.engine_for(roots[2], discover_database(roots[2], {}))
    assert len(cache) == 2
    assert closed == [] and closed_b == [engines[1]]
    cache.close_all()


def test_close_keeps_project_databases_usable(tmp_path):
    root = sqlite_workspace(tmp_path, "a")
    databases = ProjectDatabases({}, max_idle_seconds=1, max_engines=1)
    assert databases.get_tables(root)["tables"] == ["t"]
    databases.close()
    assert databases.get_tables(root)["tables"] == ["t"]
    databases.close()


def test_sqlite_is_opened_read_only_with_an_authorizer(tmp_path):
    root = sqlite_workspace(tmp_path, "a")
    cache = EngineCache()
    connection = checkout(cache.engine_for(root, discover_database(root, {})), discover_database(root, {}))
    try:
        raw = connection.driver_connection
        assert raw.execute("PRAGMA query_only").fetchone() == (1,)
        with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
            raw.execute("INSERT INTO t VALUES (1)")
        with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
            raw.execute(f"ATTACH '{tmp_path / 'other.db'}' AS other")
        raw.set_authorizer(None)  # even without the authorizer, the file itself is read-only
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            raw.execute("INSERT INTO t VALUES (1)")
    finally:
        connection.invalidate()
        cache.close_all()
    assert not (tmp_path / "other.db").exists()


def test_a_missing_sqlite_file_is_a_clear_error_and_is_never_created(tmp_path):
    root = tmp_path / "a"
    root.mkdir()
    write_config(root, "sqlite:///db/missing.sqlite3", allow_writes=True)
    with (
        ProjectDatabases({}) as databases,
        pytest.raises(ProjectDatabaseError, match=r"missing\.sqlite3 does not exist"),
    ):
        databases.run_query(root, "SELECT 1")
    assert not (root / "db" / "missing.sqlite3").exists()


@pytest.mark.mysql
def test_mysql_connections_never_allow_several_statements_whatever_the_url_says(request, tmp_path):
    server = request.getfixturevalue("mysql_database")
    root = tmp_path / "a"
    root.mkdir()
    write_config(root, server.url + "?client_flag=65536&local_infile=1")
    source = discover_database(root, {})
    cache = EngineCache()
    connection = checkout(cache.engine_for(root, source), source)
    try:
        raw = connection.driver_connection
        assert raw.client_flag & CLIENT.MULTI_STATEMENTS == 0
        assert raw.client_flag & CLIENT.LOCAL_FILES == 0
        with raw.cursor() as cursor, pytest.raises(pymysql.err.ProgrammingError):
            cursor.execute("SELECT 1; SELECT 2")
    finally:
        connection.invalidate()
        cache.close_all()


@pytest.mark.postgres
def test_postgres_urls_open_with_psycopg_in_read_only_transactions(request, tmp_path, databases):
    server = request.getfixturevalue("postgres_database")
    root = tmp_path / "a"
    root.mkdir()
    write_config(root, server.url.replace("postgresql://", "postgres://"))
    assert discover_database(root, {}).url.drivername == "postgresql+psycopg"
    assert databases.run_query(root, "SHOW transaction_read_only")["rows"] == [["on"]]


def test_an_unreachable_server_is_a_project_database_error_without_the_password(tmp_path):
    root = tmp_path / "a"
    root.mkdir()
    write_config(root, "postgresql://app:hunter2@127.0.0.1:1/app")
    with ProjectDatabases({}) as databases, pytest.raises(ProjectDatabaseError) as caught:
        databases.get_tables(root)
    message = str(caught.value)
    assert "hunter2" not in message
    assert "127.0.0.1" in message and "***" in message
    assert "Traceback" not in message and "sqlalche.me" not in message


@pytest.mark.parametrize(
    "error",
    [
        sqlite3.OperationalError("no such table: x"),
        psycopg.errors.UndefinedTable('relation "x" does not exist'),
        pymysql.err.ProgrammingError(1146, "Table 'x' doesn't exist"),
        SQLAlchemyOperationalError("SELECT 1", {}, sqlite3.OperationalError("disk I/O error")),
    ],
    ids=["sqlite3", "psycopg", "pymysql", "sqlalchemy"],
)
def test_every_driver_error_is_translated_with_the_drivers_message(tmp_path, error):
    assert isinstance(error, DRIVER_ERRORS)
    root = sqlite_workspace(tmp_path, "a")
    translated = database_error(error, discover_database(root, {}), "the query failed")
    assert isinstance(translated, ProjectDatabaseError)
    assert driver_message(error) in translated.message
    assert driver_message(error).split()[0] in ("no", "relation", "Table", "disk")
    assert "Background on this error" not in translated.message
