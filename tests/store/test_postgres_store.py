"""The shared PostgreSQL store: workspace keys, migrations, refusing a newer schema, racing first starts, the tools."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from mcp import Client
from sqlalchemy import event, text

from homeport.embedding.model import unavailable_reason
from homeport.errors import StoreTooNewError
from homeport.server import build_server
from homeport.store import SCHEMA_REVISION, decisions, search, store_path_for
from homeport.store.postgres import PostgresStores, schema_for
from homeport.store.search import mark

NO_MODEL = unavailable_reason(None)  # search by meaning is checked when the semantic extra and a model are here

pytestmark = pytest.mark.postgres
HOMEPORT = str(Path(sys.executable).parent / "homeport")


def _key() -> str:
    return f"/srv/src/project-{uuid.uuid4().hex[:8]}"


def _raw(url: str) -> psycopg.Connection:
    return psycopg.connect(url, autocommit=True)


def test_path_keys_and_logical_keys_are_separate_workspaces(postgres_stores):
    path_key, logical = _key(), f"acme/api-{uuid.uuid4().hex[:6]}"
    decisions.log_decision(postgres_stores.get(path_key, create=True), "in the path workspace")
    decisions.log_decision(postgres_stores.get(logical, create=True), "in the logical workspace")
    assert [d["summary"] for d in decisions.get_decisions(postgres_stores.get(logical, create=False))] == [
        "in the logical workspace"
    ]
    assert postgres_stores.get(_key(), create=False) is None  # a read never creates a workspace
    assert schema_for(logical) != schema_for(path_key)


def test_a_workspace_is_kept_in_its_own_schema_with_its_revision(postgres_stores, store_postgres_url):
    key = _key()
    decisions.log_decision(postgres_stores.get(key, create=True), "kept")
    with _raw(store_postgres_url) as conn:
        schema, revision = conn.execute(
            "SELECT schema_name, revision FROM homeport.workspaces WHERE key = %s", (key,)
        ).fetchone()
        assert (schema, revision) == (schema_for(key), SCHEMA_REVISION)
        assert conn.execute(f"SELECT version_num FROM {schema}.alembic_version").fetchall() == [(SCHEMA_REVISION,)]
        assert conn.execute(f"SELECT summary FROM {schema}.decisions").fetchall() == [("kept",)]
        index = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = 'ix_search_index_document'",
            (schema,),
        ).fetchone()
        assert index is not None and "USING gin" in index[0]


def test_search_on_postgres_ranks_with_filters_and_highlights(postgres_stores):
    store = postgres_stores.get(_key(), create=True)
    title = decisions.log_decision(store, "Connection pooling with PgBouncer", tags=["infra"])
    body = decisions.log_decision(store, "Scaling", rationale="we add pooling later", tags=["later"])
    hits = search.search(store, "pooling")
    assert [h["id"] for h in hits] == [title["id"], body["id"]]
    assert mark(hits[0], "[", "]") == "Connection [pooling] with PgBouncer" and hits[0]["score"] > hits[1]["score"] > 0
    assert [h["id"] for h in search.search(store, "pooling", tags_any=["LATER"])] == [body["id"]]
    assert search.search(store, "pooling", types=["progress"]) == []


def _set_revision(url: str, key: str, revision: str) -> None:
    with _raw(url) as conn:
        schema = schema_for(key)
        conn.execute(f"UPDATE {schema}.alembic_version SET version_num = %s", (revision,))
        conn.execute("UPDATE homeport.workspaces SET revision = %s WHERE key = %s", (revision, key))


def test_a_database_migrated_by_a_newer_homeport_is_refused_naming_the_revision(store_postgres_url, tmp_path):
    url = _fresh_database(store_postgres_url)
    key = _key()
    stores = PostgresStores(url)
    decisions.log_decision(stores.get(key, create=True), "before the upgrade")
    stores.close()
    _set_revision(url, key, "9999")

    stores = PostgresStores(url)
    with pytest.raises(StoreTooNewError, match="revision 9999") as info:
        stores.check_revisions()
    assert "Upgrade Homeport" in info.value.message and key in info.value.message
    with pytest.raises(StoreTooNewError, match="revision 9999"):
        stores.get(key, create=False)
    stores.close()

    env = {"PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path), "HOMEPORT_STORE": url}
    served = subprocess.run(
        [HOMEPORT, "serve", "--http", "--port", "0", "--allow-root", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=tmp_path,
    )
    assert served.returncode == 1
    assert "schema revision 9999, newer than this Homeport knows" in served.stderr
    assert "Upgrade Homeport" in served.stderr and "password" not in served.stderr
    migrated = subprocess.run([HOMEPORT, "migrate"], capture_output=True, text=True, env=env, timeout=60)
    assert migrated.returncode == 1 and "revision 9999" in migrated.stderr


def _fresh_database(base_url: str) -> str:
    """Another empty database on the same server, dropped with the run's (named after it)."""
    name = f"{base_url.rsplit('/', 1)[1]}_{uuid.uuid4().hex[:6]}"
    with _raw(base_url.rsplit("/", 1)[0] + "/test") as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    _CREATED.append((base_url, name))
    return base_url.rsplit("/", 1)[0] + "/" + name


