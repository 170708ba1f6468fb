"""The checkpoint of an unfinished `homeport copy` into a workspace, and the refusal to serve it meanwhile.

The checkpoint lives in the target workspace itself (table `copy_checkpoint`, one row), so it survives the
machine that ran the copy and is committed in the same transaction as each batch it counts. It names what
is being copied: the source (`sqlite:PATH`, or the PostgreSQL URL without password and `--key KEY`) and
the SHA-256 of the source's memory when the copy began. `homeport.store.copying` writes it; opening a
store for anything but the copy refuses while it exists (`refuse_partial_copy`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from homeport.errors import CopyUnfinishedError

if TYPE_CHECKING:
    from sqlalchemy import Connection

# The table is imported where it is used: opening a store (this module's other user) loads no schema.

__all__ = [
    "CHECKPOINT_QUERY",
    "Checkpoint",
    "clear_checkpoint",
    "read_checkpoint",
    "refuse_partial_copy",
    "save_checkpoint",
]

# Read on every first open of a store (on the driver connection for SQLite): the columns of `Checkpoint`.
CHECKPOINT_QUERY = "SELECT source, source_checksum, done, total FROM copy_checkpoint WHERE id = 1"


@dataclass(frozen=True)
class Checkpoint:
    """An unfinished copy: of `source` at `source_checksum`; `done` of `total` items of the copy plan committed."""

    source: str
    source_checksum: str
    done: int
    total: int


def read_checkpoint(conn: Connection) -> Checkpoint | None:
    from sqlalchemy import select

    from homeport.store.schema import copy_checkpoint

    row = conn.execute(
        select(
            copy_checkpoint.c.source, copy_checkpoint.c.source_checksum, copy_checkpoint.c.done, copy_checkpoint.c.total
        )
    ).first()
    return Checkpoint(*row) if row is not None else None


def save_checkpoint(conn: Connection, checkpoint: Checkpoint) -> None:
    """Record `checkpoint` inside the open transaction (the one that wrote the items it counts)."""
    from sqlalchemy import insert

    from homeport.store._common import now
    from homeport.store.schema import copy_checkpoint

    stamp = now()
    updated = conn.execute(
        copy_checkpoint.update()
        .where(copy_checkpoint.c.id == 1)
        .values(
            source=checkpoint.source,
            source_checksum=checkpoint.source_checksum,
            done=checkpoint.done,
            total=checkpoint.total,
            updated_at=stamp,
        )
    )
    if updated.rowcount == 0:
        conn.execute(
            insert(copy_checkpoint).values(
                id=1,
                source=checkpoint.source,
                source_checksum=checkpoint.source_checksum,
                done=checkpoint.done,
                total=checkpoint.total,
                started_at=stamp,
                updated_at=stamp,
            )
        )


def clear_checkpoint(conn: Connection) -> None:
    """The copy is complete and verified: the workspace may be served."""
    from sqlalchemy import delete

    from homeport.store.schema import copy_checkpoint

    conn.execute(delete(copy_checkpoint))


def refuse_partial_copy(checkpoint: Checkpoint | None, where: str) -> None:
    """Refuse to serve a workspace that a copy is still filling.

    Raises:
        CopyUnfinishedError: `checkpoint` is an unfinished copy (names its source and how to finish it).
    """
    if checkpoint is None:
        return
    raise CopyUnfinishedError(
        f"the workspace {where} holds an unfinished copy of {checkpoint.source} ({checkpoint.done} of "
        f"{checkpoint.total} items copied), so it is not served: run `homeport copy --from {checkpoint.source} "
        "--to ...` again (the same command) to finish it; it resumes where it stopped"
    )
