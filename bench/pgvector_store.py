"""Search by meaning on PostgreSQL: float32 blobs + numpy against pgvector (exact and HNSW), through
Homeport's own code (`homeport.store.vectors`: `save_vectors`, `VectorCache.nearest`, which includes
the SQL fetch of the hit rows).

Both paths run on the same server (one with pgvector, e.g. pgserver's PostgreSQL 16 build, see
bench/results/2026-11-27-pgvector.md for how it was started), each in a workspace schema of its own
with the same items and the same synthetic 384-d unit vectors: clusters of items (cosine about 0.4
within a cluster), so a query has hundreds of items above the similarity floor, as real text has.
The blob store is put on its path by deciding it for the store (`_pgvector._paths`), nothing else
differs. Per size:

- insert: items/s of `save_vectors` as the background indexer calls it (4 items a transaction), on
  a store of that size; for pgvector with and without the HNSW index;
- fill: items/s of the bulk fill (1,000 items a transaction), and the HNSW index's build time;
- search p50 / p95 (limit 10), unfiltered and with a type filter: blob warm (the matrix cached in
  the process) and cold (a new cache: every vector read first), pgvector exact (no index) and HNSW;
- recall@10 of HNSW against the exact answer.

Run: python bench/pgvector_store.py --url postgresql://postgres@127.0.0.1:PORT/postgres [--sizes 10000,100000]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import md_table, percentile, wait_until_quiet

from homeport.store import _pgvector
from homeport.store.postgres import PostgresStores
from homeport.store.search import index_rowid
from homeport.store.vectors import PendingItem, VectorCache, VectorFilters, save_vectors, vector_search_path

MODEL = "bench-synthetic"
DIM = 384
LIMIT = 10
TYPES = ("decision", "progress")
UNFILTERED = VectorFilters()


def agree(answers: list[list[int]], reference: list[list[int]]) -> float:
    """The share of the reference's top-k that the answers found."""
    return float(np.mean([len(set(a) & set(e)) / max(1, len(e)) for a, e in zip(answers, reference, strict=True)]))


