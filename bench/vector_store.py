"""Vectors in SQLite two ways, side by side: float32 blobs searched exactly with numpy (what Homeport
does, homeport.store.vectors) and sqlite-vec's vec0 virtual table with its exact KNN query.

Both get the same synthetic L2-normalised float32 vectors, in fresh SQLite files of their own (WAL,
synchronous=NORMAL, as Homeport opens its stores). Per size it measures:

- insert: rows/s, all rows in transactions of 1,000, and the file size after a WAL checkpoint;
- blob, cold: a new connection, every blob read into a numpy matrix (Homeport's own loader,
  VectorCache, in slices of 4,096 rows) and one search, per query;
- blob, warm: the search alone on the cached matrix (einsum, then the best k, as VectorCache does);
- vec0: `embedding MATCH ? AND k = 10` on an open connection; vec0 keeps nothing between queries,
  it reads its chunks through SQLite's page cache every time. Its first query on a new connection
  is reported as cold.

Cold means "not in this process"; the file itself is in the OS page cache for both. "other load"
is the CPU other processes used while a size was measured (each size first waits, up to
--quiet-wait seconds, for the machine to go quiet). The top-10 ids of vec0 are compared with the
blob path's (both are exact: for unit vectors L2 distance and cosine rank alike) and the share
that agree is printed.

sqlite-vec is not a dependency of Homeport: `pip install sqlite-vec` into the environment that runs
this. It is a loadable extension, so Python's sqlite3 must have been built with extension loading
(`enable_load_extension`); without either the vec0 half is skipped and the reason printed.

Run: python3 bench/vector_store.py [--sizes 1000,10000,100000] [--queries 200] [--dim 384]
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import OtherLoad, percentile, wait_until_quiet

from homeport.store.vectors import VectorCache, _best_chunk_per_item, _scored

MODEL = "bench-synthetic"
K = 10
BATCH = 1000


def vec0_unavailable() -> str | None:
    """Why sqlite-vec cannot be used by this interpreter, or None if it can."""
    probe = sqlite3.connect(":memory:")
    try:
        if not hasattr(probe, "enable_load_extension"):
            return (
                f"this Python's sqlite3 ({sys.executable}, Python {platform.python_version()}) was built "
                "without loadable extensions: sqlite3.Connection has no enable_load_extension"
            )
        try:
            import sqlite_vec
        except ImportError:
            return "the sqlite-vec package is not installed (pip install sqlite-vec)"
        try:
            probe.enable_load_extension(True)
            sqlite_vec.load(probe)
        except sqlite3.Error as error:
            return f"loading sqlite-vec failed: {error}"
        return None
    finally:
        probe.close()


def connect(path: Path, *, vec: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    if vec:
        import sqlite_vec

        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    return conn


def file_mb(conn: sqlite3.Connection, path: Path) -> float:
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 1e6


def insert_rows(conn: sqlite3.Connection, sql: str, rows: list[tuple[Any, ...]]) -> float:
    start = time.perf_counter()
    for at in range(0, len(rows), BATCH):
        conn.execute("BEGIN")
        conn.executemany(sql, rows[at : at + BATCH])
        conn.execute("COMMIT")
    return time.perf_counter() - start


def stats(ms: list[float]) -> str:
    return f"{percentile(ms, 50):.2f} / {percentile(ms, 95):.2f}"


class Raw:
    """What VectorCache reads through on SQLite (store.vectors._Sql), without its change marks."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: dict[str, Any] | None = None) -> sqlite3.Cursor:
        return self.conn.execute(sql, params or {})

    def mark(self) -> None:
        return None  # every search checks the table's (max id, count), as on PostgreSQL


def blob_search(cache: VectorCache, conn: sqlite3.Connection, path: Path, query: np.ndarray) -> list[int]:
    """VectorCache's search without the SQL fetch of the hit rows (which either store would need)."""
    matrix = cache._current(Raw(conn), str(path), MODEL, int(query.shape[0]))  # type: ignore[arg-type]
    rows, scores = _scored(matrix, query)
    keys = matrix.keys[rows]
    return [int(keys[p]) >> 3 for p in _best_chunk_per_item(scores, keys, K)]


