"""Fixtures of the store tests: every store test that takes `copy_store` runs on SQLite and on PostgreSQL, in
both of PostgreSQL's layouts (a schema per workspace; shared tables keyed by workspace)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from homeport.store import Store, store_path_for

BACKENDS = [
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("postgres-shared", marks=pytest.mark.postgres),
]


@pytest.fixture(scope="session")
def migrated_db(tmp_path_factory) -> Path:
    """One store at the head schema; tests that need many stores copy it."""
    root = tmp_path_factory.mktemp("template")
    Store.open(root, create=True).close()
    return store_path_for(root)


@pytest.fixture(scope="session")
def postgres_stores(store_postgres_url: str) -> Iterator:
    """Every PostgreSQL store of the run: one database, a schema per workspace."""
    from homeport.store.postgres import PostgresStores

    stores = PostgresStores(store_postgres_url)
    yield stores
    stores.close()


@pytest.fixture(scope="session")
def shared_postgres_stores(store_postgres_url: str) -> Iterator:
    """Every PostgreSQL store of the run in the shared layout: a database of its own beside `store_postgres_url`'s."""
    import psycopg

    from homeport.store.postgres import PostgresStores

    name = store_postgres_url.rsplit("/", 1)[1] + "_shared"
    with psycopg.connect(host="127.0.0.1", port=5432, user="postgres", dbname="test", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    stores = PostgresStores(f"postgresql://postgres@127.0.0.1:5432/{name}?layout=shared")
    yield stores
    stores.close()
    with psycopg.connect(host="127.0.0.1", port=5432, user="postgres", dbname="test", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session", params=BACKENDS)
def store_backend(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def copy_store(store_backend: str, request, migrated_db: Path) -> Callable[[Path], Store]:
    """`copy_store(root)`: an empty store at the head schema for `root`, on the backend of the test.

    SQLite: a copy of the template file. PostgreSQL: a new schema for the workspace key `str(root)`,
    built by the migrations; in the shared layout, a new workspace number in the shared tables.
    """
    if store_backend in ("postgres", "postgres-shared"):
        stores = request.getfixturevalue("postgres_stores" if store_backend == "postgres" else "shared_postgres_stores")

        def open_postgres(root: Path) -> Store:
            store = stores.get(str(root), create=True)
            assert store is not None
            return store

        return open_postgres

    return _sqlite_copier(migrated_db)


def _sqlite_copier(migrated_db: Path) -> Callable[[Path], Store]:
    def copy(root: Path) -> Store:
        store_path_for(root).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(migrated_db, store_path_for(root))
        store = Store.open(root, create=False)
        assert store is not None
        return store

    return copy


@pytest.fixture(scope="session")
def pgvector_stores(pgvector_postgres_url: str) -> Iterator:
    """The PostgreSQL stores of the run on the server with pgvector (see `pgvector_postgres_url`)."""
    from homeport.store.postgres import PostgresStores

    stores = PostgresStores(pgvector_postgres_url)
    yield stores
    stores.close()


@pytest.fixture(scope="session", params=[*BACKENDS, pytest.param("pgvector", marks=pytest.mark.postgres)])
def vector_store(request, migrated_db: Path) -> Callable[[Path], Store]:
    """`vector_store(root)`: as `copy_store`, on the three paths of search by meaning: SQLite, PostgreSQL
    without the vector extension (float32 blobs, 127.0.0.1:5432) and PostgreSQL with pgvector."""
    if request.param == "sqlite":
        return _sqlite_copier(migrated_db)
    fixtures = {
        "postgres": "postgres_stores",
        "postgres-shared": "shared_postgres_stores",
        "pgvector": "pgvector_stores",
    }
    stores = request.getfixturevalue(fixtures[request.param])

    def open_postgres(root: Path) -> Store:
        store = stores.get(str(root), create=True)
        assert store is not None
        return store

    return open_postgres


# A property that builds a store per example builds a PostgreSQL schema per example on the schema-per-workspace
# layout: every migration from 0001 (a second or more of the server's time under load). Its SQL there is the
# one `postgres-shared` runs at full depth, so that layout draws a quarter of the examples (at least 8), and all
# of them under HOMEPORT_HYPOTHESIS=deep.
SCHEMA_PER_EXAMPLE = {"postgres"}


@pytest.fixture
def examples(store_backend: str) -> Callable[[int], int]:
    """`examples(n)`: how many examples a property with a store per example draws on the test's backend."""

    def count(n: int) -> int:
        if store_backend in SCHEMA_PER_EXAMPLE and os.environ.get("HOMEPORT_HYPOTHESIS", "ci") != "deep":
            return max(n // 4, 8)
        return n

    return count


@pytest.fixture
def sqlite_only(store_backend: str) -> None:
    """For a test of SQLite's own behaviour (files, WAL, FTS5 syntax): skipped on the PostgreSQL run."""
    if store_backend != "sqlite":
        pytest.skip("checks SQLite's own behaviour (file, WAL, FTS5); the PostgreSQL store has its own tests")
