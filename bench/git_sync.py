"""Time `homeport sync` (homeport.sync.sync_memory, in process) on a local bare remote, and the ref's size.

Two clones of one bare repository, each with a SQLite store. The first is seeded in one transaction with
`--items` items (70% decisions with tags, 15% progress, 5% patterns, 5% custom data, 5% links), then:

1. the first sync of each clone (export all, and receive all), timed once;
2. `--changed` items edited on the first clone, synced end to end (export, fetch, push), then received by
   the second: wall time of each, median of `--reps` rounds (the target: 10,000 items, 100 changed, <= 2 s);
3. `--syncs` rounds of a few edits and a sync on alternate clones (both push), then the size of the ref's
   objects in the bare remote (`git count-objects -v`: loose + packed) and after `git gc`; `git status`
   of both clones is checked to be clean after every sync.

    python bench/git_sync.py --items 10000 --changed 100 --reps 3 --syncs 1000
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _common import machine_description, machine_markdown


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def seed(store, items: int) -> None:
    from homeport.store.custom_data import upsert_custom_data
    from homeport.store.decisions import insert_decision
    from homeport.store.links import insert_link
    from homeport.store.patterns import upsert_system_pattern
    from homeport.store.progress import insert_progress

    with store.write() as conn:
        n_dec, n_prog, n_pat, n_cd = int(items * 0.70), int(items * 0.15), int(items * 0.05), int(items * 0.05)
        for i in range(n_dec):
            insert_decision(conn, f"decision {i} about layer {i % 97}", rationale="because " * 8, tags=[f"t{i % 7}"])
        parent = None
        for i in range(n_prog):
            parent = insert_progress(conn, "TODO", f"task {i}", parent_id=parent if i % 5 else None)["id"]
        for i in range(n_pat):
            upsert_system_pattern(conn, f"pattern {i}", "a description of the pattern", tags=["p"])
        for i in range(n_cd):
            upsert_custom_data(conn, "Glossary", f"term {i}", {"meaning": f"m {i}", "n": [i, 2.5]})
        for i in range(items - n_dec - n_prog - n_pat - n_cd):
            insert_link(conn, "decision", i % n_dec + 1, "decision", (i * 7 + 1) % n_dec + 1, f"rel{i // n_dec}")


def edit(store, ids: list[int], rng: random.Random, n: int, tag: str) -> None:
    from homeport.store.decisions import rewrite_decision

    with store.write() as conn:
        for item_id in rng.sample(ids, n):
            rewrite_decision(conn, item_id, rationale=f"changed in {tag} {rng.random()}")


def objects_kib(repo: Path) -> int:
    counts = dict(line.split(": ") for line in git(repo, "count-objects", "-v").splitlines())
    return int(counts["size"]) + int(counts["size-pack"])


def cpu_seconds() -> float:
    """CPU of this process and of the git processes it ran: on a shared machine a steadier figure than wall time."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def clean(clone: Path) -> bool:
    return git(clone, "status", "--porcelain", "--", ".", ":!.homeport") == ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--changed", type=int, default=100)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--syncs", type=int, default=1000)
    args = parser.parse_args()

    from homeport.store import Store
    from homeport.store.decisions import get_decisions
    from homeport.sync import sync_memory

    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="homeport-bench-sync-") as tmp:
        root = Path(tmp)
        remote = root / "remote.git"
        git(root, "init", "-q", "--bare", str(remote))
        clones, stores = [], []
        for name in ("a", "b"):
            git(root, "clone", "-q", str(remote), name)
            clones.append(root / name)
            store = Store.open(root / name, create=True)
            assert store is not None
            stores.append(store)
        a, b = clones
        sa, sb = stores
        seed(sa, args.items)
        ids = [d["id"] for d in get_decisions(sa, limit=1000)]

        t = time.perf_counter()
        first = sync_memory(sa, a)
        first_export = time.perf_counter() - t
        t = time.perf_counter()
        got = sync_memory(sb, b)
        first_receive = time.perf_counter() - t
        print(
            f"first sync: exported {first['exported']} files in {first_export:.2f} s; "
            f"the other clone received {got['received']} in {first_receive:.2f} s"
        )

        push_times, pull_times, push_cpu, pull_cpu = [], [], [], []
        for rep in range(args.reps):
            edit(sa, ids, rng, args.changed, f"rep {rep}")
            t, c = time.perf_counter(), cpu_seconds()
            out = sync_memory(sa, a)
            push_times.append(time.perf_counter() - t)
            push_cpu.append(cpu_seconds() - c)
            assert out["exported"] == args.changed and out["pushed"], out
            t, c = time.perf_counter(), cpu_seconds()
            got = sync_memory(sb, b)
            pull_times.append(time.perf_counter() - t)
            pull_cpu.append(cpu_seconds() - c)
            assert got["received"] == args.changed, got
            assert clean(a) and clean(b)
        med = statistics.median
        print(
            f"{args.changed} of {args.items} changed, medians of {args.reps}: sync (export, fetch, push) "
            f"{med(push_times):.2f} s wall, {med(push_cpu):.2f} s CPU; the other clone's sync (fetch, apply) "
            f"{med(pull_times):.2f} s wall, {med(pull_cpu):.2f} s CPU (CPU includes git's)"
        )
        with open("/proc/loadavg") as load:
            print(f"load average (1 min) meanwhile: {load.read().split()[0]}")

        before = objects_kib(remote)
        t = time.perf_counter()
        dirty = 0
        for i in range(args.syncs):
            k = i % 2
            ids_k = [d["id"] for d in get_decisions(stores[k], limit=200)]
            edit(stores[k], ids_k, rng, rng.randint(1, 5), f"round {i}")
            sync_memory(stores[k], clones[k])
            dirty += not clean(clones[k])
            if (i + 1) % 100 == 0:
                print(f"  after {i + 1} syncs: remote objects {objects_kib(remote)} KiB", flush=True)
        rounds = time.perf_counter() - t
        size = objects_kib(remote)
        commits = int(git(remote, "rev-list", "--count", "refs/homeport/memory"))
        git(remote, "gc", "-q", "--prune=now")
        after_gc = objects_kib(remote)
        git(a, "gc", "-q", "--prune=now")
        print(
            f"{args.syncs} syncs of 1-5 edits on alternating clones in {rounds:.0f} s "
            f"({rounds / max(args.syncs, 1) * 1000:.0f} ms a sync); git status dirty after {dirty} of them"
        )
        print(
            f"remote objects: {before} KiB after the first syncs, {size} KiB after {args.syncs} more "
            f"({commits} commits on the ref), {after_gc} KiB after git gc; clone a after gc: {objects_kib(a)} KiB"
        )
        for s in stores:
            s.close()
    print()
    print(machine_markdown(machine_description()))


if __name__ == "__main__":
    main()
