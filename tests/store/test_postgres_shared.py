"""The shared PostgreSQL layout: isolation by row-level security, per-workspace ids, one migration per
database, the search index's GIN, and moving a database of schemas into it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy import make_url

from homeport.core.stores import migrate_database
from homeport.errors import ConfigError
from homeport.store import decisions, progress, search
from homeport.store.custom_data import log_custom_data
from homeport.store.postgres import PostgresStores, SharedStore
from homeport.store.postgres_move import move_into_shared
from homeport.store.postgres_shared import SHARED_SCHEMA, TENANT_ROLE, shared_metadata

pytestmark = pytest.mark.postgres


def _key() -> str:
    return f"/srv/src/shared-{uuid.uuid4().hex[:8]}"


def _plain(url: str) -> str:
    return make_url(url).difference_update_query(["layout"]).render_as_string(hide_password=False)


@pytest.fixture
def fresh_database() -> Iterator[str]:
    """The URL of an empty database, dropped after the test."""
    name = f"homeport_shared_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(host="127.0.0.1", port=5432, user="postgres", dbname="test", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    with psycopg.connect(host="127.0.0.1", port=5432, user="postgres", dbname="test", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _relations(conn: psycopg.Connection) -> list[str]:
    """Every table and view of the shared schema that the tenant may read."""
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relkind IN ('r', 'v') "
        "AND has_table_privilege(%s, c.oid, 'SELECT') ORDER BY 1",
        (SHARED_SCHEMA, TENANT_ROLE),
    ).fetchall()
    return [r[0] for r in rows]


def _filled(stores: PostgresStores) -> SharedStore:
    store = stores.get(_key(), create=True)
    assert isinstance(store, SharedStore)
    first = decisions.log_decision(store, "Keep tenants apart", rationale="isolation", tags=["tenancy"])
    progress.log_progress(store, "TODO", "Isolate", parent_id=None)
    log_custom_data(store, "notes", "k", {"v": 1})
    assert first["id"] == 1
    return store


def test_a_query_without_the_workspace_set_sees_nothing_in_any_table(shared_postgres_stores):
    store = _filled(shared_postgres_stores)
    with psycopg.connect(_plain(shared_postgres_stores.url), autocommit=True) as conn:
        relations = _relations(conn)
        assert {"decisions", "progress", "custom_data", "item_tags", "search_index", "id_counters"} <= set(relations)
        with conn.transaction():
            conn.execute(f"SET LOCAL ROLE {TENANT_ROLE}")
            conn.execute(f"SET LOCAL search_path TO {SHARED_SCHEMA}")
            for relation in relations:
                assert conn.execute(f"SELECT count(*) FROM {relation}").fetchone() == (0,), relation
            # Writes without the workspace change nothing, and an insert has no workspace to go to.
            assert conn.execute("UPDATE decisions SET summary = 'x'").rowcount == 0
            assert conn.execute("DELETE FROM decisions").rowcount == 0
        with pytest.raises(psycopg.Error), conn.transaction():
            conn.execute(f"SET LOCAL ROLE {TENANT_ROLE}")
            conn.execute(
                f"INSERT INTO {SHARED_SCHEMA}.decisions (summary, created_at, updated_at) VALUES ('x', '', '')"
            )
        # A session that set the workspace once reads '' afterwards: still nothing, not an error.
        with conn.transaction():
            conn.execute(f"SET LOCAL ROLE {TENANT_ROLE}")
            conn.execute("SET LOCAL homeport.ws = ''")
            assert conn.execute(f"SELECT count(*) FROM {SHARED_SCHEMA}.decisions").fetchone() == (0,)
    with store.read() as conn:  # the store itself still sees its memory
        assert conn.exec_driver_sql("SELECT count(*) FROM decisions").scalar() == 1


def test_another_workspaces_id_shows_only_that_workspace_and_cannot_write_into_ours(shared_postgres_stores):
    ours = _filled(shared_postgres_stores)
    theirs = shared_postgres_stores.get(_key(), create=True)
    assert isinstance(theirs, SharedStore)
    decisions.log_decision(theirs, "Their own decision")
    with psycopg.connect(_plain(shared_postgres_stores.url), autocommit=True) as conn:
        with conn.transaction():
            conn.execute(f"SET LOCAL ROLE {TENANT_ROLE}")
            conn.execute(f"SET LOCAL homeport.ws = '{theirs.ws}'")
            conn.execute(f"SET LOCAL search_path TO {SHARED_SCHEMA}")
            assert conn.execute("SELECT summary FROM decisions").fetchall() == [("Their own decision",)]
            assert conn.execute("SELECT DISTINCT ws FROM search_index").fetchall() == [(theirs.ws,)]
            for relation in _relations(conn):
                leaked = conn.execute(f"SELECT count(*) FROM {relation} WHERE ws = %s", (ours.ws,)).fetchone()
                assert leaked == (0,), relation
            assert conn.execute(f"DELETE FROM decisions WHERE ws = {ours.ws}").rowcount == 0
        for sql in (
            f"INSERT INTO decisions (ws, summary, created_at, updated_at) VALUES ({ours.ws}, 'planted', '', '')",
            f"INSERT INTO search_index (ws, rowid, item_type, item_id, document) "
            f"VALUES ({ours.ws}, 987654321, 'x', 9, '')",
            f"UPDATE decisions SET ws = {ours.ws}",
        ):
            # Row-level security's WITH CHECK; the search index view's CHECK OPTION.
            refused = (psycopg.errors.InsufficientPrivilege, psycopg.errors.WithCheckOptionViolation)
            with pytest.raises(refused), conn.transaction():
                conn.execute(f"SET LOCAL ROLE {TENANT_ROLE}")
                conn.execute(f"SET LOCAL homeport.ws = '{theirs.ws}'")
                conn.execute(f"SET LOCAL search_path TO {SHARED_SCHEMA}")
                conn.execute(sql)
        # The tenant cannot go around the view to the search index's table.
        with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
            conn.execute(f"SET LOCAL ROLE {TENANT_ROLE}")
            conn.execute("SELECT count(*) FROM homeport_shared_base.search_index")
    assert [d["summary"] for d in decisions.get_decisions(ours)] == ["Keep tenants apart"]
    assert [h["id"] for h in search.search(theirs, "tenants")] == []


def test_every_table_is_keyed_by_workspace_first(shared_postgres_stores):
    _filled(shared_postgres_stores)
    with psycopg.connect(_plain(shared_postgres_stores.url), autocommit=True) as conn:
        tables = conn.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r' "
            "AND c.relname NOT IN ('workspaces', 'layout', 'moved')",
            (SHARED_SCHEMA,),
        ).fetchall()
        assert {t for t, *_ in tables} == {t.name for t in shared_metadata().sorted_tables}
        assert all(rls and forced for _, rls, forced in tables)
        indexes = conn.execute(
            "SELECT i.indexrelid::regclass::text, a.attname FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0] "
            "WHERE n.nspname IN (%s, 'homeport_shared_base') AND c.relname NOT IN ('workspaces', 'layout', 'moved')",
            (SHARED_SCHEMA,),
        ).fetchall()
        assert indexes and all(first == "ws" for _, first in indexes), indexes
        foreign = conn.execute(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'f' "
            "AND connamespace = %s::regnamespace",
            (SHARED_SCHEMA,),
        ).fetchall()
        assert foreign and all(d.startswith("FOREIGN KEY (ws, ") for (d,) in foreign)


def test_ids_are_numbered_per_workspace_and_an_explicit_id_moves_the_counter(shared_postgres_stores):
    one = shared_postgres_stores.get(_key(), create=True)
    two = shared_postgres_stores.get(_key(), create=True)
    assert [decisions.log_decision(s, "first")["id"] for s in (one, two, one)] == [1, 1, 2]
    with pytest.raises(RuntimeError), one.write() as conn:  # a rolled-back insert uses up no id
        decisions.insert_decision(conn, "rolled back")
        raise RuntimeError
    assert decisions.log_decision(one, "third")["id"] == 3
    with one.write() as conn:  # an import keeps an item's id: the counter moves past it
        conn.exec_driver_sql("INSERT INTO decisions (id, summary, created_at, updated_at) VALUES (40, 'kept', '', '')")
    assert decisions.log_decision(one, "after")["id"] == 41
    decisions.delete_decision(one, 41)  # a deleted id is never handed out again, as with AUTOINCREMENT
    assert decisions.log_decision(one, "after the delete")["id"] == 42
    assert decisions.log_decision(two, "second")["id"] == 2


def test_an_import_of_many_items_in_one_transaction_stays_linear(shared_postgres_stores):
    """Each id is the workspace's highest + 1 (an index lookup), not a counter row updated once per item: in
    one transaction those updates made a chain of row versions that every next insert walked."""
    import time

    store = shared_postgres_stores.get(_key(), create=True)
    took = []
    for n in (500, 2000):
        t = time.perf_counter()
        with store.write() as conn:
            for i in range(n):
                decisions.insert_decision(conn, f"imported {i}")
        took.append((time.perf_counter() - t) / n)
    assert took[1] < took[0] * 2.5, took  # quadratic growth would make each insert 4 times slower


def test_a_word_search_uses_the_workspace_gin_index(shared_postgres_stores):
    """Under row-level security `document @@ q` could only filter the workspace's rows one by one (the operator
    is not leakproof); through the search index's view it is a condition of the GIN index on (ws, document)."""
    store = _filled(shared_postgres_stores)
    with store.write() as conn:
        conn.exec_driver_sql(
            "INSERT INTO search_index (rowid, item_type, item_id, document) SELECT 10000000 + g, 'filler', g, "
            "to_tsvector('english', 'filler number ' || g) FROM generate_series(1, 20000) g"
        )
    with store.engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE homeport_shared_base.search_index")
        conn.commit()
    with store.read() as conn:
        conn.exec_driver_sql("SET LOCAL enable_seqscan = off")  # a small table; the index must be usable
        plan = "\n".join(
            r[0]
            for r in conn.exec_driver_sql(
                "EXPLAIN SELECT rowid FROM search_index WHERE document @@ to_tsquery('english', 'tenants')"
            )
        )
    assert "ix_search_index_document" in plan and "(ws = " in plan, plan


