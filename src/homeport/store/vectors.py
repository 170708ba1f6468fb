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

    def mark(self) -> tuple[object, tuple[int, int, int]] | None:
        """(this connection, (last vector id, data_version, total_changes)): the same again means no
        statement has changed the file since, through any connection; None on PostgreSQL.

        Read inside the transaction: data_version is the snapshot's (SQLite updates it when a read
        transaction starts), so a pair never vouches for a snapshot that another commit changed.
        """
        if self._raw is None:
            return None
        # A read first, so that the snapshot is taken before data_version is read (and the last id is
        # compared too: cheap, the rowid's last page).
        last = self._raw.execute("SELECT coalesce(max(id), 0) FROM item_vectors").fetchone()[0]
        version = self._raw.execute("PRAGMA data_version").fetchone()[0]
        # A token kept in the connection's info: an object id could be reused by a later connection.
        token = self._conn.info.setdefault("homeport_vector_mark", object())
        return token, (int(last), int(version), self._raw.total_changes)


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
        return _pending_in(_Sql(conn), path, model)


def _pending_in(raw: _Sql, path: PgVector | None, model: str) -> int:
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
    """One store's vectors of one model, as of (max id, row count).

    Rows are float32 up to `_EXACT_CHUNKS`, float16 above (half the memory, and the sign bits rank
    them first: see `_scored`). `seen` holds, per connection, the `_Sql.mark` at which the copy was
    last found current: while it is the same, no statement has changed the file since, and a search
    needs no count to know its copy is current.
    """

    def __init__(self, dim: int) -> None:
        import numpy as np

        self.state: tuple[int, int] = (0, 0)
        self.ids = np.zeros(0, dtype=np.int64)
        self.keys = np.zeros(0, dtype=np.int64)  # search.index_rowid of the item
        self.chunks = np.zeros(0, dtype=np.int32)
        self.vectors: Any = np.zeros((0, dim), dtype=np.float32)
        self.signs = np.zeros((0, _sign_words(dim)), dtype=np.uint64)
        self.seen: OrderedDict[object, tuple[int, int, int]] = OrderedDict()
        self.pending: tuple[object, tuple[int, int, int], int] | None = None  # (connection, its mark, count)

    def keep(self, rows: Any) -> None:
        self.ids, self.keys, self.chunks = self.ids[rows], self.keys[rows], self.chunks[rows]
        self.vectors, self.signs = self.vectors[rows], self.signs[rows]


# Above this many chunks a search ranks in two steps: the Hamming distance of the sign bits of every
# chunk to the query's (48 bytes a chunk at 384 dimensions, a few ms for 200,000), then the exact cosine
# of the `_RESCORE` nearest by that distance. Below it, every chunk's cosine, exactly, in float32.
# Measured by bench/retrieval_speed.py at 100,000 items (200,000 chunks): see the recall it reports.
_EXACT_CHUNKS = 50_000
_RESCORE = 4096


def _sign_words(dim: int) -> int:
    return (dim + 63) // 64


def _signs(block: Any) -> Any:
    """The sign bits of each row of `block`, packed into uint64 words."""
    import numpy as np

    packed = np.packbits(np.asarray(block) > 0, axis=1)
    width = 8 * _sign_words(block.shape[1])
    if packed.shape[1] != width:
        packed = np.pad(packed, ((0, 0), (0, width - packed.shape[1])))
    return np.ascontiguousarray(packed).view(np.uint64)


_POPCOUNT: Any = None


def _hamming(signs: Any, query_signs: Any) -> Any:
    import numpy as np

    global _POPCOUNT
    differ = signs ^ query_signs
    if hasattr(np, "bitwise_count"):  # numpy 2
        return np.bitwise_count(differ).sum(axis=1, dtype=np.int32)
    if _POPCOUNT is None:
        _POPCOUNT = np.array([bin(n).count("1") for n in range(256)], dtype=np.uint8)
    return _POPCOUNT[differ.view(np.uint8)].sum(axis=1, dtype=np.int32)


