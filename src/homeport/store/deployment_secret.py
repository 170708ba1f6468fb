"""The deployment's secret in the PostgreSQL store: every server on that database shares it.

`homeport.secrets (name, secret)` sits beside `homeport.workspaces`. The first server to need the
secret creates the row (random, 32 bytes); the others read it. Whoever can read this table can
forge handles, and can read every workspace's memory too: the database's own access control is
the boundary either way.
"""

from __future__ import annotations

import secrets

from sqlalchemy import Connection
from sqlalchemy.exc import SQLAlchemyError

from homeport.errors import StoreError
from homeport.store.postgres import PostgresStores, shown_url

__all__ = ["postgres_secret"]

_TABLE = "homeport.secrets"
# pg_advisory_xact_lock key for creating the table ("hp-secret").
_LOCK = 0x68702D736563726574 & 0x7FFFFFFFFFFFFFFF


def postgres_secret(stores: PostgresStores, name: str) -> bytes:
    """The secret called `name`, created on first use.

    Raises:
        StoreError: the database cannot be reached or refuses the table.
    """
    try:
        stores.ensure_registry()  # creates the schema `homeport`, under its own lock
        with stores.engine.connect() as conn:
            row = _read(conn, name) if _table_exists(conn) else None
            if row is None:
                # Two servers starting at once: one creates the table and the row, the other waits and reads.
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_LOCK})")
                conn.exec_driver_sql(
                    f"CREATE TABLE IF NOT EXISTS {_TABLE} (name TEXT PRIMARY KEY, secret BYTEA NOT NULL, "
                    "created_at TIMESTAMPTZ NOT NULL DEFAULT now())"
                )
                conn.exec_driver_sql(
                    f"INSERT INTO {_TABLE} (name, secret) VALUES (%(n)s, %(s)s) ON CONFLICT (name) DO NOTHING",
                    {"n": name, "s": secrets.token_bytes(32)},
                )
                row = _read(conn, name)
            conn.commit()
    except SQLAlchemyError as exc:
        cause = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        raise StoreError(
            f"cannot read the deployment key from {shown_url(stores.url)}: {cause[0] if cause else type(exc).__name__}"
        ) from exc
    assert row is not None
    return row


def _table_exists(conn: Connection) -> bool:
    return conn.exec_driver_sql("SELECT to_regclass(%(t)s)", {"t": _TABLE}).scalar() is not None


def _read(conn: Connection, name: str) -> bytes | None:
    value = conn.exec_driver_sql(f"SELECT secret FROM {_TABLE} WHERE name = %(n)s", {"n": name}).scalar()
    return bytes(value) if value is not None else None
