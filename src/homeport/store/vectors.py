"""Vectors of items beside their rows, for search by meaning; exact nearest neighbours with numpy.

The invariant: every row of `item_vectors` is of the *current* text of a live item. Writing or
deleting an item deletes its rows in the same transaction (`search.index_item`/`unindex_item`),
and `save_vectors` stores a vector only if the item's text is still the one that was embedded,
inside its own write transaction. So an item is *pending* exactly when it has no chunk-0 row of
the model, a crash loses nothing (pending items are found again by a query), and no search can
return an old version of an item.

numpy is imported inside the functions that use it: this module loads with the store, and the
store loads at start-up whether or not the `semantic` extra is installed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, text

from homeport.store._common import normalize_tags, utc_stamp
from homeport.store._pgvector import PgVector, pgvector_for, vector_text
from homeport.store.chunking import item_chunks, item_text, text_chunks
from homeport.store.database import Store, driver
from homeport.store.fields import MAX_SNIPPET_CHARS
from homeport.store.search import SEARCHABLE_TYPES, filter_conditions, in_list, index_rowid

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "PendingItem",
    "VectorCache",
    "VectorFilters",
    "pending_count",
    "pending_items",
    "save_vectors",
    "vector_search_path",
]

# Nearest is not relevant: an item less similar than this (cosine) is not a hit. all-MiniLM-L6-v2 puts
# unrelated texts below it. On the first labelled set (bench/retrieval, 2026-11-25): no floor gave hit@10
# 92.3 / 86.3 % (semantic / auto) and no empty answer to any of 22 queries without a relevant item; 0.25
# gave 90.1 / 89.6 % and 5 empty answers; 0.3 cost 9 points of hit@10. With both sets, title chunks and
# RRF k = 5 (2026-11-28): 0.25 gave auto hit@10 92.3 / 92.1 % (Quillbill / Trailmate) and 4 + 2 empty
# answers of 34; 0.2 gave 93.4 / 97.0 % and 1 + 1: a paraphrase's answer is often between the two.
MIN_SIMILARITY = 0.2
# How many of the nearest chunks are looked at before the filters; doubled until `limit` items pass.
_FIRST_WINDOW = 256


class _Sql:
    """The statements of this module on either store: `:name` parameters, rows as tuples.

    On SQLite the sqlite3 connection under the transaction (no SQLAlchemy overhead per statement:
    a search reads thousands of rows); on PostgreSQL the SQLAlchemy connection, with `text()`,
    which takes the same `:name` parameters. bytea comes back as bytes or memoryview; both join.
    """

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._raw = driver(conn) if conn.dialect.name == "sqlite" else None

    def execute(self, sql: str, params: dict[str, Any] | None = None) -> Any:
        if self._raw is not None:
            return self._raw.execute(sql, params or {})
        return self._conn.execute(text(sql), params or {})

    def executemany(self, sql: str, rows: list[dict[str, Any]]) -> None:
        if self._raw is not None:
            self._raw.executemany(sql, rows)
        elif rows:
            self._conn.execute(text(sql), rows)


@dataclass(frozen=True)
class PendingItem:
    item_type: str
    item_id: int
    text: str  # chunking.item_text: what save_vectors compares with the item's current text
    title: str = ""

    @property
    def chunks(self) -> list[str]:
        return text_chunks(self.text, self.title)


def vector_search_path(store: Store) -> str:
    """How `store` searches by meaning: "pgvector <version>" or "float32 blobs" (exact, in numpy)."""
    path = pgvector_for(store)
    return f"pgvector {path.version}" if path is not None else "float32 blobs"


def _embedded(path: PgVector | None) -> str:
    # On the pgvector path a row whose `embedding` is missing (written by a process on the blob path
    # while the column existed) is not searchable: its item is pending and embedded again.
    return " AND v.embedding IS NOT NULL" if path is not None else ""


def pending_items(store: Store, model: str, *, limit: int) -> list[PendingItem]:
    """Up to `limit` items whose current text has no vector of `model` yet, oldest first."""
    path = pgvector_for(store)
    with store.read() as conn:
        rows = (
            _Sql(conn)
            .execute(
                "SELECT item_type, item_id, title, body, tags FROM search_index s WHERE NOT EXISTS "
                "(SELECT 1 FROM item_vectors v WHERE v.item_type = s.item_type AND v.item_id = s.item_id "
                f"AND v.model = :m AND v.chunk = 0{_embedded(path)}) ORDER BY rowid LIMIT :n",
                {"m": model, "n": limit},
            )
            .fetchall()
        )
    return [PendingItem(t, int(i), item_text(title, body or "", tags or ""), title) for t, i, title, body, tags in rows]


def pending_count(store: Store, model: str) -> int:
    """Items that search by meaning cannot find yet (no vector of `model` for their current text)."""
    path = pgvector_for(store)
    with store.read() as conn:
        raw = _Sql(conn)
        items = raw.execute(_ITEM_COUNT).fetchone()[0]
        done = raw.execute(
            f"SELECT count(*) FROM item_vectors v WHERE v.model = :m AND v.chunk = 0{_embedded(path)}", {"m": model}
        ).fetchone()[0]
    return max(0, int(items) - int(done))


# Every item is in the search index once; counting the item tables uses their small indexes, where
# counting the FTS5 table would read every text.
_ITEM_COUNT = (
    "SELECT (SELECT count(*) FROM decisions) + (SELECT count(*) FROM progress) + "
    "(SELECT count(*) FROM system_patterns) + (SELECT count(*) FROM custom_data) + (SELECT count(*) FROM contexts)"
)


def save_vectors(store: Store, model: str, embedded: Sequence[tuple[PendingItem, npt.NDArray[np.float32]]]) -> int:
    """Store each item's chunk vectors if its text is still the one embedded; the number stored.

    An item changed or deleted since it was read is skipped: its new text is pending again.
    """
    import numpy as np

    stored = 0
    path = pgvector_for(store)
    insert = path.insert_sql() if path is not None else _INSERT
    with store.write() as conn:
        raw = _Sql(conn)
        dims: dict[int, int] = {}  # chunks saved per dimension
        for item, vectors in embedded:
            row = raw.execute(
                "SELECT title, body, tags FROM search_index WHERE rowid = :r",
                {"r": index_rowid(item.item_type, item.item_id)},
            ).fetchone()
            if row is None or item_text(row[0], row[1] or "", row[2] or "") != item.text:
                continue
            raw.execute(
                "DELETE FROM item_vectors WHERE item_type = :t AND item_id = :i",
                {"t": item.item_type, "i": item.item_id},
            )
            rows = []
            for n, v in enumerate(vectors):
                v32 = np.asarray(v, "<f4")
                row = {"t": item.item_type, "i": item.item_id, "c": n, "m": model, "v": v32.tobytes()}
                if path is not None:
                    row["e"] = vector_text(v32)
                    dims[len(v32)] = dims.get(len(v32), 0) + 1
                rows.append(row)
            raw.executemany(insert, rows)
            stored += 1
        if path is not None:
            for dim, added in dims.items():
                path.ensure_index(conn, model, dim, added)
    return stored


_INSERT = "INSERT INTO item_vectors (item_type, item_id, chunk, model, vector) VALUES (:t, :i, :c, :m, :v)"


@dataclass(frozen=True)
class VectorFilters:
    """The filters of word search (`search.search`), for search by meaning."""

    types: Sequence[str] | None = None
    tags_any: Sequence[str] | None = None
    category: str | None = None
    since: str | None = None


class _Matrix:
    """One store's vectors of one model, as of (max id, row count)."""

    def __init__(self, dim: int) -> None:
        import numpy as np

        self.state: tuple[int, int] = (0, 0)
        self.ids = np.zeros(0, dtype=np.int64)
        self.keys = np.zeros(0, dtype=np.int64)  # search.index_rowid of the item
        self.chunks = np.zeros(0, dtype=np.int32)
        self.vectors = np.zeros((0, dim), dtype=np.float32)