def measure(size: int, queries: int, dim: int, folder: Path, vec_reason: str | None) -> dict[str, Any]:
    rng = np.random.default_rng(size)
    vectors = rng.standard_normal((size, dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    # Queries near stored vectors, so each has real neighbours (exact search costs the same either way).
    picks = vectors[rng.integers(0, size, queries)] + 0.05 * rng.standard_normal((queries, dim), dtype=np.float32)
    picks /= np.linalg.norm(picks, axis=1, keepdims=True)
    blobs = [v.astype("<f4").tobytes() for v in vectors]
    out: dict[str, Any] = {"size": size}

    # -- blobs, as Homeport stores them -------------------------------------------------------------
    path = folder / f"blob-{size}.sqlite"
    conn = connect(path)
    conn.execute(
        "CREATE TABLE item_vectors (id INTEGER PRIMARY KEY AUTOINCREMENT, item_type VARCHAR(32) NOT NULL, "
        "item_id INTEGER NOT NULL, chunk INTEGER NOT NULL, model VARCHAR(100) NOT NULL, vector BLOB NOT NULL)"
    )
    conn.execute("CREATE INDEX ix_item_vectors_item ON item_vectors (item_type, item_id, model, chunk)")
    seconds = insert_rows(
        conn,
        "INSERT INTO item_vectors (item_type, item_id, chunk, model, vector) VALUES (?, ?, 0, ?, ?)",
        [("decision", i + 1, MODEL, b) for i, b in enumerate(blobs)],
    )
    out["blob_insert"] = size / seconds
    out["blob_mb"] = file_mb(conn, path)
    conn.close()
    cold, warm, blob_top = [], [], []
    for q in picks[: max(3, min(queries, 2_000_000 // size))]:
        start = time.perf_counter()
        fresh = connect(path)
        blob_search(VectorCache(), fresh, path, q)
        cold.append((time.perf_counter() - start) * 1000)
        fresh.close()
    conn = connect(path)
    cache = VectorCache()
    blob_search(cache, conn, path, picks[0])
    for q in picks:
        start = time.perf_counter()
        blob_top.append(blob_search(cache, conn, path, q))
        warm.append((time.perf_counter() - start) * 1000)
    conn.close()
    out["blob_cold"], out["blob_cold_n"], out["blob_warm"] = stats(cold), len(cold), stats(warm)

    # -- sqlite-vec ---------------------------------------------------------------------------------
    if vec_reason is not None:
        return out
    path = folder / f"vec-{size}.sqlite"
    conn = connect(path, vec=True)
    conn.execute(f"CREATE VIRTUAL TABLE vec_items USING vec0(embedding float[{dim}])")
    seconds = insert_rows(
        conn, "INSERT INTO vec_items (rowid, embedding) VALUES (?, ?)", [(i + 1, b) for i, b in enumerate(blobs)]
    )
    out["vec_insert"] = size / seconds
    out["vec_mb"] = file_mb(conn, path)
    conn.close()
    knn = "SELECT rowid, distance FROM vec_items WHERE embedding MATCH ? AND k = ? ORDER BY distance"
    cold = []
    for q in picks[: out["blob_cold_n"]]:
        start = time.perf_counter()
        fresh = connect(path, vec=True)
        fresh.execute(knn, (q.astype("<f4").tobytes(), K)).fetchall()
        cold.append((time.perf_counter() - start) * 1000)
        fresh.close()
    conn = connect(path, vec=True)
    conn.execute(knn, (picks[0].astype("<f4").tobytes(), K)).fetchall()
    warm, agree = [], 0
    for q, expected in zip(picks, blob_top, strict=True):
        start = time.perf_counter()
        rows = conn.execute(knn, (q.astype("<f4").tobytes(), K)).fetchall()
        warm.append((time.perf_counter() - start) * 1000)
        agree += len({r[0] for r in rows} & set(expected))
    conn.close()
    out["vec_cold"], out["vec_warm"] = stats(cold), stats(warm)
    out["agree"] = agree / (K * len(picks))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Float32 blobs + numpy (Homeport's way) against sqlite-vec's vec0, same vectors, "
        "in fresh SQLite files: insert rows/s, file size, query p50/p95 (cold and warm).",
        epilog="sqlite-vec is not a Homeport dependency: pip install sqlite-vec into this environment; "
        "it needs a Python whose sqlite3 can load extensions. Without it only the blob half runs.",
    )
    parser.add_argument("--sizes", default="1000,10000,100000", help="vector counts, comma-separated")
    parser.add_argument("--queries", type=int, default=200, help="queries per size for warm figures (default 200)")
    parser.add_argument("--dim", type=int, default=384, help="dimensions (default 384, all-MiniLM-L6-v2's)")
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=120,
        help="wait up to this many seconds for other processes to use under 0.3 cores before each size (0: no wait)",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.queries < 1 or args.dim < 1 or not sizes or min(sizes) <= K:
        parser.error(f"--queries and --dim must be positive, every size above {K}")

    reason = vec0_unavailable()
    print(
        f"Python {platform.python_version()} ({sys.executable}), SQLite {sqlite3.sqlite_version}, "
        f"numpy {np.__version__}, {os.cpu_count()} cores"
    )
    if reason is None:
        import sqlite_vec

        version = connect(Path(":memory:"), vec=True).execute("SELECT vec_version()").fetchone()[0]
        print(f"sqlite-vec {version} (package {sqlite_vec.__file__})")
    else:
        print(f"sqlite-vec: not measured, {reason}")
    print(f"dim {args.dim}, k {K}, {args.queries} warm queries per size; times in ms, p50 / p95\n")

    results = []
    with tempfile.TemporaryDirectory(prefix="hp-vecbench-") as tmp:
        for size in sizes:
            if args.quiet_wait:
                wait_until_quiet(max_wait=args.quiet_wait)
            other = OtherLoad()
            other.start([])
            results.append(measure(size, args.queries, args.dim, Path(tmp), reason))
            results[-1]["other"] = other.stop()
            print(f"  {size:,} done", file=sys.stderr, flush=True)

    na = "not measured"
    print("| vectors | store | insert rows/s | file MB | cold query (n) | warm query | top-10 agree | other load |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        n = r["blob_cold_n"]
        print(
            f"| {r['size']:,} | blob + numpy | {r['blob_insert']:,.0f} | {r['blob_mb']:.1f} | "
            f"{r['blob_cold']} ({n}) | {r['blob_warm']} | reference | {r['other']:.2f} cores |"
        )
        if "vec_insert" in r:
            print(
                f"| {r['size']:,} | sqlite-vec vec0 | {r['vec_insert']:,.0f} | {r['vec_mb']:.1f} | "
                f"{r['vec_cold']} ({n}) | {r['vec_warm']} | {r['agree']:.1%} | |"
            )
        else:
            print(f"| {r['size']:,} | sqlite-vec vec0 | {na} | {na} | {na} | {na} | {na} | |")


if __name__ == "__main__":
    main()
