"""Search by meaning with pgvector, on a PostgreSQL store whose database has (or can create) `vector`.

`item_vectors` keeps its float32 blob on every backend: it is the portable copy (the blob path reads
it, and a store moves between the paths without embedding anything again). Here it gains a column
`embedding vector`, written in the same row, and search is one `ORDER BY` on pgvector's inner
product (`<#>`; the vectors are L2-normalised, so it is the cosine the blob path computes) inside
the database: no copy of the vectors in each process's memory, no first read of all of them.

The column and the extension are made in code, once per store and process (`pgvector_for`), not by
a migration: whether the extension exists is a property of the server, which can change after the
schema was migrated (installed later: the column is added and filled from the blobs; dropped: the
store is back on the blob path). The column has no dimension, so one store can hold the vectors of
two models; the HNSW index is a partial expression index per (model, dimension), built once a
model has `HNSW_MIN_ROWS` chunks (below that an exact scan takes under about 40 ms and stays
exact; bench/results/2026-11-27-pgvector.md).

An HNSW scan returns at most `hnsw.ef_search` rows and pgvector 0.5-0.7 filters *after* it, so a
filtered search could miss items that pass the filter. Filtered searches therefore scan exactly
(the filters in the same SQL); unfiltered ones use the index with `ef_search` as large as the
window of chunks asked for, and scan exactly past pgvector's limit of 1,000.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, text
from sqlalchemy.exc import SQLAlchemyError

from homeport.store.database import Store

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["HNSW_MIN_ROWS", "PgVector", "forget", "pgvector_for", "vector_text"]

log = logging.getLogger(__name__)

HNSW_MIN_ROWS = 20_000
MIN_VERSION = (0, 5, 0)  # the first with HNSW
_MAX_EF_SEARCH = 1000  # pgvector's upper bound for hnsw.ef_search
_BACKFILL_BATCH = 2000

# By store object, not name: a workspace dropped and created again (`homeport copy`, `migrate`) is a new
# object, whose schema has no `embedding` column yet.
_paths: weakref.WeakKeyDictionary[Store, PgVector | None] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def vector_text(vector: Any) -> str:
    """pgvector's text form of a float32 vector; `repr` of each float32 reads back as the same float32."""
    return "[" + ",".join(repr(x) for x in vector.tolist()) + "]"


@dataclass
class PgVector:
    """The pgvector path of one store: the extension's schema and version, and the models indexed."""

    schema: str
    version: str
    indexed: set[tuple[str, int]]
    # Per (model, dimension) without an index: how many more chunks before it is worth counting again.
    short: dict[tuple[str, int], int] = field(default_factory=dict)
    # False in the shared layout (homeport.store.postgres_shared): one HNSW graph would hold every workspace's
    # vectors and filter by workspace after the scan. There a workspace's rows are one range of the
    # (ws, ...) index, scanned exactly.
    hnsw: bool = True

    @property
    def type(self) -> str:
        return f"{self.schema}.vector"

    def ip(self, left: str, right: str) -> str:
        """The negative inner product `left <#> right`, spelt so it resolves with only the workspace's
        schema on the search_path."""
        return f"({left} OPERATOR({self.schema}.<#>) {right})"

    def insert_sql(self) -> str:
        return (
            "INSERT INTO item_vectors (item_type, item_id, chunk, model, vector, embedding) "
            f"VALUES (:t, :i, :c, :m, :v, CAST(:e AS {self.type}))"
        )

    def ensure_index(self, conn: Connection, model: str, dim: int, added: int) -> None:
        """Build the HNSW index of `model` once it has HNSW_MIN_ROWS chunks (inside the caller's write).

        The rows are counted again only once `added` (chunks saved since the last count, by this
        process) could have reached the threshold: a count on every save of a few items cost more than
        the save (measured: 47 instead of 220 items/s at 100,000 chunks).
        """
        if (model, dim) in self.indexed or not self.hnsw:
            return
        key = (model, dim)
        self.short[key] = self.short.get(key, 0) - added
        if self.short[key] > 0:
            return
        name = _index_name(model, dim)
        if conn.execute(text("SELECT to_regclass(:n)"), {"n": name}).scalar() is None:
            rows = conn.execute(text("SELECT count(*) FROM item_vectors WHERE model = :m"), {"m": model}).scalar()
            self.short[key] = HNSW_MIN_ROWS - int(rows or 0)
            if self.short[key] > 0:
                return
            # The graph in memory while it is built: at 64 MB (the default) a build of 100,000 384-d vectors
            # spills to disk and takes several times as long.
            conn.exec_driver_sql("SET LOCAL maintenance_work_mem = '512MB'")
            conn.execute(
                text(
                    f"CREATE INDEX IF NOT EXISTS {name} ON item_vectors USING hnsw "
                    f"((embedding::{self.type}({dim})) {self.schema}.vector_ip_ops) WHERE model = {_literal(model)}"
                )
            )
        self.indexed.add((model, dim))

    def nearest_chunks(
        self,
        conn: Connection,
        model: str,
        query: npt.NDArray[np.float32],
        *,
        where: list[str],
        params: dict[str, Any],
        window: int,
    ) -> list[tuple[str, int, int, float]]:
        """The `window` chunks nearest to `query` that pass `where` (conditions on search_index), nearest
        first: (item type, item id, chunk, cosine)."""
        dim = int(query.shape[0])
        q = vector_text(query)
        hnsw = not where and window <= _MAX_EF_SEARCH and self._has_index(conn, model, dim)
        if hnsw:
            # The expression and predicate of the partial index, so the planner can use it (in a plan made for
            # this model's name: PostgresStore's transactions force custom plans).
            distance = self.ip(f"v.embedding::{self.type}({dim})", f"CAST(:q AS {self.type}({dim}))")
            conn.exec_driver_sql(f"SET LOCAL hnsw.ef_search = {max(40, window)}")
        else:
            # Not the index's expression: an exact scan, whatever the planner would prefer.
            distance = self.ip("v.embedding", f"CAST(:q AS {self.type})")
        join = ""
        if where:
            join = "JOIN search_index ON search_index.item_type = v.item_type AND search_index.item_id = v.item_id "
        conditions = " AND ".join(["v.model = :m", "v.embedding IS NOT NULL", *where])
        rows = conn.execute(
            text(
                f"SELECT v.item_type, v.item_id, v.chunk, {distance} AS d FROM item_vectors v {join}"
                f"WHERE {conditions} ORDER BY d LIMIT :window"
            ),
            {**params, "q": q, "m": model, "window": window},
        ).all()
        return [(t, int(i), int(c), -float(d)) for t, i, c, d in rows]

    def _has_index(self, conn: Connection, model: str, dim: int) -> bool:
        if not self.hnsw:
            return False
        if (model, dim) in self.indexed:
            return True
        found = conn.execute(text("SELECT to_regclass(:n)"), {"n": _index_name(model, dim)}).scalar() is not None
        if found:
            self.indexed.add((model, dim))
        return found


