"""One full-text index over every item type (FTS5 on SQLite), ranked by bm25.

Item modules call `index_item` / `unindex_item` inside their write transaction, so the index
never disagrees with the items. A query FTS5 cannot parse (unbalanced quotes, a bare operator,
an unknown column) is retried as plain words instead of failing: the agent cannot be expected to
know FTS5 syntax.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, text

from homeport.errors import InvalidItemError
from homeport.store import branches
from homeport.store._common import ITEM_TYPES, normalize_tags, utc_stamp
from homeport.store.database import Store, driver
from homeport.store.fields import MAX_QUERY_CHARS, MAX_SNIPPET_CHARS, check_text

__all__ = [
    "RANK_WINDOW",
    "SEARCHABLE_TYPES",
    "STOP_WORDS",
    "content_words",
    "filter_conditions",
    "in_list",
    "index_item",
    "index_items",
    "index_row",
    "index_rowid",
    "mark",
    "matching",
    "plain_words",
    "search",
    "ts_query",
    "unindex_item",
    "words",
]

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
    row = index_row(item_type, item_id, title=title, body=body, updated_at=updated_at, tags=tags, category=category)
    if conn.dialect.name != "sqlite":
        row.update(fti=fold(title), fb=fold(body), fg=fold(row["g"]))
        conn.execute(_PG_INDEX, row)
        conn.execute(text(_UNEMBED), {"t": item_type, "i": item_id})
        return
    raw = driver(conn)
    raw.execute(_UNINDEX, {"r": row["r"]})
    raw.execute(_UNEMBED, {"t": item_type, "i": item_id})
    raw.execute(_INDEX, row)


def index_row(
    item_type: str,
    item_id: int,
    *,
    title: str,
    body: str,
    updated_at: str,
    tags: Sequence[str] = (),
    category: str | None = None,
) -> dict[str, Any]:
    """The parameters of one item's index entry, for `index_items`."""
    rowid = index_rowid(item_type, item_id)
    return {
        "r": rowid,
        "t": item_type,
        "i": item_id,
        "c": category,
        "u": updated_at,
        "ti": title,
        "b": body,
        "g": " ".join(tags),
    }


