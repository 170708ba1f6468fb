"""Many workspaces on one PostgreSQL: the shared layout against one schema per workspace.

For each layout and workspace count (a fresh database each, dropped after), at store level through
the code a server runs (`PostgresStores`, `decisions`, `search`):

- first write to a new workspace: open it with create and log one decision (p50, p95);
- database size per empty workspace (workspaces opened and never written) and per workspace with
  `--items` decisions;
- random read (the 10 newest decisions) and word search of random workspaces, p50 and p95;
- backend memory after touching every workspace on one connection (pg_backend_memory_contexts:
  all contexts, and CacheMemoryContext, where the catalog caches grow with relations seen);
- `homeport migrate` of a new revision (shared layout: a column the metadata has and the tables
  lack, added once for the database);
- with `--big N`, N workspaces of `--big-items` decisions each among the others: search p50/p95 there.

Then `--index-experiment` compares, in plain SQL, how the full-text index can serve one workspace
of shared tables: row-level security on the table, a filtering view (what the layout does),
and hash partitions by workspace, at 10 and 10,000 workspaces.

    python bench/pg_workspaces.py --shared 10,1000,10000 --schema 10,1000 --big 1 --index-experiment

Results: bench/results/<date>-pg-workspaces.md (+ .json).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import uuid
from datetime import date
from pathlib import Path
from typing import Any

from _common import machine_description, machine_markdown, md_table, percentile
from homeport_only import Corpus, _seed

RESULTS = Path(__file__).parent / "results"


def stats(values: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2), "n": len(values)}


class Database:
    """A fresh database on the admin URL's server, dropped on exit."""

    def __init__(self, admin: str) -> None:
        self.admin = admin
        self.name = f"homeport_bench_{uuid.uuid4().hex[:8]}"
        self.url = f"{admin.rsplit('/', 1)[0]}/{self.name}"

    def __enter__(self) -> Database:
        import psycopg

        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.name}"')
        return self

    def __exit__(self, *exc: object) -> None:
        import psycopg

        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')

    def scalar(self, sql: str) -> Any:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            cursor = conn.execute(sql)
            row = cursor.fetchone() if cursor.description else None
            return row[0] if row else None