class VectorCache:
    """A copy of the vectors of the most recently searched stores, brought up to date on each search.

    Rows are only inserted or deleted, with ids that only grow, so a copy is current when the
    table's (max id, count) is what it was; otherwise only the new rows are read, and rows deleted
    since are dropped by id. Bounded: `capacity` stores (about 1.5 KB per chunk each).
    """

    def __init__(self, *, capacity: int = 4) -> None:
        self._capacity = capacity
        self._matrices: OrderedDict[tuple[str, str], _Matrix] = OrderedDict()
        self._lock = threading.Lock()

    def nearest(
        self,
        store: Store,
        model: str,
        query: npt.NDArray[np.float32],
        *,
        filters: VectorFilters,
        limit: int,
    ) -> list[dict[str, Any]]:
        """The `limit` items nearest to `query` (cosine) that pass `filters`, best first, with their best chunk.

        Hits have the shape of word search's: `{type, id, title, snippet, score, updated_at}`.
        """
        import numpy as np

        limit = max(1, min(limit, 200))
        path = pgvector_for(store)
        if path is not None:
            return _nearest_pgvector(store, path, model, query, filters, limit)
        with store.read() as conn:
            raw = _Sql(conn)
            matrix = self._current(raw, store.where, model, int(query.shape[0]))
            if not len(matrix.ids):
                return []
            # einsum, not `@`: BLAS hands a matrix-vector product to its thread pool, which on a busy
            # machine cost 14 ms for 10,000 vectors where one thread takes 1 ms (measured on 2 cores).
            scores = np.einsum("ij,j->i", matrix.vectors, query.astype(np.float32))
            # Only chunks above the floor can be hits: the window never grows past them (with none, a query
            # unrelated to everything would otherwise fetch every item of the store).
            eligible = int(np.count_nonzero(scores >= MIN_SIMILARITY))
            window = min(_FIRST_WINDOW, eligible)
            while window:
                ranked = [
                    (int(matrix.keys[p]), int(matrix.chunks[p]), float(scores[p]))
                    for p in _best_chunk_per_item(scores, matrix.keys, window)
                ]
                hits = _fetch(raw, ranked, filters, limit)
                if len(hits) >= limit or window >= eligible:
                    return hits
                window = min(window * 4, eligible)
            return []

    def _current(self, raw: _Sql, where: str, model: str, dim: int) -> _Matrix:
        import numpy as np

        state = raw.execute("SELECT coalesce(max(id), 0), count(*) FROM item_vectors").fetchone()
        key = (where, model)  # a PostgreSQL store's `where` names its database too
        with self._lock:
            matrix = self._matrices.get(key)
            if matrix is None or matrix.vectors.shape[1] != dim:
                matrix = _Matrix(dim)
            self._matrices[key] = matrix
            self._matrices.move_to_end(key)
            while len(self._matrices) > self._capacity:
                self._matrices.popitem(last=False)
            if matrix.state == (state[0], state[1]):
                return matrix
            last = int(matrix.ids.max()) if len(matrix.ids) else 0
            if len(matrix.ids):  # drop rows deleted since (ids come from the covering index)
                alive = np.fromiter(
                    (r[0] for r in raw.execute("SELECT id FROM item_vectors WHERE model = :m", {"m": model})),
                    dtype=np.int64,
                )
                keep = np.isin(matrix.ids, alive)
                if not keep.all():
                    matrix.ids, matrix.keys = matrix.ids[keep], matrix.keys[keep]
                    matrix.chunks, matrix.vectors = matrix.chunks[keep], matrix.vectors[keep]
            cursor = raw.execute(
                "SELECT id, item_type, item_id, chunk, vector FROM item_vectors WHERE id > :last AND model = :m",
                {"last": last, "m": model},
            )
            parts = [(matrix.ids, matrix.keys, matrix.chunks, matrix.vectors)]
            # Read in slices: the rows of 100,000 vectors as Python objects would double the peak memory.
            while rows := [r for r in cursor.fetchmany(4096) if len(r[4]) == 4 * dim]:  # bytes or memoryview
                parts.append(
                    (
                        np.array([r[0] for r in rows], dtype=np.int64),
                        np.array([index_rowid(r[1], int(r[2])) for r in rows], dtype=np.int64),
                        np.array([r[3] for r in rows], dtype=np.int32),
                        np.frombuffer(b"".join(r[4] for r in rows), dtype="<f4").reshape(len(rows), dim),
                    )
                )
            if len(parts) > 1:
                matrix.ids, matrix.keys, matrix.chunks = (np.concatenate([p[n] for p in parts]) for n in range(3))
                matrix.vectors = np.concatenate([p[3] for p in parts]).astype(np.float32, copy=False)
            matrix.state = (state[0], state[1])
            return matrix