def test_a_database_keeps_its_layout_whatever_the_url_asks(fresh_database):
    shared = PostgresStores(fresh_database + "?layout=shared")
    decisions.log_decision(shared.get(_key(), create=True), "in shared tables")
    shared.close()
    found = PostgresStores(fresh_database)  # no layout named: the database's own
    try:
        assert isinstance(found.get(_key(), create=True), SharedStore)
    finally:
        found.close()
    schema = PostgresStores(fresh_database + "?layout=schema")
    try:
        with pytest.raises(ConfigError, match="layout=shared"):
            schema.get(_key(), create=True)
    finally:
        schema.close()
    with pytest.raises(ConfigError, match="sideways"):
        PostgresStores(fresh_database + "?layout=sideways")


def test_migrate_runs_once_for_the_database_and_adds_what_the_schema_lacks(fresh_database):
    stores = PostgresStores(fresh_database + "?layout=shared")
    try:
        keys = [_key() for _ in range(3)]
        for key in keys:
            decisions.log_decision(stores.get(key, create=True), "kept")
        with psycopg.connect(fresh_database, autocommit=True) as conn:
            conn.execute(f"DROP TABLE {SHARED_SCHEMA}.copy_checkpoint")
            conn.execute(f"ALTER TABLE {SHARED_SCHEMA}.decisions DROP COLUMN implementation_details")
            conn.execute(f"UPDATE {SHARED_SCHEMA}.layout SET revision = '0008'")
        assert stores.migrate_all() == dict.fromkeys(sorted(keys), "0008")
        store = stores.get(keys[0], create=False)
        assert decisions.log_decision(store, "after", implementation_details="back")["implementation_details"] == "back"
        with psycopg.connect(fresh_database, autocommit=True) as conn:
            forced = conn.execute(
                f"SELECT relforcerowsecurity FROM pg_class WHERE oid = '{SHARED_SCHEMA}.copy_checkpoint'::regclass"
            ).fetchone()
            assert forced == (True,)
        assert set(stores.revisions().values()) == {stores.revisions()[keys[0]]} != {"0008"}
    finally:
        stores.close()


