"""Item identities that survive export and import: a ULID per item, beside its short id.

The short id is what agents type and is only unique in one store; the uid (26 characters, Crockford
base 32, sortable by creation time) names the same item in every store it is copied to.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, bindparam, delete, insert, select
from ulid import ULID

from homeport.store.database import Prepared
from homeport.store.schema import item_uids

__all__ = ["assign_uid", "forget_uid", "new_uid", "uids_of"]


def new_uid(created_at: str | None = None) -> str:
    """A new ULID; its time part is `created_at` (an ISO 8601 stamp) when given, else now."""
    if created_at:
        return str(ULID.from_datetime(datetime.fromisoformat(created_at.replace("Z", "+00:00"))))
    return str(ULID())


def assign_uid(conn: Connection, item_type: str, item_id: int, uid: str | None = None) -> str:
    """Give a new item its uid (a fresh one, or `uid` as an import carries it); returns it.

    An imported uid replaces whatever the item had, and is taken from any other item holding it.
    """
    if uid is None:
        uid = new_uid()
        _INSERT.run(conn, {"item_type": item_type, "item_id": item_id, "uid": uid})
        return uid
    conn.execute(delete(item_uids).where(item_uids.c.uid == uid))
    conn.execute(delete(item_uids).where(item_uids.c.item_type == item_type, item_uids.c.item_id == item_id))
    conn.execute(insert(item_uids).values(item_type=item_type, item_id=item_id, uid=uid))
    return uid


def forget_uid(conn: Connection, item_type: str, item_id: int) -> None:
    _DELETE.run(conn, {"t": item_type, "i": item_id})


def uids_of(conn: Connection, item_type: str, ids: Sequence[int]) -> dict[int, str]:
    if not ids:
        return {}
    rows = conn.execute(
        select(item_uids.c.item_id, item_uids.c.uid).where(
            item_uids.c.item_type == item_type, item_uids.c.item_id.in_(ids)
        )
    )
    return {item_id: uid for item_id, uid in rows}


_INSERT = Prepared(insert(item_uids))
_DELETE = Prepared(
    delete(item_uids).where(item_uids.c.item_type == bindparam("t"), item_uids.c.item_id == bindparam("i"))
)