_CREATED: list[tuple[str, str]] = []


@pytest.fixture(autouse=True, scope="module")
def _drop_fresh_databases():
    yield
    for base_url, name in _CREATED:
        with _raw(base_url.rsplit("/", 1)[0] + "/test") as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    _CREATED.clear()


def _first_start(url: str, key: str, start: multiprocessing.synchronize.Barrier) -> None:
    stores = PostgresStores(url, pool_size=1)
    start.wait(60)  # every process is loaded and waiting: they go at once
    store = stores.get(key, create=True)
    assert store is not None
    decisions.log_decision(store, f"from {multiprocessing.current_process().name}")
    stores.close()


@pytest.mark.timeout(120)
def test_processes_starting_at_once_on_a_new_database_migrate_it_once(store_postgres_url):
    url = _fresh_database(store_postgres_url)
    keys = [_key(), "acme/api"]
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(6)
    workers = [ctx.Process(target=_first_start, args=(url, keys[i % 2], start), name=f"p{i}") for i in range(6)]
    for w in workers:
        w.start()
    migrate = subprocess.Popen(
        [HOMEPORT, "migrate", "--store", url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for w in workers:
        w.join(100)
        assert w.exitcode == 0
    _out, err = migrate.communicate(timeout=60)
    assert migrate.returncode == 0, err
    with _raw(url) as conn:
        assert sorted(r[0] for r in conn.execute("SELECT key FROM homeport.workspaces")) == sorted(keys)
        for key in keys:
            schema = schema_for(key)
            assert conn.execute(f"SELECT version_num FROM {schema}.alembic_version").fetchall() == [(SCHEMA_REVISION,)]
            assert conn.execute(f"SELECT count(*) FROM {schema}.decisions").fetchone() == (3,)
            indexes = conn.execute("SELECT count(*) FROM pg_indexes WHERE schemaname = %s", (schema,)).fetchone()[0]
            assert indexes == _indexes_of_one_migration(url)


def _indexes_of_one_migration(base_url: str) -> int:
    """The number of indexes one workspace gets when it alone is migrated (nothing applied twice)."""
    url = _fresh_database(base_url)
    stores = PostgresStores(url, pool_size=1)
    stores.get("alone", create=True)
    stores.close()
    with _raw(url) as conn:
        return conn.execute("SELECT count(*) FROM pg_indexes WHERE schemaname = %s", (schema_for("alone"),)).fetchone()[
            0
        ]


def test_migrate_brings_every_workspace_to_head_and_says_so(store_postgres_url):
    url = _fresh_database(store_postgres_url)
    stores = PostgresStores(url)
    key = _key()
    decisions.log_decision(stores.get(key, create=True), "kept across the migration")
    stores.close()
    with _raw(url) as conn:  # as a store of the previous release: without the PostgreSQL search index
        schema = schema_for(key)
        # Every table a later revision added goes (search_index with 0003, item_uids with 0004, ...).
        at_0002 = {"contexts", "context_history", "decisions", "progress", "custom_data", "item_tags"}
        at_0002 |= {"system_patterns", "links", "alembic_version"}
        tables = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)).fetchall()
        for (table,) in tables:
            if table not in at_0002:
                conn.execute(f"DROP TABLE {schema}.{table} CASCADE")
        conn.execute(f"UPDATE {schema}.alembic_version SET version_num = '0002'")
        conn.execute("UPDATE homeport.workspaces SET revision = '0002'")
    done = subprocess.run([HOMEPORT, "migrate", "--store", url], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"1 workspace(s) at revision {SCHEMA_REVISION}; migrated 1: {key}" in done.stdout
    stores = PostgresStores(url)
    store = stores.get(key, create=False)
    assert [d["summary"] for d in decisions.get_decisions(store)] == ["kept across the migration"]
    with store.read() as conn:
        assert conn.execute(text("SELECT count(*) FROM search_index")).scalar() == 0
    stores.close()


@pytest.mark.anyio
async def test_the_memory_tools_work_on_a_postgres_store(runtime_factory, projects, store_postgres_url):
    runtime = runtime_factory(store_url=store_postgres_url)
    ws = str(projects["alpha"])
    async with Client(build_server(runtime)) as c:
        r = await c.call_tool("log_decision", {"summary": "Team memory on PostgreSQL", "tags": ["db"], "workspace": ws})
        assert not r.is_error, r.content
        r = await c.call_tool("get_decisions", {"workspace": ws})
        assert [d["summary"] for d in r.structured_content["decisions"]] == ["Team memory on PostgreSQL"]
        r = await c.call_tool("search", {"query": "postgresql", "mode": "words", "workspace": ws})
        assert not r.is_error, r.content
        assert [h["type"] for h in r.structured_content["results"]] == ["decision"]
        if NO_MODEL is None:  # search by meaning too, once the background indexer has embedded the item
            assert runtime.semantic.drain(timeout=120)
            r = await c.call_tool(
                "search", {"query": "shared database for the team's notes", "mode": "semantic", "workspace": ws}
            )
            assert not r.is_error, r.content
            assert r.structured_content["mode_used"] == "semantic" and r.structured_content["not_yet_embedded"] == 0
            assert [h["title"] for h in r.structured_content["results"]] == ["Team memory on PostgreSQL"]
            r = await c.call_tool("search", {"query": "postgresql", "workspace": ws})
            assert r.structured_content["mode_used"] == "auto" and "note" not in r.structured_content
            assert [h["title"] for h in r.structured_content["results"]] == ["Team memory on PostgreSQL"]
        r = await c.call_tool("get_decisions", {"workspace": str(projects["beta"])})
        assert r.structured_content["decisions"] == []
    assert not store_path_for(projects["alpha"]).exists()  # nothing was written beside the project


def test_connections_opened_under_concurrent_reads_are_kept_for_the_next_ones(store_postgres_url):
    """32 agents on one process read at once: the connections a burst opened serve the next burst, instead of
    all but `pool_size` being closed on return and opened again (a PostgreSQL connection costs milliseconds of
    CPU on both sides). The ceiling of open connections is unchanged (`pool_size` + 10)."""
    stores = PostgresStores(store_postgres_url, pool_size=2)
    store = stores.get(_key(), create=True)
    assert store is not None
    burst = 8  # above pool_size, within the ceiling

    def backends() -> set[int]:
        held = [store.engine.connect() for _ in range(burst)]
        try:
            return {conn.execute(text("select pg_backend_pid()")).scalar_one() for conn in held}
        finally:
            for conn in held:
                conn.close()

    try:
        first = backends()
        assert len(first) == burst
        assert backends() == first
        assert stores.engine.pool.size() + stores.engine.pool._max_overflow == 2 + 10
    finally:
        stores.close()


def _round_trips(stores: PostgresStores, work: Callable[[], object], tmp_path: Path) -> list[str]:
    """The round trips `work` makes to the database: every Query or Sync message libpq sends ends one."""
    from psycopg.pq import Trace

    log = tmp_path / f"libpq-{uuid.uuid4().hex[:6]}.trace"
    with open(log, "w") as sink:

        def traced(dbapi_conn, record, proxy) -> None:
            dbapi_conn.pgconn.trace(sink.fileno())
            dbapi_conn.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS | Trace.REGRESS_MODE)

        def untraced(dbapi_conn, record) -> None:
            dbapi_conn.pgconn.untrace()

        event.listen(stores.engine, "checkout", traced)
        event.listen(stores.engine, "checkin", untraced)
        try:
            work()
        finally:
            event.remove(stores.engine, "checkout", traced)
            event.remove(stores.engine, "checkin", untraced)
    sent = [line.split("\t") for line in log.read_text().splitlines() if line.startswith("F\t")]
    return [fields[3].strip() if fields[2] == "Query" else "Sync" for fields in sent if fields[2] in ("Query", "Sync")]


