"""One full-text index over every item type (FTS5 on SQLite), ranked by bm25.

Item modules call `index_item` / `unindex_item` inside their write transaction, so the index
never disagrees with the items. A query FTS5 cannot parse (unbalanced quotes, a bare operator,
an unknown column) is retried as plain words instead of failing: the agent cannot be expected to
know FTS5 syntax.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection

from homeport.errors import InvalidItemError
from homeport.store._common import ITEM_TYPES, normalize_tags, utc_stamp
from homeport.store.database import Store, driver
from homeport.store.fields import MAX_QUERY_CHARS, MAX_SNIPPET_CHARS, check_text

__all__ = ["RANK_WINDOW", "SEARCHABLE_TYPES", "index_item", "index_rowid", "plain_words", "search", "unindex_item"]

SEARCHABLE_TYPES = ITEM_TYPES  # every item type is searchable
_WORD = re.compile(r"\w+", re.UNICODE)
_OPERATORS = {"AND", "OR", "NOT", "NEAR"}


# Each item has a fixed rowid in the index: its id, then its type in the low three bits. Keeping the
# index current is a rowid lookup, not a scan of the UNINDEXED columns; rowid order is newest first
# across types; and a type filter is a bit test, not a row lookup.
_TYPE_CODES = {t: n for n, t in enumerate(SEARCHABLE_TYPES, start=1)}
# How many of the newest matches bm25 ranks (see _run).
RANK_WINDOW = 2000
_BM25 = "bm25(search_index, 0, 0, 0, 0, 4.0, 1.0, 2.0)"


def index_rowid(item_type: str, item_id: int) -> int:
    return (item_id << 3) | _TYPE_CODES[item_type]


def index_item(
    conn: Connection,
    item_type: str,
    item_id: int,
    *,
    title: str,
    body: str,
    updated_at: str,
    tags: Sequence[str] = (),
    category: str | None = None,
) -> None:
    rowid = index_rowid(item_type, item_id)
    raw = driver(conn)
    raw.execute(_UNINDEX, {"r": rowid})
    raw.execute(_UNEMBED, {"t": item_type, "i": item_id})
    raw.execute(
        _INDEX,
        {
            "r": rowid,
            "t": item_type,
            "i": item_id,
            "c": category,
            "u": updated_at,
            "ti": title,
            "b": body,
            "g": " ".join(tags),
        },
    )


def unindex_item(conn: Connection, item_type: str, item_id: int) -> None:
    raw = driver(conn)
    raw.execute(_UNINDEX, {"r": index_rowid(item_type, item_id)})
    raw.execute(_UNEMBED, {"t": item_type, "i": item_id})


# Run on the driver connection (see database.Prepared): the index is written on every item write.
_UNINDEX = "DELETE FROM search_index WHERE rowid = :r"
# An item's vectors are of its text as it was: gone with it, in the same transaction (so search by
# meaning never finds an old version); homeport.store.vectors lists the item as pending until embedded.
_UNEMBED = "DELETE FROM item_vectors WHERE item_type = :t AND item_id = :i"
_INDEX = (
    "INSERT INTO search_index (rowid, item_type, item_id, category, updated_at, title, body, tags) "
    "VALUES (:r, :t, :i, :c, :u, :ti, :b, :g)"
)


def plain_words(query: str) -> str:
    """The query's words, quoted and joined with OR, which FTS5 always parses; bm25 ranks the best first."""
    words = [w for w in _WORD.findall(query) if w not in _OPERATORS]
    return " OR ".join(f'"{w}"' for w in words)


