"""What branch-aware visibility costs a read that has nothing to hide, and one that has.

    python3 bench/branch_reads.py                 # 15 rounds of 300 calls per read
    python3 bench/branch_reads.py --rounds 5 --calls 100

Each read runs through the call pipeline in this process (`CallPipeline.call_blocking`, the
shell's path: resolution, store, executor, shaping) on a git work tree on `main` whose memory holds
300 decisions, 50 patterns, 100 progress entries, all written on `main` (nothing scoped to a
branch), and on a plain directory with the same memory. "without" is the same code with the branch
hooks replaced by what they were before (`_without_branches`: no work tree opened around the
call, no scoped-item query, no place recorded), so the difference is the hooks' cost alone, on
whatever else the tree holds. The two alternate within each round, in turn first (A B, B A, ...),
and each figure is the median over rounds of the mean CPU time per call.

A third column reads from `main` a memory where 50 decisions were written on an unmerged branch:
the steady cost of filtering them (hidden set cached; refs read once per call).

Last, the first read after the default branch moved, with 20 unmerged branches of 3 decisions each:
the hidden set is judged again, and git runs (wall time, git's processes included).

Then the store functions alone (no pipeline), where the hooks' few microseconds are a larger
share: `decisions.get_decisions` and `search.search` outside any work tree (what the hooks cost
when no call opened one: nothing) and inside `branches.working_in(root)` on the git work tree.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from homeport.core import ServeSettings, build_runtime
from homeport.core import tools as _tools  # noqa: F401  (declares every tool)
from homeport.core.catalog import CATALOG
from homeport.core.pipeline import CallPipeline, LocalRequest
from homeport.store import branches, decisions, patterns, progress

READS: dict[str, dict[str, Any]] = {
    "get_decisions": {"limit": 20},
    "get_system_patterns": {},
    "search": {"query": "cache retry", "mode": "words"},
    "get_context": {"task": "add a cache to the retry queue"},
}
GIT_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(root: Path, *args: str) -> None:
    command = ["git", "-c", "user.name=b", "-c", "user.email=b@e", *args]
    subprocess.run(command, cwd=root, env=GIT_ENV, check=True, capture_output=True)


def seed(root: Path, *, repository: bool, branch_items: int = 0) -> None:
    root.mkdir(parents=True)
    (root / "README").write_text("bench\n")
    if repository:
        git(root, "init", "-q", "-b", "main")
        git(root, "add", ".")
        git(root, "commit", "-q", "-m", "first")
    else:
        (root / ".homeport").mkdir()
    from homeport.store import Store

    store = Store.open(root, create=True)
    assert store is not None
    words = ["cache", "retry", "queue", "index", "worker", "token", "page", "limit", "batch", "lock"]
    with branches.working_in(root):
        for n in range(300):
            decisions.log_decision(store, f"decision {n} about {words[n % 10]}", rationale=f"{words[(n * 7) % 10]}")
        for n in range(50):
            patterns.log_system_pattern(store, f"pattern {n}", f"use a {words[n % 10]}")
        for n in range(100):
            progress.log_progress(store, "TODO", f"task {n} on the {words[(n * 3) % 10]}")
    if branch_items:
        git(root, "checkout", "-q", "-b", "feat")
        (root / "feat.txt").write_text("feat\n")
        git(root, "add", "feat.txt")
        git(root, "commit", "-q", "-m", "feat")
        with branches.working_in(root):
            for n in range(branch_items):
                decisions.log_decision(store, f"branch decision {n} about {words[n % 10]}")
        git(root, "checkout", "-q", "main")
    store.close()


@contextlib.contextmanager
def _without_branches() -> Iterator[None]:
    """The branch hooks as they were before them: nothing opened, nothing asked, nothing recorded."""
    from homeport.core import pipeline, semantic
    from homeport.store import browse, search, task_context

    saved: list[tuple[Any, str, Any]] = []

    def put(owner: Any, name: str, value: Any) -> None:
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    class _Nowhere:
        def __init__(self) -> None:
            self.hidden: dict[Any, Any] = {}

        def report(self) -> dict[str, Any]:
            return {}

    @contextlib.contextmanager
    def working_in(*_args: Any, **_kwargs: Any) -> Iterator[_Nowhere]:
        yield _Nowhere()

    stub = type(
        "Stub",
        (),
        {
            "working_in": staticmethod(working_in),
            "hidden": staticmethod(lambda *a: {}),
            "hidden_keys": staticmethod(lambda *a: {}),
            "hidden_keys_of": staticmethod(lambda *a: {}),
            "without_hidden": staticmethod(lambda hits, hidden, limit=None: hits if limit is None else hits[:limit]),
            "note_matching": staticmethod(lambda *a: None),
        },
    )
    for module in (pipeline, semantic, search, task_context, browse, decisions, patterns):
        if hasattr(module, "branches"):
            put(module, "branches", stub)
    try:
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


def per_call_us(run: Callable[[], Any], calls: int) -> float:
    started = time.process_time()
    for _ in range(calls):
        run()
    return (time.process_time() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp).resolve()
        places = {"git": base / "repo", "plain": base / "plain", "hiding": base / "hiding"}
        seed(places["git"], repository=True)
        seed(places["plain"], repository=False)
        seed(places["hiding"], repository=True, branch_items=50)
        runtime = build_runtime(ServeSettings(cwd=base, home=base / "home", allow_roots=(base,)))
        pipeline = CallPipeline(runtime)
        request = LocalRequest()

        def reader(tool: str, root: Path) -> Callable[[], Any]:
            spec, arguments = CATALOG[tool], {**READS[tool], "workspace": str(root)}
            return lambda: pipeline.call_blocking(spec, dict(arguments), request)

        hidden = reader("get_decisions", places["hiding"])()
        assert hidden.get("hidden_on_other_branches") == 50, hidden.get("hidden_on_other_branches")
        rows = [(tool, "git") for tool in READS] + [("get_decisions", "plain"), ("search", "plain")]
        figures: dict[tuple[str, str, str], list[float]] = {}
        for tool, where in rows:
            run = reader(tool, places[where])
            for _ in range(20):  # warm: store open, statements compiled, caches filled
                run()
                with _without_branches():
                    run()
        for number in range(args.rounds):
            for tool, where in rows:
                run = reader(tool, places[where])
                for hooks in ("without", "with") if number % 2 == 0 else ("with", "without"):  # A B, then B A
                    with contextlib.ExitStack() as stack:
                        if hooks == "without":
                            stack.enter_context(_without_branches())
                        figures.setdefault((tool, where, hooks), []).append(per_call_us(run, args.calls))
                if where == "git":
                    hiding = reader(tool, places["hiding"])
                    figures.setdefault((tool, where, "hiding"), []).append(per_call_us(hiding, args.calls))
        runtime.close()
        store_rows = store_level(places["git"], args)
        cold = first_reads(base / "many", args)
    print(f"CPU µs per call, median of {args.rounds} rounds × {args.calls} calls (python {sys.version.split()[0]})")
    print()
    print("| read | workspace | without the hooks | with | change | with 50 hidden |")
    print("|---|---|---:|---:|---:|---:|")
    for tool, where in rows:
        without = statistics.median(figures[(tool, where, "without")])
        with_ = statistics.median(figures[(tool, where, "with")])
        hiding = figures.get((tool, where, "hiding"))
        shown = f"{statistics.median(hiding):.0f}" if hiding else "–"
        change = (with_ / without - 1) * 100
        print(f"| {tool} | {where} | {without:.0f} | {with_:.0f} | {change:+.1f} % | {shown} |")
    print()
    print("| store function | outside a work tree | inside `working_in` (git, nothing scoped) | change |")
    print("|---|---:|---:|---:|")
    for name, (outside, inside) in store_rows.items():
        print(f"| {name} | {outside:.1f} | {inside:.1f} | {(inside / outside - 1) * 100:+.1f} % |")
    print()
    print(
        f"First get_decisions on main after main moved, 20 unmerged branches: {cold[0]:.0f} ms wall "
        f"(median of {cold[2]}); the next one {cold[1]:.2f} ms."
    )


def first_reads(root: Path, args: argparse.Namespace) -> tuple[float, float, int]:
    from homeport.store import Store

    seed(root, repository=True)
    store = Store.open(root, create=False)
    assert store is not None
    for n in range(20):
        git(root, "checkout", "-q", "-b", f"feat/{n}", "main")
        (root / f"f{n}.txt").write_text(f"{n}\n")
        git(root, "add", f"f{n}.txt")
        git(root, "commit", "-q", "-m", f"f{n}")
        with branches.working_in(root):
            for k in range(3):
                decisions.log_decision(store, f"branch {n} decision {k}")
    git(root, "checkout", "-q", "main")
    firsts, nexts = [], []
    for n in range(max(3, args.rounds // 3)):
        (root / "main.txt").write_text(f"{n}\n")
        git(root, "add", "main.txt")
        git(root, "commit", "-q", "-m", f"main {n}")
        for into in (firsts, nexts):
            started = time.perf_counter()
            with branches.working_in(root) as place:
                decisions.get_decisions(store, limit=20)
            into.append((time.perf_counter() - started) * 1000)
            assert place.hidden_on_other_branches == 60
    store.close()
    return statistics.median(firsts), statistics.median(nexts), len(firsts)


def store_level(root: Path, args: argparse.Namespace) -> dict[str, tuple[float, float]]:
    from homeport.store import Store
    from homeport.store import search as word_search

    store = Store.open(root, create=False)
    assert store is not None
    calls = {
        "decisions.get_decisions": lambda: decisions.get_decisions(store, limit=20),
        "search.search": lambda: word_search.search(store, "cache retry", limit=20),
    }
    out: dict[str, tuple[float, float]] = {}
    for name, run in calls.items():

        def inside(run: Callable[[], Any] = run) -> None:
            with branches.working_in(root):
                run()

        outside_us, inside_us = [], []
        for number in range(args.rounds):
            if number % 2:
                inside_us.append(per_call_us(inside, args.calls * 10))
            outside_us.append(per_call_us(run, args.calls * 10))
            if not number % 2:
                inside_us.append(per_call_us(inside, args.calls * 10))
        out[name] = (statistics.median(outside_us), statistics.median(inside_us))
    store.close()
    return out


if __name__ == "__main__":
    main()
