"""An item's lifecycle beyond its fields: archived, superseded, valid until a time, pinned (`item_states`).

An item without a row in `item_states` is current, so the table holds only the few items that are
not, and a default read asks it one small question: which of these items are hidden?

- **archived**: a tidy changeset archived it (`homeport.store.tidy`), or merged it into another;
- **superseded**: another item replaces it (`superseded_type`, `superseded_id`);
- **expired**: its `valid_until` has passed.

Hidden items leave search, get_context and the default lists (which say how many they hid as
`hidden_expired`), and stay readable by id and in their history; nothing here deletes anything.
A **pinned** item is never touched by a tidy changeset unless it is forced.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, or_, select

from homeport.errors import InvalidItemError
from homeport.store._common import now, row_dict, utc_stamp
from homeport.store.database import Prepared, Store
from homeport.store.items import CONTEXT_TYPES, check_type, require_item
from homeport.store.schema import custom_data, decisions, item_states, progress, system_patterns

__all__ = [
    "TABLES",
    "TIDY_TYPES",
    "change_state",
    "count_items",
    "drop_hidden",
    "hidden_keys",
    "hidden_of",
    "public_state",
    "set_item_lifecycle",
    "state_for",
    "state_of",
    "states_of",
    "visible",
    "write_state",
]

# The item types a tidy changeset and the lifecycle cover (the two contexts are single documents).
TIDY_TYPES = ("decision", "progress", "system_pattern", "custom_data")
TABLES = {"decision": decisions, "progress": progress, "system_pattern": system_patterns, "custom_data": custom_data}
_c = item_states.c


def hidden_keys(conn: Connection, item_type: str | None = None, *, at: str | None = None) -> set[tuple[str, int]]:
    """(type, id) of every hidden item (of one type): archived, superseded, or expired at `at` (now)."""
    params = {"at": at or now()}
    rows = _HIDDEN.run(conn, params) if item_type is None else _HIDDEN_OF_TYPE.run(conn, {**params, "t": item_type})
    return {(t, int(i)) for t, i in rows}


# Prepared once: every listing and search asks it (a Core select compiled per call cost 4x the listing).
_HIDDEN_WHERE = or_(_c.archived.is_(True), _c.superseded_type.is_not(None), _c.valid_until <= bindparam("at"))
_HIDDEN = Prepared(select(_c.item_type, _c.item_id).where(_HIDDEN_WHERE))
_HIDDEN_OF_TYPE = Prepared(select(_c.item_type, _c.item_id).where(_HIDDEN_WHERE, _c.item_type == bindparam("t")))


def hidden_of(store: Store | None, item_type: str | None = None) -> set[tuple[str, int]]:
    """`hidden_keys` in a read of its own (none when the workspace has no memory yet)."""
    if store is None:
        return set()
    with store.read() as conn:
        return hidden_keys(conn, item_type)


def state_of(conn: Connection, item_type: str, item_id: int) -> dict[str, Any] | None:
    row = conn.execute(select(item_states).where(_c.item_type == item_type, _c.item_id == item_id)).first()
    return row_dict(row) if row is not None else None


def states_of(conn: Connection, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], dict[str, Any]]:
    wanted = set(keys)
    if not wanted:
        return {}
    types = sorted({t for t, _ in wanted})
    ids = sorted({i for _, i in wanted})
    rows = conn.execute(select(item_states).where(_c.item_type.in_(types), _c.item_id.in_(ids)))
    return {(r.item_type, r.item_id): row_dict(r) for r in rows if (r.item_type, r.item_id) in wanted}


def write_state(conn: Connection, item_type: str, item_id: int, state: dict[str, Any] | None) -> None:
    """Replace an item's state row with `state` exactly (None: no row, the item is current)."""
    conn.execute(delete(item_states).where(_c.item_type == item_type, _c.item_id == item_id))
    if state is not None:
        conn.execute(insert(item_states).values(**{**state, "item_type": item_type, "item_id": item_id}))


def change_state(conn: Connection, item_type: str, item_id: int, **changes: Any) -> dict[str, Any] | None:
    """Set some state fields of an item, keeping the others; a state that says nothing is removed."""
    current = state_of(conn, item_type, item_id) or {
        "archived": False,
        "superseded_type": None,
        "superseded_id": None,
        "valid_until": None,
        "pinned": False,
        "changeset_id": None,
    }
    state = {**current, **changes, "updated_at": now()}
    state.pop("item_type", None)
    state.pop("item_id", None)
    says_something = (
        state["archived"] or state["superseded_type"] is not None or state["valid_until"] is not None or state["pinned"]
    )
    write_state(conn, item_type, item_id, state if says_something else None)
    return state if says_something else None