def search(
    store: Store | None,
    query: str,
    *,
    types: Sequence[str] | None = None,
    tags_any: Sequence[str] | None = None,
    category: str | None = None,
    since: str | None = None,
    limit: int = 20,
) -> list[dict[str, Any]]:
    """Ranked hits `{type, id, title, snippet, score, updated_at}`; higher score is better.

    `category` narrows to custom data of that category (ProjectGlossary: the glossary);
    `since` (ISO 8601) to items changed at or after it.

    Raises:
        InvalidItemError: an unknown item type in `types`, or an empty query.
    """
    if not query.strip():
        raise InvalidItemError("search query is empty; pass words to look for")
    check_text(query, "search query", MAX_QUERY_CHARS)
    wanted = list(types or SEARCHABLE_TYPES)
    unknown = sorted(set(wanted) - set(SEARCHABLE_TYPES))
    if unknown:
        raise InvalidItemError(f"unknown item type(s) {', '.join(unknown)}; use any of {', '.join(SEARCHABLE_TYPES)}")
    cutoff = utc_stamp(since, "since") if since else None
    if store is None:
        return []
    filters = _Filters(wanted, normalize_tags(tags_any), category.strip() if category else None, cutoff, limit)
    with store.read() as conn:
        raw = driver(conn)
        try:
            return _run(raw, query, filters)
        except sqlite3.OperationalError:  # FTS5 syntax; a failed SELECT leaves the read transaction as it was
            pass
        fallback = plain_words(query)
        return _run(raw, fallback, filters) if fallback else []


class _Filters:
    def __init__(self, types: list[str], tags: list[str], category: str | None, since: str | None, limit: int):
        self.types, self.tags, self.category, self.since = types, tags, category, since
        self.limit = max(1, min(limit, 200))


def _run(raw: sqlite3.Connection, match: str, f: _Filters) -> list[dict[str, Any]]:
    """Rank the RANK_WINDOW newest matches with bm25; snippets for the best `limit`.

    A word in most items (low IDF) would otherwise cost a bm25 score and a snippet for every one of
    them (130 ms at 100,000 items); bounded, the worst query stays within a few milliseconds and any
    query with fewer matches than the window is ranked exactly.
    """
    params: dict[str, Any] = {"q": match, "limit": f.limit, "window": RANK_WINDOW - 1}
    where = ["search_index MATCH :q"]
    if len(f.types) < len(SEARCHABLE_TYPES):  # the type is in the rowid's low bits: no row lookup
        where.append(_in_list("(rowid & 7)", "t", [_TYPE_CODES[t] for t in f.types], params))
    if f.tags:
        keys = _in_list("g.tag_key", "g", [t.casefold() for t in f.tags], params)
        where.append(
            "EXISTS (SELECT 1 FROM item_tags g WHERE g.item_type = search_index.item_type "
            f"AND g.item_id = search_index.item_id AND {keys})"
        )
    if f.category:
        where.append("category = :category")
        params["category"] = f.category
    if f.since:
        where.append("updated_at >= :since")
        params["since"] = f.since
    condition = " AND ".join(where)
    floor = raw.execute(
        f"SELECT rowid FROM search_index WHERE {condition} ORDER BY rowid DESC LIMIT 1 OFFSET :window", params
    ).fetchone()
    params["floor"] = floor[0] if floor else 0
    # Snippets in the ranking query itself: SQLite computes them for the rows the LIMIT keeps (measured:
    # the same cost as no snippet at all), where joining the winners back to a second MATCH cost more.
    rows = raw.execute(
        "SELECT item_type, item_id, title, updated_at, snippet(search_index, -1, '[', ']', '…', 16), "
        f"{_BM25} AS score FROM search_index WHERE {condition} AND rowid >= :floor ORDER BY score LIMIT :limit",
        params,
    )
    return [
        {
            "type": item_type,
            "id": int(item_id),
            "title": title,
            "snippet": _clip(snip or title),
            "score": float(f"{-float(score):.6g}"),
            "updated_at": updated_at,
        }
        for item_type, item_id, title, updated_at, snip, score in rows
    ]


def _clip(snippet: str) -> str:
    """At most MAX_SNIPPET_CHARS: FTS5 bounds a snippet in tokens, and one token may be a 100,000-character word."""
    if len(snippet) <= MAX_SNIPPET_CHARS:
        return snippet
    start = max(0, snippet.find("[") - MAX_SNIPPET_CHARS // 4)  # keep the first highlighted match in view
    clipped = snippet[start : start + MAX_SNIPPET_CHARS - 2]
    return ("…" if start else "") + clipped + "…"


def _in_list(column: str, prefix: str, values: Sequence[str | int], params: dict[str, Any]) -> str:
    names = []
    for i, value in enumerate(values):
        params[f"{prefix}{i}"] = value
        names.append(f":{prefix}{i}")
    return f"{column} IN ({', '.join(names)})"