def _best_chunk_per_item(scores: npt.NDArray[np.float32], keys: npt.NDArray[np.int64], window: int) -> list[int]:
    """Row positions of the best chunk of each item among the `window` best chunks, best first."""
    import numpy as np

    top = np.argpartition(-scores, window)[:window] if window < len(scores) else np.arange(len(scores))
    top = top[np.argsort(-scores[top], kind="stable")]
    seen: set[int] = set()
    out = []
    for position in top.tolist():
        key = int(keys[position])
        if key not in seen:
            seen.add(key)
            out.append(position)
    return out


def _nearest_pgvector(
    store: Store, path: PgVector, model: str, query: npt.NDArray[np.float32], filters: VectorFilters, limit: int
) -> list[dict[str, Any]]:
    """As the blob path: a window of the nearest chunks, widened until `limit` items are found or no
    chunk left is above the floor; the filters in the SQL of the window (see store/_pgvector.py)."""
    with store.read() as conn:
        params: dict[str, Any] = {}
        where = _filter_sql(filters, params)
        window = _FIRST_WINDOW
        while True:
            chunks = path.nearest_chunks(conn, model, query, where=where, params=params, window=window)
            ranked: dict[int, tuple[int, int, float]] = {}
            for item_type, item_id, chunk, score in chunks:
                key = index_rowid(item_type, item_id)
                if score >= MIN_SIMILARITY and key not in ranked:
                    ranked[key] = (key, chunk, score)
            exhausted = len(chunks) < window or chunks[-1][3] < MIN_SIMILARITY
            if len(ranked) >= limit or exhausted:
                return _fetch(_Sql(conn), list(ranked.values()), filters, limit)
            window *= 4