def test_a_transaction_begins_in_one_round_trip_with_its_schema_and_lock(postgres_stores, tmp_path):
    """A call is mostly round trips to the database: BEGIN, the workspace's search_path and a writer's lock
    travel together, so a read of one statement is three round trips (begin, statement, commit), not four,
    and a write of one statement three, not five."""
    store = postgres_stores.get(_key(), create=True)
    assert store is not None

    def read() -> None:
        with store.read() as conn:
            conn.execute(text("SELECT count(*) FROM decisions")).scalar_one()

    def write() -> None:
        decisions.log_decision(store, "warm up")  # not traced: statements psycopg prepares after five runs differ
        with store.write() as conn:
            conn.execute(text("DELETE FROM decisions WHERE id < 0"))

    trips = _round_trips(postgres_stores, read, tmp_path)
    assert len(trips) == 3, trips
    assert "BEGIN ISOLATION LEVEL REPEATABLE READ" in trips[0] and store.schema in trips[0]
    assert trips[2] == '"COMMIT"'
    trips = _round_trips(postgres_stores, write, tmp_path)[-3:]
    assert "pg_advisory_xact_lock" in trips[0] and store.schema in trips[0] and trips[2] == '"COMMIT"', trips
    # Each still reads its own workspace, in one snapshot, and the settings end with the transaction.
    with store.read() as conn:
        assert conn.exec_driver_sql("SHOW search_path").scalar() == store.schema
        assert conn.exec_driver_sql("SHOW transaction_isolation").scalar() == "repeatable read"
        assert conn.exec_driver_sql("SHOW plan_cache_mode").scalar() == "force_custom_plan"
    with postgres_stores.engine.connect() as conn:
        assert conn.exec_driver_sql("SHOW search_path").scalar() != store.schema
        assert conn.exec_driver_sql("SHOW plan_cache_mode").scalar() == "auto"
        assert conn.exec_driver_sql("SHOW transaction_isolation").scalar() == "read committed"