def _index_name(model: str, dim: int) -> str:
    return "item_vectors_hnsw_" + hashlib.sha256(f"{model}/{dim}".encode()).hexdigest()[:12]


def pgvector_for(store: Store) -> PgVector | None:
    """The pgvector path of `store`, or None for the blob path (SQLite; PostgreSQL without the extension).

    Decided once per store and process: the extension is created if the database offers it and the
    role may, the column added and filled from the blobs. Any failure leaves the store on the blob path.
    """
    if store.engine.dialect.name != "postgresql":
        return None
    if store in _paths:
        return _paths[store]
    with _lock:
        if store not in _paths:
            _paths[store] = _open(store)
        return _paths[store]


def forget(store: Store) -> None:
    """Decide again on the next use (tests; a server keeps its decision until it restarts)."""
    with _lock:
        _paths.pop(store, None)


def _open(store: Store) -> PgVector | None:
    try:
        found = _extension(store)
        if found is None:
            return None
        path = PgVector(found[0], found[1], set(), hnsw=not getattr(store, "shares_tables", False))
        with store.write() as conn:
            _add_column(conn, path)
        _backfill(store, path)
        return path
    except Exception as exc:  # any failure means the blob path, which always works
        log.warning("search by meaning in %s uses float32 blobs, not pgvector: %s", store.where, exc)
        return None


def _extension(store: Store) -> tuple[str, str] | None:
    """(schema, version) of the `vector` extension, created in `public` if available and absent."""
    find = text(
        "SELECT n.nspname, e.extversion FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'vector'"
    )
    with store.engine.connect() as conn:
        row = conn.execute(find).first()
        if row is None:
            offered = conn.execute(text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).first()
            if offered is None:
                return None
            try:
                # In `public`, never the workspace's schema: dropping a workspace must not drop the type.
                conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public"))
                conn.commit()
            except SQLAlchemyError as exc:
                conn.rollback()
                log.warning("cannot create the vector extension in %s: %s", store.where, exc)
                return None
            row = conn.execute(find).first()
    if row is None:
        return None
    schema, version = str(row[0]), str(row[1])
    if tuple(int(p) for p in version.split(".")[:3] if p.isdigit()) < MIN_VERSION:
        log.warning("pgvector %s in %s is older than 0.5.0 (no HNSW): the blob path is used", version, store.where)
        return None
    return schema, version


def _add_column(conn: Connection, path: PgVector) -> None:
    """The `embedding` column, kept in the row and the blob moved out of it (TOAST) first.

    A row with both (about 3 KB at 384 dimensions) is over PostgreSQL's 2 KB threshold, and pgvector's
    type is stored out of line by default: every distance would then fetch its vector from the TOAST
    table. Checked first: ALTER TABLE takes an exclusive lock even when there is nothing to do.
    """
    storage = conn.execute(
        text(
            "SELECT attname, attstorage FROM pg_attribute WHERE attrelid = 'item_vectors'::regclass "
            "AND attname IN ('vector', 'embedding') AND NOT attisdropped"
        )
    ).all()
    if dict((str(n), str(s)) for n, s in storage) == {"vector": "e", "embedding": "m"}:
        return
    conn.execute(text(f"ALTER TABLE item_vectors ADD COLUMN IF NOT EXISTS embedding {path.type}"))
    conn.execute(
        text(
            "ALTER TABLE item_vectors ALTER COLUMN embedding SET STORAGE MAIN, ALTER COLUMN vector SET STORAGE EXTERNAL"
        )
    )


def _backfill(store: Store, path: PgVector) -> None:
    """Fill `embedding` from the blob of rows written on the blob path (a batch per write)."""
    import numpy as np

    last = 0
    while True:
        with store.write() as conn:
            rows = conn.execute(
                text("SELECT id, vector FROM item_vectors WHERE embedding IS NULL AND id > :last ORDER BY id LIMIT :n"),
                {"last": last, "n": _BACKFILL_BATCH},
            ).all()
            if not rows:
                return
            last = int(rows[-1][0])
            updates = [
                {"id": int(i), "e": vector_text(np.frombuffer(bytes(blob), dtype="<f4"))}
                for i, blob in rows
                if blob and len(blob) % 4 == 0
            ]
            if updates:
                conn.execute(
                    text(f"UPDATE item_vectors SET embedding = CAST(:e AS {path.type}) WHERE id = :id"), updates
                )
