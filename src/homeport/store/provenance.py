"""Who wrote each item version: principal, client (name and version from the MCP handshake), tool.

The call pipeline names the writer of a call once (`writing_as`, around the executor); every write
of a context or a link inside it adds one row to `item_writers` (`note`, in the same transaction as
the write). Decisions, progress, system patterns and custom data keep every version with its writer
in `item_versions` instead (`homeport.store.versions`, which reads `current_writer`). A write made
without a writer (a test or a script calling the store directly) names nobody, and its version shows
`written_by: null`.

The writer travels in a context variable rather than as an argument of every store function: it is
per call (set and reset by the pipeline on the call's own thread, copied into worker threads by
AnyIO), never process-wide, and the store functions keep their signatures for other callers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Connection, insert, select

from homeport.store import branches
from homeport.store._common import now
from homeport.store.database import Prepared
from homeport.store.schema import item_versions, item_writers

__all__ = ["Writer", "current_writer", "note", "note_items", "writers_of_versions", "writes_of_items", "writing_as"]


@dataclass(frozen=True)
class Writer:
    principal: str
    client: str | None = None
    client_version: str | None = None
    tool: str | None = None

    def describe(self) -> dict[str, Any]:
        return asdict(self)


_WRITER: ContextVar[Writer | None] = ContextVar("homeport_writer", default=None)
_INSERT = Prepared(insert(item_writers))


@contextlib.contextmanager
def writing_as(writer: Writer | None) -> Iterator[None]:
    """Every item written inside the block is recorded as written by `writer` (None: by nobody named, as a
    copy writes, which carries the source's writer rows instead)."""
    token = _WRITER.set(writer)
    try:
        yield
    finally:
        _WRITER.reset(token)


def current_writer() -> Writer | None:
    return _WRITER.get()


def note(conn: Connection, item_type: str, item_id: int, *, version: int | None = None) -> None:
    """Record the current writer of this version of an item, inside the write's own transaction."""
    writer = _WRITER.get()
    if writer is None:
        return
    _INSERT.insert(  # `insert`, not `run`: on PostgreSQL a NULL id is left out for the sequence
        conn,
        {
            "id": None,  # the compiled INSERT names every column; NULL lets SQLite number the row
            "item_type": item_type,
            "item_id": item_id,
            "version": version,
            "principal": writer.principal,
            "client": writer.client,
            "client_version": writer.client_version,
            "tool": writer.tool,
            "written_at": now(),
            **branches.place_columns(),
        },
    )


def note_items(conn: Connection, item_type: str, item_ids: Sequence[int]) -> None:
    """`note` for many new items at once (one executemany): a bulk copy's path."""
    writer = _WRITER.get()
    if writer is None or not item_ids:
        return
    stamp = now()
    who = {
        "principal": writer.principal,
        "client": writer.client,
        "client_version": writer.client_version,
        **branches.place_columns(),
    }
    rows = [
        {"item_type": item_type, "item_id": i, "version": None, **who, "tool": writer.tool, "written_at": stamp}
        for i in item_ids
    ]
    conn.execute(insert(item_writers), rows)


def writers_of_versions(conn: Connection, item_type: str, item_id: int, versions: Sequence[int]) -> dict[int, Writer]:
    """The recorded writer of each listed version of one item (versions nobody recorded are absent)."""
    if not versions:
        return {}
    c = item_writers.c
    stmt = (
        select(c.version, c.principal, c.client, c.client_version, c.tool)
        .where(c.item_type == item_type, c.item_id == item_id, c.version.in_(list(versions)))
        .order_by(c.id)
    )
    rows = conn.execute(stmt).all()
    return {r.version: Writer(r.principal, r.client, r.client_version, r.tool) for r in rows}


def writes_of_items(conn: Connection, item_type: str, item_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
    """Every recorded write of each listed item, oldest first: who (as `Writer.describe`) and when.

    Decisions, progress, system patterns and custom data name their writer in their versions
    (`item_versions`, since revision 0008) and add no `item_writers` row; their earlier writes stay
    in `item_writers`. A write nobody was named for, or a deletion, is not listed; an item written
    before writers were recorded has fewer rows, or none.
    """
    if not item_ids:
        return {}
    c = item_writers.c
    stmt = (
        select(c.item_id, c.principal, c.client, c.client_version, c.tool, c.written_at)
        .where(c.item_type == item_type, c.item_id.in_(list(item_ids)))
        .order_by(c.id)
    )
    rows = list(conn.execute(stmt).all())
    v = item_versions.c
    rows += conn.execute(
        select(v.item_id, v.principal, v.client, v.client_version, v.tool, v.written_at)
        .where(
            v.item_type == item_type,
            v.item_id.in_(list(item_ids)),
            v.principal.is_not(None),
            v.deleted.is_(False),
        )
        .order_by(v.version)
    ).all()
    out: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        writer = Writer(r.principal, r.client, r.client_version, r.tool)
        out.setdefault(r.item_id, []).append({**writer.describe(), "written_at": r.written_at})
    return out
