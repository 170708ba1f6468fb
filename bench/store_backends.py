"""Search latency on the two store backends: one SQLite file and one workspace of a PostgreSQL store.

Both are seeded with the same synthetic decisions (homeport_only.Corpus: Zipf-distributed words,
the first 200 through decisions.log_decision, the rest through the same insert path in one
transaction), then the same query classes are run through `search.search` (the store function the
`search` tool calls), `--reps` rounds each. Printed as a table and written to
bench/results/<date>-store-backends.md (+ .json).

    python bench/store_backends.py --sizes 1000,10000,100000 \
        --postgres postgresql://postgres@127.0.0.1:5432/test

A database `homeport_bench_<random>` is created on that server for the run and dropped after.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from datetime import date
from pathlib import Path
from typing import Any

from _common import fmt, machine_description, machine_markdown, md_table, percentile
from homeport_only import Corpus, _seed

RESULTS = Path(__file__).parent / "results"


def stats(values: list[float]) -> dict[str, float]:
    return {"p50": percentile(values, 50), "p95": percentile(values, 95), "n": len(values)}


def run_queries(store: Any, queries: dict[str, list[str]], reps: int) -> dict[str, Any]:
    from homeport.store import search

    out: dict[str, Any] = {}
    every: list[float] = []
    for cls, qs in queries.items():
        for q in qs[:2]:  # warm-up
            search.search(store, q, limit=10)
        lat, hits = [], []
        for rep in range(reps):
            for q in qs:
                t = time.perf_counter()
                found = search.search(store, q, limit=10)
                lat.append((time.perf_counter() - t) * 1000)
                if rep == 0:
                    hits.append(len(found))
        out[cls] = {**stats(lat), "mean_hits": sum(hits) / max(1, len(hits))}
        every += lat
    out["all queries"] = stats(every)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1000,10000,100000", help="item counts, ascending (comma-separated)")
    p.add_argument("--reps", type=int, default=5, help="rounds of each query class")
    p.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test", help="a server to bench on")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    import psycopg

    from homeport.store import Store
    from homeport.store.postgres import PostgresStores

    base = args.postgres.rsplit("/", 1)[0]
    name = f"homeport_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.postgres, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    results: dict[str, Any] = {"sizes": {}, "machine": machine_description()}
    pg = PostgresStores(f"{base}/{name}")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            sqlite_store = Store.open(Path(tmp), create=True)
            sqlite_open = time.perf_counter() - t
            t = time.perf_counter()
            pg_store = pg.get("/bench/workspace", create=True)
            pg_open = time.perf_counter() - t
            results["first_open_s"] = {"sqlite": sqlite_open, "postgresql": pg_open}
            stores = {"sqlite": sqlite_store, "postgresql": pg_store}
            corpora = {k: Corpus() for k in stores}  # the same items in the same order on both
            queries = Corpus().queries()
            have = 0
            for size in sizes:
                row: dict[str, Any] = {}
                for backend, store in stores.items():
                    seed_s = _seed(store, corpora[backend], size, have)
                    if backend == "postgresql":
                        with store.write() as conn:
                            conn.exec_driver_sql("ANALYZE search_index")
                    print(f"{backend}: {size:,} items (seeded in {seed_s:.1f} s)", flush=True)
                    row[backend] = {"seed_s": seed_s, "search": run_queries(store, queries, args.reps)}
                have = size
                results["sizes"][size] = row
            sqlite_store.close()
    finally:
        pg.close()
        with psycopg.connect(args.postgres, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    report = render(results, args)
    print(report)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"{date.today().isoformat()}-store-backends"
    stem.with_suffix(".md").write_text(report, encoding="utf-8")
    stem.with_suffix(".json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(f"written: {stem}.md, {stem}.json", file=sys.stderr)


def render(results: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        "# Search on the two store backends",
        "",
        f"`python bench/store_backends.py --sizes {args.sizes} --reps {args.reps}`; `search.search(limit=10)`, "
        "milliseconds, p50 / p95 per query class. SQLite: FTS5 + bm25; PostgreSQL: tsvector + GIN, "
        "ts_rank_cd, ts_headline (one workspace of the shared store, over TCP on loopback).",
        "",
        machine_markdown(results["machine"]),
        "",
        "First open of a new workspace (create + schema): "
        f"SQLite {results['first_open_s']['sqlite'] * 1000:.0f} ms, "
        f"PostgreSQL {results['first_open_s']['postgresql'] * 1000:.0f} ms (runs the migrations).",
        "",
    ]
    for size, row in results["sizes"].items():
        lines.append(
            f"## {int(size):,} items (seeded in {row['sqlite']['seed_s']:.1f} s on SQLite, "
            f"{row['postgresql']['seed_s']:.1f} s on PostgreSQL)"
        )
        lines.append("")
        classes = list(row["sqlite"]["search"])
        table = []
        for cls in classes:
            s, pg = row["sqlite"]["search"][cls], row["postgresql"]["search"][cls]
            table.append(
                [
                    cls,
                    f"{fmt(s['p50'])} / {fmt(s['p95'])}",
                    f"{fmt(pg['p50'])} / {fmt(pg['p95'])}",
                    f"{s['mean_hits']:.1f} / {pg['mean_hits']:.1f}" if "mean_hits" in s else "",
                ]
            )
        lines.append(md_table(["query class", "SQLite p50 / p95", "PostgreSQL p50 / p95", "hits SQLite / PG"], table))
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
