"""Run the Alembic migrations of the memory schema on an engine."""

from __future__ import annotations

import threading

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

from homeport.errors import StoreTooNewError

__all__ = ["alembic_config", "check_known", "downgrade", "head_revision", "upgrade", "upgrade_postgres"]

# Alembic's `context` and `op` are process-wide proxies: two migrations in two threads (two fresh
# workspaces written at once) would run inside each other. One migration at a time per process.
_ALEMBIC_LOCK = threading.Lock()


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", "homeport.store:migrations")
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def check_known(current: str | None, where: str) -> None:
    """Refuse a store at a revision this version's migrations do not contain (a newer Homeport migrated it).

    Raises:
        StoreTooNewError: `current` is not one of the known revisions.
    """
    if current is None:
        return
    script = ScriptDirectory.from_config(alembic_config())
    known = {rev.revision for rev in script.walk_revisions()}
    if current not in known:
        raise StoreTooNewError(
            f"the store {where} is at schema revision {current}, newer than this Homeport knows "
            f"(its newest is {script.get_current_head()}); a newer Homeport migrated it. Upgrade Homeport "
            "(pip install -U homeport) on every machine that uses this store, or point it at another store"
        )


def upgrade(engine: Engine, revision: str = "head", *, where: str = "") -> None:
    """Migrate a SQLite store to `revision`.

    Raises:
        StoreTooNewError: the store is at a revision newer than this version knows.
    """
    config = alembic_config()
    with _ALEMBIC_LOCK, engine.connect().execution_options(homeport_begin="BEGIN IMMEDIATE") as conn:
        check_known(MigrationContext.configure(conn).get_current_revision(), where or str(engine.url))
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
        conn.commit()


def upgrade_postgres(engine: Engine, schema: str, lock_id: int, revision: str = "head") -> str:
    """Create or migrate the workspace schema `schema` of a PostgreSQL store; its revision after.

    One transaction holds an advisory lock on the schema for the whole migration (PostgreSQL's DDL is
    transactional): servers that start at once wait here, then find the schema migrated and do nothing.

    Raises:
        StoreTooNewError: the schema is at a revision newer than this version knows.
    """
    config = alembic_config()
    with _ALEMBIC_LOCK, engine.connect() as conn:
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({int(lock_id)})")
        conn.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        conn.exec_driver_sql(f"SET LOCAL search_path TO {schema}")
        current = _revision(conn)
        check_known(current, f"schema {schema}")
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
        after = _revision(conn)
        conn.commit()
    assert after is not None
    return after


def _revision(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def downgrade(engine: Engine, revision: str) -> None:
    config = alembic_config()
    with _ALEMBIC_LOCK, engine.connect().execution_options(homeport_begin="BEGIN IMMEDIATE") as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, revision)
        conn.commit()