def _scored(matrix: _Matrix, query: Any, *, everything: bool = False) -> tuple[Any, Any]:
    """(row positions, their cosine to `query`): every row up to `_EXACT_CHUNKS` (or when `everything`),
    else the `_RESCORE` rows whose sign bits are nearest to the query's."""
    import numpy as np

    n = len(matrix.ids)
    if matrix.vectors.dtype == np.float32:
        # einsum, not `@`: BLAS hands a matrix-vector product to its thread pool, which on a busy
        # machine cost 14 ms for 10,000 vectors where one thread takes 1 ms (measured on 2 cores).
        return np.arange(n), np.einsum("ij,j->i", matrix.vectors, query)
    if everything or n <= _RESCORE:
        blocks = [
            np.einsum("ij,j->i", matrix.vectors[a : a + 16384].astype(np.float32), query) for a in range(0, n, 16384)
        ]
        return np.arange(n), np.concatenate(blocks)
    distance = _hamming(matrix.signs, _signs(query[None, :])[0])
    rows = np.argpartition(distance, _RESCORE - 1)[:_RESCORE]
    return rows, np.einsum("ij,j->i", matrix.vectors[rows].astype(np.float32), query)


class VectorCache:
    """A copy of the vectors of the most recently searched stores, brought up to date on each search.

    Rows are only inserted or deleted, with ids that only grow, so a copy is current when the
    table's (max id, count) is what it was; otherwise only the new rows are read, and rows deleted
    since are dropped by id. On SQLite even that count is skipped while the connection's
    `PRAGMA data_version` (another connection committed) and `total_changes` (this one wrote) are
    what they were when the copy was last found current: a search then runs no SQL for vectors
    but the fetch of its hits. Bounded: `capacity` stores (about 1.5 KB per chunk each, 0.8 KB
    above `_EXACT_CHUNKS`).
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
        query = np.ascontiguousarray(query, dtype=np.float32)
        with store.read() as conn:
            raw = _Sql(conn)
            matrix = self._current(raw, store.where, model, int(query.shape[0]))
            if not len(matrix.ids):
                return []
            for everything in (False, True):
                rows, scores = _scored(matrix, query, everything=everything)
                hits, complete = _nearest_of(raw, matrix, rows, scores, filters, limit)
                if complete or len(rows) == len(matrix.ids):
                    return hits
            return hits  # pragma: no cover (the second pass scores every row)

    def pending(self, store: Store, model: str) -> int:
        """`pending_count`, kept while nothing has written to the store since it was counted (SQLite)."""
        if pgvector_for(store) is not None:
            return pending_count(store, model)
        with store.read() as conn:
            raw = _Sql(conn)
            mark = raw.mark()
            with self._lock:
                matrix = self._matrices.get((store.where, model))
                known = matrix.pending if matrix is not None else None
            if mark is not None and known is not None and known[:2] == mark:
                return known[2]
            count = _pending_in(raw, pgvector_for(store), model)
            if mark is not None and matrix is not None:
                with self._lock:
                    matrix.pending = (*mark, count)
            return count

    def _current(self, raw: _Sql, where: str, model: str, dim: int) -> _Matrix:
        key = (where, model)  # a PostgreSQL store's `where` names its database too
        mark = raw.mark()
        with self._lock:
            matrix = self._matrices.get(key)
            if matrix is None or matrix.vectors.shape[1] != dim:
                matrix = _Matrix(dim)
            self._matrices[key] = matrix
            self._matrices.move_to_end(key)
            while len(self._matrices) > self._capacity:
                self._matrices.popitem(last=False)
            if mark is not None and matrix.seen.get(mark[0]) == mark[1]:
                return matrix
            state = raw.execute("SELECT coalesce(max(id), 0), count(*) FROM item_vectors").fetchone()
            if matrix.state != (state[0], state[1]):
                matrix.seen.clear()  # every connection checks the changed copy again
                self._refresh(raw, matrix, model, dim)
                matrix.state = (state[0], state[1])
            if mark is not None:
                matrix.seen[mark[0]] = mark[1]
                matrix.seen.move_to_end(mark[0])
                while len(matrix.seen) > 16:
                    matrix.seen.popitem(last=False)
            return matrix

    @staticmethod
    def _refresh(raw: _Sql, matrix: _Matrix, model: str, dim: int) -> None:
        import numpy as np

        last = int(matrix.ids.max()) if len(matrix.ids) else 0
        if len(matrix.ids):  # drop rows deleted since (ids come from the covering index)
            alive = np.fromiter(
                (r[0] for r in raw.execute("SELECT id FROM item_vectors WHERE model = :m", {"m": model})),
                dtype=np.int64,
            )
            keep = np.isin(matrix.ids, alive)
            if not keep.all():
                matrix.keep(keep)
        cursor = raw.execute(
            "SELECT id, item_type, item_id, chunk, vector FROM item_vectors WHERE id > :last AND model = :m",
            {"last": last, "m": model},
        )
        parts = []
        # Read in slices: the rows of 100,000 vectors as Python objects would double the peak memory.
        while rows := [r for r in cursor.fetchmany(4096) if len(r[4]) == 4 * dim]:  # bytes or memoryview
            block = np.frombuffer(b"".join(r[4] for r in rows), dtype="<f4").reshape(len(rows), dim)
            parts.append(
                (
                    np.array([r[0] for r in rows], dtype=np.int64),
                    np.array([index_rowid(r[1], int(r[2])) for r in rows], dtype=np.int64),
                    np.array([r[3] for r in rows], dtype=np.int32),
                    block,
                    _signs(block),
                )
            )
        if not parts:
            return
        total = len(matrix.ids) + sum(len(p[0]) for p in parts)
        dtype = np.float32 if total <= _EXACT_CHUNKS else np.float16
        everything = [(matrix.ids, matrix.keys, matrix.chunks, matrix.vectors, matrix.signs), *parts]
        matrix.ids, matrix.keys, matrix.chunks = (np.concatenate([p[n] for p in everything]) for n in range(3))
        matrix.vectors = np.concatenate([p[3].astype(dtype, copy=False) for p in everything])
        matrix.signs = np.concatenate([p[4] for p in everything])


def _nearest_of(
    raw: _Sql, matrix: _Matrix, rows: Any, scores: Any, filters: VectorFilters, limit: int
) -> tuple[list[dict[str, Any]], bool]:
    """(hits, complete) among `rows` scored `scores`: a window of the best chunks widened until `limit`
    items pass the filters or no chunk left is above the floor (complete: no other row can add a hit)."""
    import numpy as np

    # Only chunks above the floor can be hits: the window never grows past them (with none, a query
    # unrelated to everything would otherwise fetch every item of the store).
    eligible = int(np.count_nonzero(scores >= MIN_SIMILARITY))
    window = min(_FIRST_WINDOW, eligible)
    hits: list[dict[str, Any]] = []
    keys = matrix.keys if len(rows) == len(matrix.ids) else matrix.keys[rows]  # rows is arange then
    while window:
        ranked = [
            (int(keys[p]), int(matrix.chunks[rows[p]]), float(scores[p]))
            for p in _best_chunk_per_item(scores, keys, window)
        ]
        hits = _fetch(raw, ranked, filters, limit)
        if len(hits) >= limit:
            return hits, True
        if window >= eligible:
            break
        window = min(window * 4, eligible)
    # Fewer than `limit`: complete when every row was scored, or when the rows scored ended above the floor.
    # Rows that were not scored are farther from the query by their sign bits than every row that was; when
    # some of those fell below the floor, the rest are taken to be below it too.
    return hits, len(rows) == len(matrix.ids) or eligible < len(rows)


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
    """The hits of `ranked` (search_index rowid, best chunk, score; best first) that pass `filters`.

    Read in slices of the ranking, best first, until `limit` pass: without filters the first slice
    is enough, and the texts of the rest of the window are never read.
    """
    hits: list[dict[str, Any]] = []
    step = limit + max(4, limit // 4)  # a few more than `limit`: some may have been deleted or be filtered out
    for start in range(0, len(ranked), step):
        hits += _fetch_slice(raw, ranked[start : start + step], filters, limit - len(hits))
        if len(hits) >= limit:
            break
    return hits


def _fetch_slice(
    raw: _Sql, ranked: list[tuple[int, int, float]], filters: VectorFilters, limit: int
) -> list[dict[str, Any]]:
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