def _filter_sql(filters: VectorFilters, params: dict[str, Any]) -> list[str]:
    category = filters.category.strip() if filters.category and filters.category.strip() else None
    since = utc_stamp(filters.since, "since") if filters.since else None
    wanted = list(filters.types or SEARCHABLE_TYPES)
    return filter_conditions(params, wanted, normalize_tags(filters.tags_any), category, since)


def _fetch(raw: _Sql, ranked: list[tuple[int, int, float]], filters: VectorFilters, limit: int) -> list[dict[str, Any]]:
    """The hits of `ranked` (search_index rowid, best chunk, score; best first) that pass `filters`."""
    if not ranked:
        return []
    by_key = {key: (chunk, score) for key, chunk, score in ranked}
    params: dict[str, Any] = {}
    where = [in_list("rowid", "k", list(by_key), params), *_filter_sql(filters, params)]
    columns = "rowid, item_type, item_id, title, body, tags, updated_at"
    rows = raw.execute(f"SELECT {columns} FROM search_index WHERE {' AND '.join(where)}", params).fetchall()
    found = {int(r[0]): r for r in rows}
    hits = []
    for key, (chunk, score) in by_key.items():  # dicts keep the ranked order
        row = found.get(key)
        if row is None or score < MIN_SIMILARITY:
            continue
        _, item_type, item_id, title, body, tags_text, updated_at = row
        chunks = item_chunks(title, body or "", tags_text or "")
        hits.append(
            {
                "type": item_type,
                "id": int(item_id),
                "title": title,
                "snippet": _clip(chunks[chunk] if chunk < len(chunks) else title),
                "matches": [],  # found by meaning: no word of the query marked
                "score": float(f"{score:.6g}"),
                "updated_at": updated_at,
            }
        )
        if len(hits) >= limit:
            break
    return hits


def _clip(text: str) -> str:
    return text if len(text) <= MAX_SNIPPET_CHARS else text[: MAX_SNIPPET_CHARS - 1] + "…"
