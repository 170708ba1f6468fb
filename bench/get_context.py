"""get_context: latency at 1,000 and 10,000 items, and how often it includes the answer.

The labelled set (tests/fixtures/retrieval_set.json) is the memory of a fictional shop (50 items)
and 50 tasks, each with the item that answers it. Distractors are generated from a fixed seed out of
generic project words and the labelled set's own words, so they compete for the same terms.

    python3 bench/get_context.py                 # both tables
    python3 bench/get_context.py --sizes 10000 --calls 300

Latency: the store function (`task_context`) and the whole tool through the call pipeline, in this
process (resolution, store cache, result shaping), over the 50 tasks round-robin.
Recall: the answer item is among the entries packed within the budget (2,000 tokens by default).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from homeport.store import Store
from homeport.store.batch import MAX_BATCH, batch_log_items
from homeport.store.contexts import update_context
from homeport.store.custom_data import GLOSSARY_CATEGORY
from homeport.store.task_context import task_context

SET_PATH = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "retrieval_set.json"
GENERIC = (
    "refactor module endpoint cache query index migration handler service worker queue template view "
    "model form field admin report export import config setting flag metric alert dashboard log trace "
    "error retry timeout request response header cookie token session user account profile page list "
    "detail filter sort paginate upload download file image thumbnail storage bucket backup restore "
    "release deploy build test fixture mock lint format type check schema table column row join "
    "transaction lock commit rollback customer order item basket price discount coupon invoice tax "
    "shipping carrier label return refund stock camera lens photo condition listing seller buyer email "
    "notification newsletter search catalogue translation locale currency payment provider webhook event "
    "job task cron schedule batch sync api client"
)
KIND_WEIGHTS = (("decision", 4), ("progress", 3), ("system_pattern", 2), ("glossary", 1))


def load_set(path: Path = SET_PATH) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def fill(root: Path, labelled: dict[str, Any], *, distractors: int, seed: int = 7) -> tuple[Store, dict[str, tuple]]:
    """A store under `root` with `distractors` generated items, then the labelled ones (newest).

    Returns the store and the labelled refs as (type, id).
    """
    store = Store.open(root, create=True)
    assert store is not None
    own_words = {w.lower() for i in labelled["items"] for w in re.findall(r"[A-Za-z]{4,}", _text(i))}
    vocabulary = GENERIC.split() + sorted(own_words)
    rng = random.Random(seed)
    generated: dict[str, list[dict[str, Any]]] = {t: [] for t in ("decision", "progress", "system_pattern")}
    generated["custom_data"] = []
    kinds = [k for k, w in KIND_WEIGHTS for _ in range(w)]
    for n in range(distractors):
        words = lambda k: " ".join(rng.choice(vocabulary) for _ in range(k))  # noqa: E731
        kind = rng.choice(kinds)
        if kind == "decision":
            generated["decision"].append({"summary": words(8).capitalize(), "rationale": words(14)})
        elif kind == "progress":
            status = rng.choice(["TODO", "DONE", "IN_PROGRESS"])
            generated["progress"].append({"status": status, "description": words(10)})
        elif kind == "system_pattern":
            generated["system_pattern"].append({"name": f"{words(3)} {n}", "description": words(20)})
        else:
            term = {"category": GLOSSARY_CATEGORY, "key": f"{words(2)} {n}", "value": words(12)}
            generated["custom_data"].append(term)
    for item_type, items in generated.items():
        for start in range(0, len(items), MAX_BATCH):
            batch_log_items(store, item_type, items[start : start + MAX_BATCH])
    update_context(store, "product", content=labelled["product_context"])
    update_context(store, "active", content=labelled["active_context"])
    refs: dict[str, tuple] = {}
    for item in labelled["items"]:
        fields = {k: v for k, v in item.items() if k not in ("ref", "type")}
        if item["type"] == "glossary":
            item_type, fields = "custom_data", {"category": GLOSSARY_CATEGORY, **fields}
        else:
            item_type = item["type"]
        written = batch_log_items(store, item_type, [fields])[0]
        refs[item["ref"]] = (item_type, written["id"])
    return store, refs


def recall(store: Store, labelled: dict[str, Any], refs: dict[str, tuple], budget: int = 2000) -> tuple[float, list]:
    """The share of tasks whose answer is packed within `budget`, and the tasks that missed."""
    misses = []
    for q in labelled["queries"]:
        packed = task_context(store, q["task"], budget_tokens=budget)
        if refs[q["answer"]] not in {(i["type"], i["id"]) for i in packed["items"]}:
            misses.append(q)
    return 1 - len(misses) / len(labelled["queries"]), misses


def _text(item: dict[str, Any]) -> str:
    return " ".join(str(v) for k, v in item.items() if k not in ("ref", "type", "tags"))


def _percentiles(samples: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(samples, n=100)
    return statistics.median(samples), q[94]


def _latencies(fn: Any, tasks: list[str], calls: int) -> list[float]:
    out = []
    for n in range(calls):
        task = tasks[n % len(tasks)]
        start = time.perf_counter()
        fn(task)
        out.append((time.perf_counter() - start) * 1000)
    return out


def _measure(root: Path, store: Store, tasks: list[str], args: argparse.Namespace) -> tuple[tuple, tuple]:
    """p50 and p95 of the store function and of the tool through the call pipeline."""
    from homeport.core import ServeSettings, build_runtime
    from homeport.core.catalog import CATALOG
    from homeport.core.pipeline import CallPipeline, LocalRequest

    runtime = build_runtime(ServeSettings(cwd=Path("/"), workspace=str(root)))
    pipeline, spec, request = CallPipeline(runtime), CATALOG["get_context"], LocalRequest()
    inputs = request.inputs(None)
    try:
        _latencies(lambda t: task_context(store, t, budget_tokens=args.budget), tasks, 50)  # warm up
        direct = _latencies(lambda t: task_context(store, t, budget_tokens=args.budget), tasks, args.calls)
        tool = _latencies(
            lambda t: pipeline.execute(spec, {"task": t, "budget_tokens": args.budget}, request, inputs),
            tasks,
            args.calls,
        )
    finally:
        runtime.close()
    return _percentiles(direct), _percentiles(tool)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="distractor counts, comma-separated")
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--budget", type=int, default=2000)
    args = parser.parse_args()

    labelled = load_set()
    tasks = [q["task"] for q in labelled["queries"]]
    latency_rows, recall_rows = [], []
    for size in [0, *(int(s) for s in args.sizes.split(","))]:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "shop"
            (root / ".git").mkdir(parents=True)
            store, refs = fill(root, labelled, distractors=size)
            share, misses = recall(store, labelled, refs, args.budget)
            recall_rows.append((size + len(labelled["items"]), share, misses))
            if size:
                latency_rows.append((size + len(labelled["items"]), *_measure(root, store, tasks, args)))
            store.close()
    print(f"get_context latency, {args.calls} calls over the 50 labelled tasks, budget {args.budget} tokens\n")
    print("| items | store p50 | store p95 | tool p50 | tool p95 |")
    print("|---:|---:|---:|---:|---:|")
    for items, (d50, d95), (t50, t95) in latency_rows:
        print(f"| {items:,} | {d50:.2f} ms | {d95:.2f} ms | {t50:.2f} ms | {t95:.2f} ms |")
    print(f"\nanswer included within {args.budget} tokens, 50 labelled tasks\n")
    print("| items | included | missed tasks |")
    print("|---:|---:|---|")
    for items, share, misses in recall_rows:
        names = "; ".join(q["answer"] for q in misses) or "-"
        print(f"| {items:,} | {share:.0%} | {names} |")


if __name__ == "__main__":
    main()
