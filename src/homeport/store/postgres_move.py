"""Moving a database that keeps one schema per workspace into the shared layout, in place, resumable.

`homeport migrate --store 'postgresql://...?layout=shared'` on such a database runs `move_into_shared`:
each workspace is copied by `homeport copy`'s own machinery (homeport.store.copying: batches with a
checkpoint in the target, counts and SHA-256 compared at the end) from its schema into the shared
tables (homeport.store.postgres_shared). A module of its own because it joins the two layouts and the
copy, which each know nothing of the others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from homeport.errors import InvalidItemError
from homeport.store.copying import copy_memory
from homeport.store.postgres import _REGISTRY, PostgresStores, shown_url
from homeport.store.postgres_shared import SHARED_SCHEMA, SharedLayout
from homeport.store.transfer import _collect, memory_checksum

__all__ = ["move_into_shared"]


def move_into_shared(
    stores: PostgresStores, *, progress: Callable[[str, dict[str, Any]], None] | None = None
) -> dict[str, str]:
    """Copy every workspace of a schema-per-workspace database into the shared layout of the same database;
    each workspace's key with its revision before. Resumable: run it again after an interruption.

    Each workspace is migrated to the head revision in its schema, then copied as `homeport copy` copies
    (`homeport.store.copying`: batches with a checkpoint in the target, counts and SHA-256 compared at the
    end), then recorded in `homeport_shared.moved` (key, schema, items, checksum) and removed from
    `homeport.workspaces` in one transaction. A workspace whose copy was verified but not yet recorded
    (the process stopped in between) is recognised by its checksum. The schemas are kept: drop them after
    checking (`homeport_shared.moved` names each). Servers must be stopped meanwhile: a workspace written
    after its copy would lose that write (until the move finishes, servers refuse the database).

    Raises:
        StoreTooNewError: a newer Homeport migrated a workspace's schema (nothing is moved then).
        InvalidItemError: a workspace's shared copy differs from its schema (named in the message).
        StoreError: a copy failed; run the migration again to resume.
    """
    schemas = PostgresStores(stores.url)
    schemas._layout = False  # read the schemas, whatever the URL asks for
    schemas.check_revisions()
    layout = SharedLayout(stores, shown_url(stores.url))
    layout.create()
    with stores.engine.connect() as conn:
        conn.exec_driver_sql(
            f"CREATE TABLE IF NOT EXISTS {SHARED_SCHEMA}.moved (key TEXT PRIMARY KEY, schema_name TEXT NOT NULL, "
            "items INTEGER NOT NULL, checksum TEXT NOT NULL, moved_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        conn.commit()
    try:
        before = schemas.revisions()
        for key in before:
            source = schemas._open(key, create=True)  # migrated to the head in its schema first
            assert source is not None
            target = layout.open(key, create=True)
            assert target is not None
            with target.read() as conn:
                copying = conn.exec_driver_sql("SELECT 1 FROM copy_checkpoint").first() is not None
                holds = any(conn.exec_driver_sql(f"SELECT EXISTS (SELECT FROM {t})").scalar() for t in _ITEM_TABLES)
            if holds and not copying:  # copied and verified by a run that stopped before recording it
                data = _collect(source)
                if memory_checksum(_collect(target)) != memory_checksum(data):
                    raise InvalidItemError(
                        f"workspace {key!r} already holds memory in the shared tables that differs from its schema "
                        f"{source.schema}; drop one of them (homeport_shared rows of ws {target.ws}) and run again"
                    )
                result = {"items": sum(len(v) for v in data.values()), "checksum": memory_checksum(data)}
            else:
                result = copy_memory(source, target)
            with stores.engine.connect() as conn:
                conn.exec_driver_sql(
                    f"INSERT INTO {SHARED_SCHEMA}.moved (key, schema_name, items, checksum) "
                    "VALUES (%(k)s, %(s)s, %(n)s, %(c)s) ON CONFLICT (key) DO NOTHING",
                    {"k": key, "s": source.schema, "n": result["items"], "c": result["checksum"]},
                )
                conn.exec_driver_sql(f"DELETE FROM {_REGISTRY} WHERE key = %(k)s", {"k": key})
                conn.commit()
            if progress is not None:
                progress(key, result)
    finally:
        schemas.close()
    stores._layout = layout
    return before


# The tables whose rows are a workspace's memory (a target holding none of them is empty).
_ITEM_TABLES = ("decisions", "progress", "system_patterns", "custom_data", "contexts", "links")