def test_a_database_of_schemas_moves_into_the_shared_layout_and_a_rerun_resumes(fresh_database):
    schemas = PostgresStores(fresh_database)
    keys = [_key() for _ in range(3)]
    for n, key in enumerate(keys):
        store = schemas.get(key, create=True)
        for i in range(n + 2):
            decisions.log_decision(store, f"decision {i} of {key}", tags=["moved"])
        progress.log_progress(store, "TODO", f"task of {key}", parent_id=None)
    schemas.close()
    refused = PostgresStores(fresh_database + "?layout=shared")
    with pytest.raises(ConfigError, match="homeport migrate"):
        refused.get(_key(), create=True)
    refused.close()

    # The first run stops after one workspace (as a killed process would).
    moving = PostgresStores(fresh_database + "?layout=shared")
    moved: list[str] = []

    def stop_after_one(key: str, result: dict) -> None:
        moved.append(key)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        move_into_shared(moving, progress=stop_after_one)
    moving.close()
    serving = PostgresStores(fresh_database)  # a server meanwhile: refused, not half a move
    with pytest.raises(ConfigError, match="unfinished"):
        serving.get(keys[0], create=False)
    serving.close()

    before = migrate_database(fresh_database + "?layout=shared")  # `homeport migrate` resumes the move
    assert set(before) == set(keys) - set(moved)
    again = PostgresStores(fresh_database)
    try:
        for n, key in enumerate(keys):
            store = again.get(key, create=False)
            assert isinstance(store, SharedStore)
            assert [d["id"] for d in decisions.get_decisions(store, limit=50)] == list(range(n + 2, 0, -1))
            assert {h["id"] for h in search.search(store, "decision")} == set(range(1, n + 3))
        with psycopg.connect(fresh_database, autocommit=True) as conn:
            rows = conn.execute(f"SELECT key, items, checksum FROM {SHARED_SCHEMA}.moved ORDER BY key").fetchall()
            assert [r[0] for r in rows] == sorted(keys)
            least = {key: n + 3 for n, key in enumerate(keys)}  # its decisions and its progress entry at least
            assert all(items >= least[key] and len(checksum) == 64 for key, items, checksum in rows)
            assert conn.execute("SELECT count(*) FROM homeport.workspaces").fetchone() == (0,)
    finally:
        again.close()