def count_items(conn: Connection) -> int:
    """How many items a tidy changeset could touch (every decision, progress entry, pattern, custom data)."""
    return sum(int(conn.execute(select(func.count()).select_from(t)).scalar_one()) for t in TABLES.values())


def set_item_lifecycle(
    store: Store,
    item_type: str,
    item_id: int,
    *,
    valid_until: str | None = None,
    pinned: bool | None = None,
) -> dict[str, Any]:
    """Set when an item stops being current (`valid_until`; "" clears it) and whether it is pinned.

    Raises:
        InvalidItemError: a context, an unknown type, nothing to set, or a time that is not ISO 8601.
        ItemNotFoundError: the item does not exist.
    """
    check_type(item_type)
    if item_type in CONTEXT_TYPES:
        raise InvalidItemError(f"the {item_type} has no lifecycle; use one of {', '.join(TIDY_TYPES)}")
    if valid_until is None and pinned is None:
        raise InvalidItemError('nothing to set; pass valid_until (an ISO 8601 time, "" clears it) or pinned')
    changes: dict[str, Any] = {}
    if valid_until is not None:
        changes["valid_until"] = utc_stamp(valid_until, "valid_until") if valid_until.strip() else None
    if pinned is not None:
        changes["pinned"] = pinned
    with store.write() as conn:
        require_item(conn, item_type, item_id)
        state = change_state(conn, item_type, item_id, **changes)
    return {"item_type": item_type, "item_id": item_id, "state": _public(state)}


def _public(state: dict[str, Any] | None) -> dict[str, Any]:
    if state is None:
        return {"archived": False, "superseded_by": None, "valid_until": None, "pinned": False, "hidden": False}
    superseded = {"type": state["superseded_type"], "id": state["superseded_id"]} if state["superseded_type"] else None
    expired = state["valid_until"] is not None and state["valid_until"] <= now()
    return {
        "archived": bool(state["archived"]),
        "superseded_by": superseded,
        "valid_until": state["valid_until"],
        "pinned": bool(state["pinned"]),
        "hidden": bool(state["archived"]) or superseded is not None or expired,
    }


def public_state(state: dict[str, Any] | None) -> dict[str, Any]:
    """A state row as tools show it: archived, superseded_by, valid_until, pinned, hidden."""
    return _public(state)


def drop_hidden(
    rows: Sequence[dict[str, Any]], item_type: str, hidden: set[tuple[str, int]], *, key: str = "id"
) -> tuple[list[dict[str, Any]], int]:
    """`rows` without the hidden items of `item_type`, and how many were dropped."""
    kept = [r for r in rows if (item_type, r[key]) not in hidden]
    return kept, len(rows) - len(kept)


def visible(
    rows: Iterable[dict[str, Any]], hidden: set[tuple[str, int]], limit: int, *, item_type: str | None = None
) -> tuple[list[dict[str, Any]], int]:
    """The first `limit` rows that are not hidden, and how many hidden ones were passed over to get them.

    A row's key is (`item_type`, its `id`), or its own `type` and `id` (search hits) without `item_type`.
    """
    kept: list[dict[str, Any]] = []
    passed = 0
    for row in rows:
        if len(kept) >= limit:
            break
        if (item_type or row["type"], row["id"]) in hidden:
            passed += 1
        else:
            kept.append(row)
    return kept, passed


def state_for(store: Store | None, item_type: str, item_id: int) -> dict[str, Any] | None:
    """An item's lifecycle as tools show it (`public_state`), or None when it is current and unpinned."""
    if store is None or item_type not in TIDY_TYPES:
        return None
    with store.read() as conn:
        state = state_of(conn, item_type, item_id)
    return None if state is None else {**_public(state), "changeset_id": state["changeset_id"]}


def visible_tree(nodes: list[dict[str, Any]], hidden: set[tuple[str, int]]) -> tuple[list[dict[str, Any]], int]:
    """A progress forest without its hidden entries (their children take their place), and how many went."""
    kept: list[dict[str, Any]] = []
    gone = 0
    for node in nodes:
        children, below = visible_tree(node["children"], hidden)
        gone += below
        if ("progress", node["id"]) in hidden:
            gone += 1
            kept.extend(children)
        else:
            kept.append({**node, "children": children})
    return kept, gone
