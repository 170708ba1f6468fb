"""Time `homeport copy` of one workspace from SQLite to PostgreSQL (store.transfer.copy_memory, in process).

The source is seeded in one transaction with `--items` items: 70% decisions (tags, uids), 15% progress
(trees), 5% patterns, 5% custom data, 5% links, plus a few context versions. Each repetition copies it
into a fresh workspace of a PostgreSQL database created for the run (dropped after) and reports the wall
time and the CPU time of the copying process; the medians are printed. PostgreSQL's own CPU is not counted:
on a loaded machine the wall time varies by tens of percent, the process CPU much less.

    python bench/copy_memory.py --items 10000 --reps 3 --postgres postgresql://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from _common import machine_description, machine_markdown


def seed(root: Path, items: int) -> None:
    from homeport.store import Store
    from homeport.store.contexts import write_context
    from homeport.store.custom_data import upsert_custom_data
    from homeport.store.decisions import insert_decision
    from homeport.store.links import insert_link
    from homeport.store.patterns import upsert_system_pattern
    from homeport.store.progress import insert_progress

    store = Store.open(root, create=True)
    assert store is not None
    with store.write() as conn:
        n_dec, n_prog, n_pat, n_cd = int(items * 0.70), int(items * 0.15), int(items * 0.05), int(items * 0.05)
        for i in range(n_dec):
            insert_decision(
                conn, f"decision {i} about caching layer {i % 97}", rationale="because " * 8, tags=[f"t{i % 7}"]
            )
        parent = None
        for i in range(n_prog):
            parent = insert_progress(conn, "TODO", f"task {i}", parent_id=parent if i % 5 else None)["id"]
        for i in range(n_pat):
            upsert_system_pattern(conn, f"pattern {i}", "a description of the pattern", tags=["p"])
        for i in range(n_cd):
            upsert_custom_data(conn, "Glossary", f"term {i}", {"meaning": f"m {i}", "n": [i, 2.5]})
        for i in range(items - n_dec - n_prog - n_pat - n_cd - 4):
            insert_link(conn, "decision", i % n_dec + 1, "decision", (i * 7 + 1) % n_dec + 1, f"rel{i // n_dec}")
        for v in range(4):
            write_context(conn, "product", {"goal": "bench", "version": v})
    store.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=10_000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    args = p.parse_args()

    import psycopg

    from homeport.store import Store
    from homeport.store.postgres import PostgresStores

    try:
        from homeport.store.copying import copy_memory
    except ImportError:  # before resumable copies (the figure to compare with)
        from homeport.store.transfer import copy_memory  # type: ignore[attr-defined,no-redef]

    name = f"homeport_bench_{uuid.uuid4().hex[:12]}"
    admin = psycopg.connect(args.postgres, autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    url = args.postgres.rsplit("/", 1)[0] + "/" + name
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            seed(root, args.items)
            source = Store.open(root, create=False)
            assert source is not None
            stores = PostgresStores(url, pool_size=1)
            times, cpu = [], []
            for rep in range(args.reps):
                target = stores.get(f"bench/{rep}", create=True)
                assert target is not None
                t, c = time.perf_counter(), time.process_time()
                result = copy_memory(source, target)
                times.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
                print(f"rep {rep}: {result['items']} items in {times[-1]:.2f} s (CPU of this process {cpu[-1]:.2f} s)")
            stores.close()
            source.close()
        print(machine_markdown(machine_description()))
        print(
            f"copy SQLite -> PostgreSQL, {args.items} items: median {statistics.median(times):.2f} s wall, "
            f"{statistics.median(cpu):.2f} s CPU of this process, of {args.reps}"
        )
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


if __name__ == "__main__":
    main()