@pytest.fixture(scope="module")
def shared_pgvector(pgvector_postgres_url: str) -> Iterator[PostgresStores]:
    """The shared layout in a database of its own on the PostgreSQL with pgvector."""
    name = f"homeport_shared_vec_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pgvector_postgres_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    stores = PostgresStores(f"{pgvector_postgres_url.rsplit('/', 1)[0]}/{name}?layout=shared")
    yield stores
    stores.close()
    with psycopg.connect(pgvector_postgres_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_search_by_meaning_on_pgvector_scans_only_the_workspace_and_equals_the_blob_path(
    shared_pgvector, shared_postgres_stores
):
    np = pytest.importorskip("numpy")
    from test_pgvector import fill, ranked, unit  # the pgvector path's own parity helpers

    from homeport.store.vectors import vector_search_path

    key = _key()
    vec, blob = shared_pgvector.get(key, create=True), shared_postgres_stores.get(key, create=True)
    other = shared_pgvector.get(_key(), create=True)
    for store in (vec, blob, other):
        fill(store, 60)
    assert vector_search_path(vec).startswith("pgvector ") and vector_search_path(blob) == "float32 blobs"
    for seed in range(5):
        query = unit(np.random.default_rng(seed), 1)[0]
        assert ranked(vec, query, limit=20) == ranked(blob, query, limit=20)
    with vec.read() as conn:
        plan = "\n".join(
            r[0]
            for r in conn.exec_driver_sql(
                "EXPLAIN SELECT id FROM item_vectors WHERE model = 'm' "
                "ORDER BY embedding OPERATOR(public.<#>) embedding LIMIT 5"
            )
        )
    assert "(ws = " in plan and "Seq Scan" not in plan, plan
