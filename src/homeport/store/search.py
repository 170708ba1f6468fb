"""One full-text index over every item type (FTS5 on SQLite), ranked by bm25.

Item modules call `index_item` / `unindex_item` inside their write transaction, so the index
never disagrees with the items. A query FTS5 cannot parse (unbalanced quotes, a bare operator)
is retried as plain words instead of failing: the agent cannot be expected to know FTS5 syntax.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, text
from sqlalchemy.exc import OperationalError

from homeport.errors import InvalidItemError
from homeport.store.database import Store

__all__ = ["ITEM_TYPES", "index_item", "search", "unindex_item"]

ITEM_TYPES = ("decision", "progress", "custom_data")
_WORD = re.compile(r"\w+", re.UNICODE)


def index_item(conn: Connection, item_type: str, item_id: int, *, title: str, body: str, tags: Sequence[str] = ()) -> None:
    unindex_item(conn, item_type, item_id)
    conn.execute(
        text("INSERT INTO search_index (item_type, item_id, title, body, tags) VALUES (:t, :i, :ti, :b, :g)"),
        {"t": item_type, "i": item_id, "ti": title, "b": body, "g": " ".join(tags)},
    )


def unindex_item(conn: Connection, item_type: str, item_id: int) -> None:
    conn.execute(text("DELETE FROM search_index WHERE item_type = :t AND item_id = :i"), {"t": item_type, "i": item_id})


_OPERATORS = {"AND", "OR", "NOT", "NEAR"}


def plain_words(query: str) -> str:
    """The query's words, quoted and joined with OR, which FTS5 always parses; bm25 ranks the best first."""
    words = [w for w in _WORD.findall(query) if w not in _OPERATORS]
    return " OR ".join(f'"{w}"' for w in words)


def search(store: Store | None, query: str, *, types: Sequence[str] | None = None, limit: int = 20) -> list[dict[str, Any]]:
    """Ranked hits `{type, id, title, snippet, score}`; higher score is better.

    Raises:
        InvalidItemError: an unknown item type in `types`, or an empty query.
    """
    if not query.strip():
        raise InvalidItemError("search query is empty; pass words to look for")
    wanted = list(types or ITEM_TYPES)
    unknown = sorted(set(wanted) - set(ITEM_TYPES))
    if unknown:
        raise InvalidItemError(f"unknown item type(s) {', '.join(unknown)}; use any of {', '.join(ITEM_TYPES)}")
    if store is None:
        return []
    with store.read() as conn:
        try:
            return _run(conn, query, wanted, limit)
        except OperationalError:
            conn.rollback()
        fallback = plain_words(query)
        return _run(conn, fallback, wanted, limit) if fallback else []


def _run(conn: Connection, match: str, types: list[str], limit: int) -> list[dict[str, Any]]:
    placeholders = ", ".join(f":t{i}" for i in range(len(types)))
    params: dict[str, Any] = {f"t{i}": t for i, t in enumerate(types)}
    params.update(q=match, limit=max(1, min(limit, 200)))
    rows = conn.execute(
        text(
            "SELECT item_type, item_id, title, "
            "snippet(search_index, -1, '[', ']', '…', 16) AS snip, bm25(search_index, 0, 0, 4.0, 1.0, 2.0) AS rank "
            f"FROM search_index WHERE search_index MATCH :q AND item_type IN ({placeholders}) "
            "ORDER BY rank LIMIT :limit"
        ),
        params,
    )
    return [
        {"type": r.item_type, "id": int(r.item_id), "title": r.title, "snippet": r.snip or r.title,
         "score": round(-float(r.rank), 4)}
        for r in rows
    ]