def corpus(size: int, clusters: int, rng: np.random.Generator) -> np.ndarray:
    centres = rng.standard_normal((clusters, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    noise = rng.standard_normal((size, DIM)).astype(np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    vectors = centres[rng.integers(0, clusters, size)] + 1.2 * noise
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def add_items(store: Any, size: int) -> list[PendingItem]:
    """`size` rows of the search index (what search reads of an item), half decisions, half progress."""
    from sqlalchemy import text

    rows = [
        {"r": index_rowid(TYPES[i % 2], i + 1), "t": TYPES[i % 2], "i": i + 1, "ti": f"item {i + 1}"}
        for i in range(size)
    ]
    with store.write() as conn:
        for at in range(0, size, 5000):
            conn.execute(
                text(
                    "INSERT INTO search_index (rowid, item_type, item_id, updated_at, title, document) "
                    "VALUES (:r, :t, :i, '2026-11-27T00:00:00.000000Z', :ti, to_tsvector('english', :ti))"
                ),
                rows[at : at + 5000],
            )
    return [PendingItem(r["t"], r["i"], r["ti"]) for r in rows]


def save(store: Any, items: list[PendingItem], vectors: np.ndarray, batch: int) -> float:
    """Items/s of save_vectors in transactions of `batch` items."""
    start = time.perf_counter()
    for at in range(0, len(items), batch):
        save_vectors(store, MODEL, [(item, vectors[n : n + 1]) for n, item in enumerate(items[at : at + batch], at)])
    return len(items) / (time.perf_counter() - start)


def timed(search: Any, queries: np.ndarray) -> tuple[list[float], list[list[int]]]:
    ms, tops = [], []
    for q in queries:
        start = time.perf_counter()
        hits = search(q)
        ms.append((time.perf_counter() - start) * 1000)
        tops.append([h["id"] for h in hits])
    return ms, tops


def p(ms: list[float]) -> str:
    return f"{percentile(ms, 50):.2f} / {percentile(ms, 95):.2f}"


def measure(stores: PostgresStores, size: int, queries: int, rng: np.random.Generator) -> list[list[str]]:
    vectors = corpus(size + 400, max(20, size // 500), rng)
    picks = vectors[rng.integers(0, size, queries)] + 0.3 * rng.standard_normal((queries, DIM)).astype(np.float32) / 20
    picks = (picks / np.linalg.norm(picks, axis=1, keepdims=True)).astype(np.float32)
    rows: list[list[str]] = []
    typed = VectorFilters(types=["decision"])
    out: dict[str, Any] = {}
    for name in ("blob", "pgvector"):
        key = f"/bench/{name}/{size}/{uuid.uuid4().hex[:6]}"
        store = stores.get(key, create=True)
        assert store is not None
        if name == "blob":
            _pgvector._paths[store] = None  # the blob path on the same server
        _pgvector.HNSW_MIN_ROWS = 10**9  # no index while filling: built and timed below
        assert (name == "pgvector") == vector_search_path(store).startswith("pgvector"), vector_search_path(store)
        items = add_items(store, size + 400)
        fill = save(store, items[:size], vectors[:size], 1000)
        insert = save(store, items[size : size + 200], vectors[size : size + 200], 4)
        cache = VectorCache()

        def search(q: np.ndarray, filters: VectorFilters = UNFILTERED, c: VectorCache = cache, s: Any = store) -> list:
            return c.nearest(s, MODEL, q, filters=filters, limit=LIMIT)

        search(picks[0])
        label = "blob + numpy" if name == "blob" else "pgvector exact"
        ms, exact = timed(search, picks)
        ms_typed, _ = timed(lambda q: search(q, typed), picks)
        extra = ""
        if name == "blob":
            cold, _ = timed(lambda q: search(q, c=VectorCache()), picks[: max(3, min(queries, 2_000_000 // size))])
            extra = f"cold {p(cold)}"
        out[name] = exact
        rows.append([f"{size:,}", label, f"{fill:,.0f}", f"{insert:,.0f}", p(ms), p(ms_typed), "reference", extra])
        if name == "pgvector":
            path = _pgvector.pgvector_for(store)
            assert path is not None
            _pgvector.HNSW_MIN_ROWS = 1
            start = time.perf_counter()
            path.short.clear()
            with store.write() as conn:
                path.ensure_index(conn, MODEL, DIM, 0)
            build = time.perf_counter() - start
            search(picks[0])
            ms, approx = timed(search, picks)
            ms_typed, _ = timed(lambda q: search(q, typed), picks)
            recall = agree(approx, out["blob"])
            # Last: these items are not in the blob store the answers were compared with.
            insert_hnsw = save(store, items[size + 200 :], vectors[size + 200 :], 4)
            rows.append(
                [
                    f"{size:,}",
                    "pgvector HNSW",
                    "",
                    f"{insert_hnsw:,.0f}",
                    p(ms),
                    f"{p(ms_typed)} (exact)",
                    f"{recall:.1%}",
                    f"index built in {build:.1f} s",
                ]
            )
            rows[-2][6] = f"{agree(exact, out['blob']):.1%}"
        stores.drop(key)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Search by meaning on PostgreSQL: float32 blobs + numpy against pgvector exact and HNSW, "
        "through Homeport's vector store; insert items/s and search p50/p95 per size.",
    )
    parser.add_argument("--url", required=True, help="a PostgreSQL database whose server offers the vector extension")
    parser.add_argument("--sizes", default="10000,100000", help="items, comma-separated (one vector each)")
    parser.add_argument("--queries", type=int, default=200, help="queries per size (default 200)")
    parser.add_argument("--quiet-wait", type=float, default=60, help="wait up to this long for a quiet machine")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    stores = PostgresStores(args.url)
    with stores.engine.connect() as conn:
        version = conn.exec_driver_sql("SHOW server_version").scalar()
    print(f"Python {platform.python_version()}, numpy {np.__version__}, PostgreSQL {version}, {os.cpu_count()} cores")
    rng = np.random.default_rng(2026)
    rows = []
    for size in sizes:
        if args.quiet_wait:
            wait_until_quiet(max_wait=args.quiet_wait)
        load = os.getloadavg()[0]
        rows += measure(stores, size, args.queries, rng)
        rows[-1][-1] += f"; load avg {load:.2f}"
        print(f"  {size:,} done", file=sys.stderr, flush=True)
    print(f"dim {DIM}, limit {LIMIT}, {args.queries} queries per size; times in ms, p50 / p95\n")
    print(
        md_table(
            [
                "items",
                "path",
                "fill items/s",
                "insert items/s",
                "search",
                "search, type filter",
                "top-10 = exact",
                "notes",
            ],
            rows,
            align="llrrrrrl",
        )
    )
    stores.close()


if __name__ == "__main__":
    main()