def run_layout(admin: str, layout: str, count: int, args: argparse.Namespace) -> dict[str, Any]:
    from homeport.store import decisions, search
    from homeport.store.postgres import PostgresStores

    corpus = Corpus(seed=count)
    out: dict[str, Any] = {"layout": layout, "workspaces": count}
    with Database(admin) as db:
        # One connection when calls come one at a time: memory below is that backend's.
        stores = PostgresStores(f"{db.url}?layout={layout}", pool_size=1)
        try:
            stores.get("warm-up", create=True)
            base = db.scalar("SELECT pg_database_size(current_database())")
            empty = min(count, args.empty)
            t0 = time.perf_counter()
            for i in range(empty):
                stores.get(f"acme/empty-{i}", create=True)
            out["open_empty_s"] = round(time.perf_counter() - t0, 2)
            after_empty = db.scalar("SELECT pg_database_size(current_database())")
            out["bytes_per_empty_workspace"] = round((after_empty - base) / empty)
            first: list[float] = []
            keys = [f"acme/repo-{i}" for i in range(count)]
            t0 = time.perf_counter()
            for key in keys:
                t = time.perf_counter()
                store = stores.get(key, create=True)
                decisions.log_decision(store, **corpus.item())
                first.append((time.perf_counter() - t) * 1000)
                for _ in range(args.items - 1):
                    decisions.log_decision(store, **corpus.item())
            out["fill_s"] = round(time.perf_counter() - t0, 1)
            out["first_write_ms"] = stats(first)
            size = db.scalar("SELECT pg_database_size(current_database())")
            out["database_mb"] = round(size / 1e6, 1)
            out["bytes_per_workspace_with_items"] = round((size - after_empty) / count)
            out["relations"] = db.scalar("SELECT count(*) FROM pg_class")
            big_keys = (
                [f"acme/big-{i}" for i in range(args.big)] if f"{layout}:{count}" in args.big_at.split(",") else []
            )
            for key in big_keys:
                t0 = time.perf_counter()
                _seed(stores.get(key, create=True), Corpus(seed=7), args.big_items, 0)
                out.setdefault("big_fill_s", []).append(round(time.perf_counter() - t0, 1))
            if big_keys:
                out["big_items"] = args.big_items
                db.scalar("ANALYZE")
            queries = [w for ws in corpus.queries().values() for w in ws[:3]]
            rng = random.Random(count)
            reads, searches = [], []
            for _ in range(args.reads):
                store = stores.get(rng.choice(keys), create=False)
                t = time.perf_counter()
                decisions.get_decisions(store, limit=10)
                reads.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                search.search(store, rng.choice(queries), limit=10)
                searches.append((time.perf_counter() - t) * 1000)
            out["read_ms"] = stats(reads)
            out["search_ms"] = stats(searches)
            if big_keys:
                big = []
                for _ in range(args.reads // 4):
                    store = stores.get(rng.choice(big_keys), create=False)
                    t = time.perf_counter()
                    search.search(store, rng.choice(queries), limit=10)
                    big.append((time.perf_counter() - t) * 1000)
                out["big_search_ms"] = stats(big)
            # Every workspace touched once on the one connection, then that backend's memory.
            t0 = time.perf_counter()
            for key in keys:
                decisions.get_decisions(stores.get(key, create=False), limit=1)
            out["touch_all_s"] = round(time.perf_counter() - t0, 1)
            with stores.engine.connect() as conn:
                total, cache = conn.exec_driver_sql(
                    "SELECT sum(total_bytes), sum(total_bytes) FILTER (WHERE name = 'CacheMemoryContext') "
                    "FROM pg_backend_memory_contexts"
                ).one()
            out["backend_memory_mb"] = round(int(total) / 1e6, 1)
            out["catalog_cache_mb"] = round(int(cache) / 1e6, 1)
            out["migrate_s"] = _migrate(stores, db, layout)
        finally:
            stores.close()
    return out


def _migrate(stores: Any, db: Database, layout: str) -> float:
    """`homeport migrate` (PostgresStores.migrate_all) of one new revision: for the shared layout a column
    the tables lack; for schemas, every workspace already at the head (a check per schema, the floor)."""
    import psycopg

    if layout == "shared":
        with psycopg.connect(db.url, autocommit=True) as conn:
            conn.execute("ALTER TABLE homeport_shared.decisions DROP COLUMN implementation_details")
            conn.execute("UPDATE homeport_shared.layout SET revision = '0008'")
    t0 = time.perf_counter()
    stores.migrate_all()
    return round(time.perf_counter() - t0, 2)


# -- how the full-text index serves one workspace of shared tables -------------------------------------

_FILL = """
INSERT INTO {t} (ws, rowid, document)
SELECT w, i, to_tsvector('english', 'word' || (i % 1000) || ' common text ' || md5((w * 1000 + i)::text))
FROM generate_series(1, {n}) w, generate_series(1, {per}) i;
INSERT INTO {t} (ws, rowid, document)
SELECT 0, i, to_tsvector('english', 'word' || (i % 1000) || ' common text ' || md5(i::text))
FROM generate_series(1, {big}) i;
"""


def index_experiment(admin: str, counts: list[int], big: int, reps: int) -> list[dict[str, Any]]:
    """One workspace of `big` rows (ws 0) among `n` workspaces of 10 rows; a word query in ws 0 and in a
    small one, under three designs. Times are EXPLAIN ANALYZE's execution times, median of `reps`."""
    import psycopg

    rows: list[dict[str, Any]] = []
    for n in counts:
        with Database(admin) as db, psycopg.connect(db.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
            conn.execute(
                "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'homeport_tenant') "
                "THEN CREATE ROLE homeport_tenant NOLOGIN; END IF; END $$"
            )
            policy = "ws = nullif(current_setting('homeport.ws', true), '')::int"
            ddl = "(ws int NOT NULL, rowid bigint NOT NULL, document tsvector NOT NULL, PRIMARY KEY (ws, rowid))"
            conn.execute(f"CREATE TABLE rls {ddl}")
            conn.execute("CREATE INDEX ON rls USING gin (ws, document)")
            conn.execute(f"CREATE TABLE base {ddl}")
            conn.execute("CREATE INDEX ON base USING gin (ws, document)")
            conn.execute(f"CREATE TABLE part {ddl} PARTITION BY HASH (ws)")
            for r in range(16):
                conn.execute(f"CREATE TABLE part_{r} PARTITION OF part FOR VALUES WITH (MODULUS 16, REMAINDER {r})")
            conn.execute("CREATE INDEX ON part USING gin (document)")
            for t in ("rls", "base", "part"):
                conn.execute(_FILL.format(t=t, n=n, per=10, big=big))
                conn.execute(f"ANALYZE {t}")
            conn.execute("ALTER TABLE rls ENABLE ROW LEVEL SECURITY; ALTER TABLE rls FORCE ROW LEVEL SECURITY")
            conn.execute(f"CREATE POLICY p ON rls USING ({policy})")
            conn.execute(f"CREATE VIEW via_view AS SELECT * FROM base WHERE {policy} WITH CASCADED CHECK OPTION")
            conn.execute(f"CREATE VIEW via_part AS SELECT * FROM part WHERE {policy} WITH CASCADED CHECK OPTION")
            conn.execute("GRANT SELECT ON rls, via_view, via_part TO homeport_tenant")
            size = conn.execute("SELECT pg_total_relation_size('base')").fetchone()[0]
            for design, relation in (
                ("row-level security, GIN (ws, document)", "rls"),
                ("view on ws, GIN (ws, document) [the layout]", "via_view"),
                ("view on ws, 16 hash partitions, GIN (document)", "via_part"),
            ):
                row: dict[str, Any] = {"workspaces": n + 1, "design": design, "table_mb": round(size / 1e6, 1)}
                for label, ws, word in (("big ws, rare word", 0, "word7"), ("small ws", n // 2, "common")):
                    times = []
                    for _ in range(reps):
                        with conn.transaction():
                            conn.execute("SET LOCAL ROLE homeport_tenant")
                            conn.execute(f"SET LOCAL homeport.ws = '{ws}'")
                            plan = conn.execute(
                                f"EXPLAIN (ANALYZE, FORMAT JSON) SELECT rowid FROM {relation} "
                                f"WHERE document @@ to_tsquery('english', '{word}') ORDER BY rowid DESC LIMIT 2000"
                            ).fetchone()[0]
                        times.append(plan[0]["Execution Time"])
                    row[f"{label} ms"] = round(sorted(times)[len(times) // 2], 2)
                rows.append(row)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shared", default="10,1000,10000", help="workspace counts in the shared layout")
    p.add_argument("--schema", default="10,1000", help="workspace counts with one schema per workspace")
    p.add_argument("--items", type=int, default=3, help="decisions per workspace")
    p.add_argument("--empty", type=int, default=1000, help="at most this many empty workspaces for the size")
    p.add_argument("--reads", type=int, default=400, help="random reads and searches")
    p.add_argument("--big", type=int, default=0, help="workspaces with --big-items decisions among the others")
    p.add_argument("--big-items", type=int, default=100_000)
    p.add_argument("--big-at", default="shared:10,shared:10000", help="the runs (layout:count) that get them")
    p.add_argument("--index-experiment", action="store_true")
    p.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test", help="server (admin db)")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args()

    results: dict[str, Any] = {
        "machine": machine_description(),
        "runs": [],
        "index": [],
        "argv": " ".join(sys.argv[1:]),
    }
    plan = [("shared", int(n)) for n in args.shared.split(",") if n] + [
        ("schema", int(n)) for n in args.schema.split(",") if n
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"{date.today().isoformat()}-pg-workspaces"

    def save() -> None:  # after each run: a long run stopped midway keeps what it measured
        stem.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
        stem.with_suffix(".md").write_text(report(results, " ".join(sys.argv[1:])))

    if args.index_experiment:
        results["index"] = index_experiment(args.postgres, [10, 10_000], args.big_items, 5)
        save()
    elif stem.with_suffix(".json").exists():  # the experiment of an earlier run today, kept
        results["index"] = json.loads(stem.with_suffix(".json").read_text()).get("index", [])
        results["index_argv"] = json.loads(stem.with_suffix(".json").read_text()).get("argv", "")
    for layout, n in plan:
        print(f"{layout} x {n} ...", file=sys.stderr, flush=True)
        run = run_layout(args.postgres, layout, n, args)
        print(json.dumps(run), file=sys.stderr, flush=True)
        results["runs"].append(run)
        save()
    print(stem.with_suffix(".md").read_text())


def report(results: dict[str, Any], argv: str) -> str:
    lines = [
        "# Many workspaces on one PostgreSQL: shared tables against a schema per workspace",
        "",
        f"`python bench/pg_workspaces.py {argv}`",
        "",
        machine_markdown(results["machine"]),
        "",
    ]
    head = [
        "layout",
        "workspaces",
        "bytes / empty ws",
        "bytes / ws (items)",
        "relations",
        "db MB",
        "first write p50 / p95 ms",
        "read p50 / p95 ms",
        "search p50 / p95 ms",
        "backend MB (catalog cache)",
        "migrate s",
    ]
    body = []
    for r in results["runs"]:
        body.append(
            [
                r["layout"],
                f"{r['workspaces']:,}",
                f"{r['bytes_per_empty_workspace']:,}",
                f"{r['bytes_per_workspace_with_items']:,}",
                f"{r['relations']:,}",
                r["database_mb"],
                f"{r['first_write_ms']['p50']} / {r['first_write_ms']['p95']}",
                f"{r['read_ms']['p50']} / {r['read_ms']['p95']}",
                f"{r['search_ms']['p50']} / {r['search_ms']['p95']}",
                f"{r['backend_memory_mb']} ({r['catalog_cache_mb']})",
                r["migrate_s"],
            ]
        )
    lines += [md_table(head, [[str(x) for x in row] for row in body]), ""]
    big = [r for r in results["runs"] if "big_search_ms" in r]
    if big:
        lines += [f"Search in a workspace of {big[0].get('big_items', 20_000):,} decisions among the others:", ""]
        lines += [
            md_table(
                ["layout", "workspaces", "fill s", "search p50 / p95 ms"],
                [
                    [
                        r["layout"],
                        f"{r['workspaces']:,}",
                        ", ".join(map(str, r["big_fill_s"])),
                        f"{r['big_search_ms']['p50']} / {r['big_search_ms']['p95']}",
                    ]
                    for r in big
                ],
            ),
            "",
        ]
    if results["index"]:
        keys = list(results["index"][0])
        lines += [
            "Full-text index designs for shared tables (plain SQL, EXPLAIN ANALYZE execution time, median of 5"
            + (
                f"; measured by `python bench/pg_workspaces.py {results['index_argv']}`"
                if results.get("index_argv")
                else ""
            )
            + "):",
            "",
            md_table(keys, [[str(r[k]) for k in keys] for r in results["index"]]),
            "",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
