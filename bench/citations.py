"""What citations cost on read: a warm check per citation, and reads of items that carry none.

    python3 bench/citations.py [--rounds 15] [--calls 300]

1. Per citation, warm (the file's stat signature, blob and keys already seen): `WorkTree.check` on
   anchors that are fresh, moved within their file, moved to another tracked file, and changed, in a
   git repository of 200 Python files made here. CPU µs per citation, median of the rounds.
2. Through the call pipeline in this process (`CallPipeline.call_blocking`, as the shell runs a tool):
   get_decisions, search and get_context on 200 decisions without citations, with the citation hooks
   and with them replaced by the identity, alternated round by round; then get_decisions(limit=20)
   when every decision cites two spans (the price of checking 40 citations a read).
The issue's bounds: at most 1 ms per citation warm; reads that carry no citations at most 5 % slower.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from homeport.citations.worktree import WorkTree
from homeport.core import ServeSettings, build_runtime, citing
from homeport.core import tools as _tools  # noqa: F401
from homeport.core.catalog import CATALOG
from homeport.core.pipeline import CallPipeline, LocalRequest

FUNCTION = """def handler_{i}(request, retries=3):
    for attempt in range(retries):
        response = send(request, attempt)
        if response.ok:
            return response
    raise GaveUp(request)
"""


def make_repo(root: Path, files: int = 200) -> None:
    (root / "app").mkdir(parents=True)
    for f in range(files):
        (root / "app" / f"mod_{f}.py").write_text("\n\n".join(FUNCTION.format(i=f * 10 + i) for i in range(10)))
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "seed"]):
        subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@e", *args], cwd=root, check=True)


def per_call_us(run: Callable[[], Any], calls: int) -> float:
    started = time.process_time()
    for _ in range(calls):
        run()
    return (time.process_time() - started) / calls * 1e6


@contextlib.contextmanager
def without_hooks() -> Iterator[None]:
    saved = citing.annotate, citing.annotate_hits, citing.one_read
    citing.annotate = lambda call, item_type, items: items  # type: ignore[assignment]
    citing.annotate_hits = lambda call, hits: hits  # type: ignore[assignment]
    citing.one_read = lambda call: contextlib.nullcontext()  # type: ignore[assignment]
    try:
        yield
    finally:
        citing.annotate, citing.annotate_hits, citing.one_read = saved


def warm_checks(root: Path, rounds: int, calls: int) -> dict[str, float]:
    tree = WorkTree(root)
    fresh = tree.anchor("app/mod_5.py", lines="8-13")
    moved = dataclasses.replace(fresh, start=fresh.start + 7, end=fresh.end + 7)  # as if lines were inserted above
    # A span that is in no file at its path any more but, once, in another tracked file.
    elsewhere = dataclasses.replace(tree.anchor("app/mod_7.py", lines="15-20"), path="app/gone.py")
    changed = dataclasses.replace(fresh, keys=(fresh.keys[0], "0" * 16, *fresh.keys[2:]))
    cases = {"fresh": fresh, "moved in its file": moved, "moved to another file": elsewhere, "changed": changed}
    out: dict[str, float] = {}
    for name, anchor in cases.items():
        status = tree.check([anchor])[0].status  # cold: reads, hashes, builds the index once
        samples = [per_call_us(lambda a=anchor: tree.check([a]), calls) for _ in range(rounds)]
        out[f"{name} ({status})"] = statistics.median(samples)
    return out


def reads(root: Path, rounds: int, calls: int) -> list[tuple[str, float, float]]:
    runtime = build_runtime(ServeSettings(cwd=root, home=root.parent / "home", allow_roots=(root.parent,)))
    pipeline = CallPipeline(runtime)
    request = LocalRequest()
    ws = str(root)

    def tool(name: str, **arguments: Any) -> Callable[[], Any]:
        spec = CATALOG[name]
        return lambda: pipeline.call_blocking(spec, {**arguments, "workspace": ws}, request)

    for i in range(200):
        tool("log_decision", summary=f"decision {i} about handlers and retries", rationale="because")()
    rows = {
        "get_decisions (no citations)": tool("get_decisions", limit=20),
        "search (no citations)": tool("search", query="handlers retries", mode="words"),
        "get_context (no citations)": tool("get_context", task="change the retries of handlers"),
    }
    for run in rows.values():
        for _ in range(20):
            run()
            with without_hooks():
                run()
    figures: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in rows}
    for _ in range(rounds):
        for name, run in rows.items():
            with without_hooks():
                figures[name][0].append(per_call_us(run, calls))
            figures[name][1].append(per_call_us(run, calls))
    out = [(name, statistics.median(a), statistics.median(b)) for name, (a, b) in figures.items()]
    cites = [{"path": "app/mod_3.py", "lines": "1-6"}, {"path": "app/mod_4.py", "symbol": "handler_42"}]
    for i in range(20):
        tool("log_decision", summary=f"cited decision {i}", cites=cites)()
    cited = tool("get_decisions", limit=20)
    assert all(d["citation_status"] == "fresh" for d in cited()["decisions"])
    for _ in range(20):
        cited()
    with without_hooks():
        plain = statistics.median(per_call_us(cited, calls // 3) for _ in range(rounds))
    checked = statistics.median(per_call_us(cited, calls // 3) for _ in range(rounds))
    out.append(("get_decisions (20 items × 2 citations)", plain, checked))
    runtime.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve() / "repo"
        make_repo(root)
        checks = warm_checks(root, args.rounds, args.calls * 10)
        read_rows = reads(root, args.rounds, args.calls)
    print(f"CPU µs, median of {args.rounds} rounds (python {sys.version.split()[0]})")
    print()
    print("| one citation, warm | µs |")
    print("|---|---:|")
    for name, us in checks.items():
        print(f"| {name} | {us:.1f} |")
    print()
    print("| read | hooks replaced by the identity | with the hooks | change |")
    print("|---|---:|---:|---:|")
    for name, without, with_ in read_rows:
        print(f"| {name} | {without:.0f} | {with_:.0f} | {(with_ / without - 1) * 100:+.1f} % |")


if __name__ == "__main__":
    main()