def index_items(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """`index_item` for many items (rows from `index_row`), one executemany per statement: a bulk copy's path."""
    if not rows:
        return
    keys = [{"r": r["r"], "t": r["t"], "i": r["i"]} for r in rows]
    if conn.dialect.name != "sqlite":
        conn.execute(text(_UNEMBED), [{"t": k["t"], "i": k["i"]} for k in keys])
        conn.execute(_PG_INDEX, [{**r, "fti": fold(r["ti"]), "fb": fold(r["b"]), "fg": fold(r["g"])} for r in rows])
        return
    raw = driver(conn)
    raw.executemany(_UNINDEX, [{"r": k["r"]} for k in keys])
    raw.executemany(_UNEMBED, [{"t": k["t"], "i": k["i"]} for k in keys])
    raw.executemany(_INDEX, rows)


def unindex_item(conn: Connection, item_type: str, item_id: int) -> None:
    if conn.dialect.name != "sqlite":
        conn.execute(text(_UNINDEX), {"r": index_rowid(item_type, item_id)})
        conn.execute(text(_UNEMBED), {"t": item_type, "i": item_id})
        return
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

# PostgreSQL (migration 0003): a plain table whose tsvector column is generated from title, tags and body.
_PG_INDEX = text(
    "INSERT INTO search_index (rowid, item_type, item_id, category, updated_at, title, body, tags, document) "
    "VALUES (:r, :t, :i, :c, :u, :ti, :b, :g, setweight(to_tsvector('english', :fti), 'A') "
    "|| setweight(to_tsvector('english', :fg), 'B') || setweight(to_tsvector('english', :fb), 'D')) "
    "ON CONFLICT (rowid) DO UPDATE SET item_type = EXCLUDED.item_type, item_id = EXCLUDED.item_id, "
    "category = EXCLUDED.category, updated_at = EXCLUDED.updated_at, title = EXCLUDED.title, "
    "body = EXCLUDED.body, tags = EXCLUDED.tags, document = EXCLUDED.document"
)


def fold(value: str) -> str:
    """`value` without diacritics (café -> cafe), as FTS5's unicode61 tokenizer indexes words."""
    if value.isascii():
        return value
    return "".join(c for c in unicodedata.normalize("NFKD", value) if not unicodedata.combining(c))


def plain_words(query: str, words: Sequence[str] | None = None) -> str:
    """The query's words (or `words`), quoted and joined with OR, which FTS5 always parses; bm25 ranks the
    best first."""
    chosen = [w for w in (_WORD.findall(query) if words is None else words) if w not in _OPERATORS]
    return " OR ".join(f'"{w}"' for w in chosen)


# How many index rows the words chosen by `rarest_words` may match together.
RARE_WORDS_BUDGET = 200


def rarest_words(store: Store, words: Sequence[str], budget: int = RARE_WORDS_BUDGET) -> list[str]:
    """The rarest of `words` (fewest items hold them, at most `budget` rows together; at least the rarest
    one), or all of them when each is in more than `budget` rows or the store is not SQLite.

    An OR query of a title's words matches every item holding a common one, and ranking those with bm25
    cost about 2 ms per write at 2,000 items; a word in most items weighs next to nothing in bm25, so the
    rare words name the same best hits. Each count stops at `budget` + 1 rows: one statement, bounded.
    """
    chosen = list(dict.fromkeys(w for w in words if w not in _OPERATORS))
    if len(chosen) < 2:
        return chosen
    with store.read() as conn:
        if conn.dialect.name != "sqlite":
            return chosen
        count = f"(SELECT count(*) FROM (SELECT 1 FROM search_index WHERE search_index MATCH ? LIMIT {budget + 1}))"
        found = driver(conn).execute("SELECT " + ", ".join([count] * len(chosen)), [f'"{w}"' for w in chosen])
        counts = found.fetchone()
    ranked = sorted((n, k) for k, n in enumerate(counts) if n)
    if not ranked or ranked[0][0] > budget:
        return chosen
    out: list[str] = []
    total = 0
    for n, k in ranked:
        if total + n > budget:
            break
        out.append(chosen[k])
        total += n
    return out


# English function words: they say nothing about what a text is about. A sentence-long query joined
# with OR would otherwise match every item that shares one of them, and bm25 rates such a word
# highly in a memory where few items use it ("Write the tests" ranked "Move the logo" first).
# Words that carry meaning in a developer's task ("out" in "logged out", "after", "up", "not") are
# not in the list.
_STOP_WORD_TEXT = """
    a an the and or but if of to in on at by for with from as so than also just
    is are was were be been being am do does did doing have has had having
    will would can could should shall may might must it its itself this that these those there here
    i me my myself we us our ours you your yours he him his she her hers they them their theirs
    what which who whom how why when where
"""
STOP_WORDS = frozenset(_STOP_WORD_TEXT.split())


def content_words(text: str) -> list[str]:
    """The words of `text` that are not stop words, in order (empty when it has none)."""
    return [w for w in _WORD.findall(text) if w.lower() not in STOP_WORDS]


def words(text: str) -> list[str]:
    """Every word of `text`, in order, as the index reads words."""
    return _WORD.findall(text)


def matching(store: Store, query: str, keys: Sequence[tuple[str, int]]) -> set[tuple[str, int]]:
    """Which of the items `keys` (type, id) match the full-text `query` (an FTS5 expression).

    PostgreSQL's english configuration indexes no stop word, so there every key of a stop-word-free
    query's hits matches already and `keys` come back as they are.
    """
    if not keys:
        return set()
    with store.read() as conn:
        if conn.dialect.name != "sqlite":
            return set(keys)
        rowids = {index_rowid(t, i): (t, i) for t, i in keys}
        marks = ",".join("?" * len(rowids))
        found = driver(conn).execute(
            f"SELECT rowid FROM search_index WHERE search_index MATCH ? AND rowid IN ({marks})", [query, *rowids]
        )
        return {rowids[row[0]] for row in found}


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
    """Ranked hits `{type, id, title, snippet, matches, score, updated_at}`; higher score is better.

    `matches` are the `[start, end)` character spans of `snippet` that matched (`mark` shows them).

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
        hidden = branches.hidden_keys(store, conn)  # decisions and patterns of branches the reader is not on
        if hidden:
            filters.limit += len(hidden)
        hits = _search_in(conn, query, filters)
    return branches.without_hidden(hits, hidden, filters.limit - len(hidden)) if hidden else hits


def _search_in(conn: Connection, query: str, filters: _Filters) -> list[dict[str, Any]]:
    if conn.dialect.name != "sqlite":
        return _run_postgres(conn, query, filters)
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
    where = ["search_index MATCH :q", *filter_conditions(params, f.types, f.tags, f.category, f.since)]
    condition = " AND ".join(where)
    floor = raw.execute(
        f"SELECT rowid FROM search_index WHERE {condition} ORDER BY rowid DESC LIMIT 1 OFFSET :window", params
    ).fetchone()
    params["floor"] = floor[0] if floor else 0
    # Snippets in the ranking query itself: SQLite computes them for the rows the LIMIT keeps (measured:
    # the same cost as no snippet at all), where joining the winners back to a second MATCH cost more.
    rows = raw.execute(
        f"SELECT item_type, item_id, title, updated_at, snippet(search_index, -1, '{_OPEN}', '{_CLOSE}', '…', 16), "
        f"{_BM25} AS score FROM search_index WHERE {condition} AND rowid >= :floor ORDER BY score LIMIT :limit",
        params,
    )
    return [
        {
            "type": item_type,
            "id": int(item_id),
            "title": title,
            **_snippet(_clip(snip or title)),
            "score": float(f"{-float(score):.6g}"),
            "updated_at": updated_at,
        }
        for item_type, item_id, title, updated_at, snip, score in rows
    ]


def _ellipses(snippet: str | None, head: str | None, tail: str | None) -> str | None:
    """ "…" where ts_headline's fragment leaves out the start or the end of its text, as FTS5's snippet marks it."""
    if not snippet or head is None or tail is None:
        return snippet
    plain = snippet.replace(_OPEN, "").replace(_CLOSE, "").strip()
    words = plain.split()
    if not words:
        return snippet
    starts = head.lstrip().startswith(words[0]) and head.count(words[0]) >= 1 and head.strip().find(words[0]) == 0
    ends = tail.rstrip().endswith(words[-1])
    return ("" if starts else "…") + snippet.strip() + ("" if ends else "…")


def _clip(snippet: str) -> str:
    """At most MAX_SNIPPET_CHARS: FTS5 bounds a snippet in tokens, and one token may be a 100,000-character word."""
    if len(snippet) <= MAX_SNIPPET_CHARS:
        return snippet
    start = max(0, snippet.find(_OPEN) - MAX_SNIPPET_CHARS // 4)  # keep the first highlighted match in view
    clipped = snippet[start : start + MAX_SNIPPET_CHARS - 2]
    return ("…" if start else "") + clipped + "…"


# Where the index marks a match in a snippet: two private-use characters, turned into `matches` (spans of
# the snippet) before a hit leaves this module. Marking with "[" and "]" made a JSON array in an item read
# like a match. Text that itself holds these two characters (private use: no script has them) loses them
# from its snippet.
_OPEN, _CLOSE = "\ue000", "\ue001"


def _snippet(marked: str) -> dict[str, Any]:
    """`{snippet, matches}` of a marked snippet: the text without markers, and `[start, end)` of each match."""
    text: list[str] = []
    matches: list[list[int]] = []
    length = 0
    start: int | None = None
    for piece in re.split(f"([{_OPEN}{_CLOSE}])", marked):
        if piece == _OPEN:
            start = length
        elif piece == _CLOSE:
            if start is not None and length > start:
                matches.append([start, length])
            start = None
        elif piece:
            text.append(piece)
            length += len(piece)
    return {"snippet": "".join(text), "matches": matches}


def mark(hit: Mapping[str, Any], open_mark: str = "«", close_mark: str = "»") -> str:
    """A hit's snippet with its matches between `open_mark` and `close_mark`, for a person to read."""
    text, out, at = hit["snippet"], [], 0
    for start, end in hit.get("matches") or ():
        out += [text[at:start], open_mark, text[start:end], close_mark]
        at = end
    return "".join([*out, text[at:]])


def filter_conditions(
    params: dict[str, Any], types: Sequence[str], tags: Sequence[str], category: str | None, since: str | None
) -> list[str]:
    """The conditions on `search_index` of the search filters (values already normalised); their values
    are added to `params`. Word search on both backends and search by meaning use the same ones."""
    where = []
    if len(types) < len(SEARCHABLE_TYPES):  # the type is in the rowid's low bits: no row lookup
        where.append(in_list("(rowid & 7)", "t", [_TYPE_CODES[t] for t in types], params))
    if tags:
        keys = in_list("g.tag_key", "g", [t.casefold() for t in tags], params)
        where.append(
            "EXISTS (SELECT 1 FROM item_tags g WHERE g.item_type = search_index.item_type "
            f"AND g.item_id = search_index.item_id AND {keys})"
        )
    if category:
        where.append("category = :category")
        params["category"] = category
    if since:
        where.append("updated_at >= :since")
        params["since"] = since
    return where


def in_list(column: str, prefix: str, values: Sequence[str | int], params: dict[str, Any]) -> str:
    """`column IN (:prefix0, :prefix1, ...)`, the values added to `params`."""
    names = []
    for i, value in enumerate(values):
        params[f"{prefix}{i}"] = value
        names.append(f":{prefix}{i}")
    return f"{column} IN ({', '.join(names)})"


# ts_rank_cd with PostgreSQL's default weights (title A 1.0, tags B 0.4, body D 0.1: the order of bm25's column
# weights 4 : 2 : 1 on SQLite, steeper), divided by the document's length (2: bm25 favours short documents too),
# then scaled to 0..1 (32).
_PG_RANK = "ts_rank_cd(document, q, 2 | 32)"
# The snippet comes from the title when the title matches (FTS5's snippet picks the best column), else the body.
_PG_SOURCE = (
    "CASE WHEN ts_filter(document, '{a}') @@ q THEN title ELSE concat_ws(' ', NULLIF(body, ''), NULLIF(tags, '')) END"
)
_PG_HEADLINE = "'StartSel=\ue000, StopSel=\ue001, MaxWords=16, MinWords=6, ShortWord=2'"
_EDGE = 1000  # characters of each end of the snippet's source, to tell whether the snippet starts or ends it
_QUERY_TOKEN = re.compile(r'"[^"]*"|[^\s"]+')
_STRUCTURED = re.compile(r'^[\w\s"*]*$')


def ts_query(query: str) -> str:
    """The query in to_tsquery syntax, read as FTS5 reads it: words AND-ed, "a phrase", OR, NOT, prefix*.

    What FTS5 would refuse or read as a column filter (other punctuation, an unbalanced quote, an
    operator without two sides, NEAR) becomes the query's plain words OR-ed, as on SQLite. Built
    from words only, so to_tsquery always parses it.
    """
    folded = fold(query)
    parts = _structured(folded) if _STRUCTURED.match(folded) and folded.count('"') % 2 == 0 else None
    if parts is None:
        words = [w for w in _WORD.findall(folded) if w not in _OPERATORS]
        return " | ".join(words)
    return "".join(parts)


def _structured(query: str) -> list[str] | None:
    parts: list[str] = []
    op: str | None = None
    for token in _QUERY_TOKEN.findall(query):
        if token in ("OR", "AND", "NOT", "NEAR"):
            if token == "NEAR" or op is not None or not parts:
                return None  # FTS5: a syntax error
            op = {"OR": " | ", "AND": " & ", "NOT": " & !"}[token]
            continue
        words = _WORD.findall(token)
        if not words:
            if token.strip('"'):
                return None  # a bare "*"
            continue
        prefix = ":*" if token.endswith("*") and not token.startswith('"') else ""
        term = " <-> ".join([*words[:-1], words[-1] + prefix])
        term = f"({term})" if len(words) > 1 else term
        parts.append((op or " & " if parts else "") + term)
        op = None
    return None if op is not None else parts


def _run_postgres(conn: Connection, query: str, f: _Filters) -> list[dict[str, Any]]:
    """The same window and filters as on SQLite, ranked with ts_rank_cd, snippets from ts_headline."""
    tsq = ts_query(query)
    if not tsq:
        return []
    params: dict[str, Any] = {"q": tsq, "limit": f.limit, "window": RANK_WINDOW}
    where = ["document @@ q", *filter_conditions(params, f.types, f.tags, f.category, f.since)]
    condition = " AND ".join(where)
    sql = text(
        # Only the rowid and the tsvector of the window are read; the text of the best `limit` rows after.
        "WITH matches AS (SELECT rowid, document, q FROM search_index, to_tsquery('english', :q) q "
        f"WHERE {condition} ORDER BY rowid DESC LIMIT :window), "
        f"best AS (SELECT rowid, q, {_PG_RANK} AS score FROM matches "
        "ORDER BY score DESC, rowid DESC LIMIT :limit), "
        f"found AS (SELECT s.*, best.q, best.score, {_PG_SOURCE} AS source FROM best "
        "JOIN search_index s ON s.rowid = best.rowid) "
        f"SELECT item_type, item_id, title, updated_at, ts_headline('english', source, q, {_PG_HEADLINE}) AS snip, "
        f"left(source, {_EDGE}) AS head, right(source, {_EDGE}) AS tail, score FROM found "
        "ORDER BY score DESC, rowid DESC"
    )
    # Planned for each query's words, never once for all: PostgresStore's transactions force custom plans.
    rows = conn.execute(sql, params)
    return [
        {
            "type": item_type,
            "id": int(item_id),
            "title": title,
            **_snippet(_clip(_ellipses(snip, head, tail) or title)),
            "score": float(f"{float(score):.6g}"),
            "updated_at": updated_at,
        }
        for item_type, item_id, title, updated_at, snip, head, tail, score in rows
    ]
