"""How good tidy proposals are on a labelled memory, and what applying them does to retrieval and get_context.

The corpus (bench/tidy/corpus.json, written by bench/tidy/build_corpus.py: 308 items of a fictional shop
backend) labels duplicate pairs, near-misses that must never merge, contradictions, superseded pairs and
stale progress, and 30 tasks with the items that answer them. The script loads it into a fresh SQLite
workspace through the store's own write functions, proposes a cleanup (every kind), applies the
proposal as it is, and measures:

- duplicate precision: the share of proposed merge pairs that are labelled duplicates (target >= 0.95);
- duplicate recall: the share of labelled duplicate pairs the proposal merges (target >= 0.80);
- false merges of near-misses: the share of near-miss pairs merged together (target <= 2 %), and of
  contradiction pairs (must be 0);
- contradictions surfaced, superseded and stale items found (recall of each label);
- retrieval before and after applying: `search` (words) hit@5 and MRR@10 over the 30 tasks, a task
  answered when any item of an answer's duplicate group is found (after a merge only the kept one is);
- get_context tokens before and after, over the same tasks (budget 4,000 tokens each, more than any
  task fills, so the figure is what the memory holds for the task, not the budget).

    python3 bench/tidy_quality.py
    python3 bench/tidy_quality.py --json bench/results/tidy.json

It then proposes a cleanup of the two retrieval sets (bench/retrieval/: quillbill and trailmate, written
for another benchmark and never used to tune tidy) and lists every merge it proposes there: those sets
were not written with duplicates, so each proposed merge is for a reader to judge.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from homeport.errors import ChangesetGuardError
from homeport.store import Store, custom_data, decisions, links, patterns, progress, search, tidy
from homeport.store.schema import progress as progress_table
from homeport.store.task_context import task_context

CORPUS = Path(__file__).with_name("tidy") / "corpus.json"
BUDGET = 4000


def load(store: Store, corpus: dict[str, Any]) -> dict[str, tuple[str, int]]:
    ids: dict[str, tuple[str, int]] = {}
    for item in corpus["items"]:
        kind = item["type"]
        if kind == "decision":
            got = decisions.log_decision(store, item["summary"], rationale=item.get("rationale"))
        elif kind == "system_pattern":
            got = patterns.log_system_pattern(store, item["name"], item["description"])
        elif kind == "progress":
            got = progress.log_progress(store, item["status"], item["description"])
        else:
            got = custom_data.log_custom_data(store, item["category"], item["key"], item["value"])
        ids[item["ref"]] = (kind, got["id"])
        if "updated_days_ago" in item:
            stamp = (datetime.now(UTC) - timedelta(days=item["updated_days_ago"])).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            with store.write() as conn:
                conn.execute(progress_table.update().where(progress_table.c.id == got["id"]).values(updated_at=stamp))
    for old, new in corpus["superseded"]:
        links.link_items(store, *ids[old], *ids[new], "superseded_by")
    return ids


def retrieval(store: Store, corpus: dict[str, Any], ids: dict[str, tuple[str, int]]) -> dict[str, Any]:
    group_of = {k: frozenset(g) for g in corpus["duplicate_groups"] for k in g}
    by_id = {v: k for k, v in ids.items()}
    hits5 = 0
    rr = 0.0
    tokens = 0
    for query in corpus["queries"]:
        wanted = set().union(*(group_of.get(k, frozenset([k])) for k in query["answers"]))
        found = search.search(store, search.plain_words(query["task"]), limit=10)
        found = [h for h in found if (h["type"], h["id"]) not in hidden(store)]
        ranks = [n for n, h in enumerate(found, start=1) if by_id.get((h["type"], h["id"])) in wanted]
        hits5 += bool(ranks and ranks[0] <= 5)
        rr += 1 / ranks[0] if ranks else 0.0
        tokens += task_context(store, query["task"], budget_tokens=BUDGET)["used_tokens"]
    n = len(corpus["queries"])
    return {"hit@5": hits5 / n, "mrr@10": rr / n, "get_context_tokens": tokens}


def hidden(store: Store) -> set[tuple[str, int]]:
    from homeport.store.lifecycle import hidden_of

    return hidden_of(store)


def pairs_of(groups: list[list[str]]) -> set[frozenset[str]]:
    return {frozenset(p) for g in groups for p in itertools.combinations(g, 2)}


def measure() -> dict[str, Any]:
    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp), create=True)
        assert store is not None
        try:
            ids = load(store, corpus)
            keys = {v: k for k, v in ids.items()}
            before = retrieval(store, corpus, ids)
            started = time.perf_counter()
            cs = tidy.propose_cleanup(store)
            propose_ms = (time.perf_counter() - started) * 1000
            clusters = [
                [keys[(i["type"], i["id"])] for i in e["items"]] for e in cs["entries"] if e["kind"] == "duplicate"
            ]
            proposed = pairs_of(clusters)
            labelled = pairs_of(corpus["duplicate_groups"])
            near = [frozenset(p["items"]) for p in corpus["near_misses"]]
            contra = [frozenset(p) for p in corpus["contradictions"]]
            surfaced = {
                frozenset(keys[(i["type"], i["id"])] for i in e["items"])
                for e in cs["entries"]
                if e["kind"] == "contradiction"
            }
            superseded_found = {
                keys[(e["items"][0]["type"], e["items"][0]["id"])] for e in cs["entries"] if e["kind"] == "superseded"
            }
            stale_found = {
                keys[(e["items"][0]["type"], e["items"][0]["id"])] for e in cs["entries"] if e["kind"] == "stale"
            }
            try:
                tidy.apply_changeset(store, cs["id"])
                guard = "not refused"
            except ChangesetGuardError as exc:
                guard = exc.message
            started = time.perf_counter()
            tidy.apply_changeset(store, cs["id"], force=True)
            apply_ms = (time.perf_counter() - started) * 1000
            after = retrieval(store, corpus, ids)
            started = time.perf_counter()
            tidy.revert_changeset(store, cs["id"])
            revert_ms = (time.perf_counter() - started) * 1000
            reverted = retrieval(store, corpus, ids)
        finally:
            store.close()
    false_pairs = sorted(sorted(p) for p in proposed - labelled)
    return {
        "items": len(corpus["items"]),
        "labelled_duplicate_pairs": len(labelled),
        "proposed_merge_pairs": len(proposed),
        "duplicate_precision": len(proposed & labelled) / len(proposed) if proposed else 1.0,
        "duplicate_recall": len(proposed & labelled) / len(labelled),
        "near_miss_pairs": len(near),
        "near_miss_false_merges": sum(p <= c for p in near for c in map(frozenset, clusters)) / len(near),
        "contradiction_pairs_merged": sum(p <= c for p in contra for c in map(frozenset, clusters)),
        "contradictions_surfaced": len(set(contra) & surfaced) / len(contra),
        "contradiction_entries": len(surfaced),
        "superseded_found": len(superseded_found & {old for old, _ in corpus["superseded"]})
        / len(corpus["superseded"]),
        "stale_found": len(stale_found & set(corpus["stale"])) / len(corpus["stale"]),
        "stale_entries": len(stale_found),
        "changeset_items": cs["counts"]["items"],
        "guard_without_force": guard,
        "before": before,
        "after": after,
        "after_revert": reverted,
        "token_reduction": 1 - after["get_context_tokens"] / before["get_context_tokens"],
        "propose_ms": propose_ms,
        "apply_ms": apply_ms,
        "revert_ms": revert_ms,
        "false_merge_pairs": false_pairs,
        "missed_pairs": sorted(sorted(p) for p in labelled - proposed),
    }


def report(r: dict[str, Any]) -> str:
    b, a = r["before"], r["after"]
    lines = [
        f"Corpus: {r['items']} items, {r['labelled_duplicate_pairs']} labelled duplicate pairs, "
        f"{r['near_miss_pairs']} near-miss pairs.",
        "",
        "| measure | value | target |",
        "|---|---|---|",
        f"| duplicate precision ({r['proposed_merge_pairs']} proposed merge pairs) | {r['duplicate_precision']:.3f} "
        "| >= 0.95 |",
        f"| duplicate recall | {r['duplicate_recall']:.3f} | >= 0.80 |",
        f"| near-miss pairs merged | {r['near_miss_false_merges']:.1%} | <= 2 % |",
        f"| contradiction pairs merged | {r['contradiction_pairs_merged']} | 0 |",
        f"| labelled contradictions surfaced ({r['contradiction_entries']} entries) | "
        f"{r['contradictions_surfaced']:.1%} | |",
        f"| superseded items found | {r['superseded_found']:.1%} | |",
        f"| stale progress found ({r['stale_entries']} entries) | {r['stale_found']:.1%} | |",
        f"| search hit@5, before -> after | {b['hit@5']:.3f} -> {a['hit@5']:.3f} | not worse |",
        f"| search MRR@10, before -> after | {b['mrr@10']:.3f} -> {a['mrr@10']:.3f} | not worse |",
        f"| get_context tokens (30 tasks), before -> after | {b['get_context_tokens']:,} -> "
        f"{a['get_context_tokens']:,} ({r['token_reduction']:.1%} fewer) | >= 20 % fewer |",
        f"| after revert: tokens, hit@5 | {r['after_revert']['get_context_tokens']:,}, "
        f"{r['after_revert']['hit@5']:.3f} | as before |",
        "",
        f"The changeset touched {r['changeset_items']} items; without force the guard said: "
        f'"{r["guard_without_force"]}".',
        f"Propose {r['propose_ms']:.0f} ms, apply {r['apply_ms']:.0f} ms, revert {r['revert_ms']:.0f} ms.",
        "",
        f"False merge pairs: {r['false_merge_pairs'] or 'none'}.",
        f"Missed duplicate pairs: {r['missed_pairs'] or 'none'}.",
    ]
    return "\n".join(lines)


def heldout() -> str:
    """Precision, recall and near-miss merges on pairs written after the thresholds were fixed."""
    data = json.loads((CORPUS.parent / "heldout.json").read_text(encoding="utf-8"))
    texts = sorted({t for pair in data["duplicates"] + data["near_misses"] for t in pair})
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp), create=True)
        assert store is not None
        try:
            ids = {decisions.log_decision(store, t)["id"]: t for t in texts}
            cs = tidy.propose_cleanup(store, kinds=["duplicate"])
        finally:
            store.close()
    clusters = [frozenset(ids[i["id"]] for i in e["items"]) for e in cs["entries"] if e["kind"] == "duplicate"]
    proposed = {frozenset(p) for c in clusters for p in itertools.combinations(sorted(c), 2)}
    labelled = {frozenset(p) for p in data["duplicates"]}
    near = [frozenset(p) for p in data["near_misses"]]
    precision = len(proposed & labelled) / len(proposed) if proposed else 1.0
    recall = len(proposed & labelled) / len(labelled)
    merged = sum(any(p <= c for c in clusters) for p in near)
    lines = [
        "",
        f"Held out (bench/tidy/heldout.json, written after tuning, one change since: {len(labelled)} duplicate pairs, "
        f"{len(near)} near-misses, {len(texts)} decisions):",
        "",
        f"- duplicate precision {precision:.3f} ({len(proposed)} proposed pairs), recall {recall:.3f}, "
        f"near-misses merged {merged} of {len(near)}",
    ]
    for pair in sorted(sorted(p) for p in proposed - labelled):
        lines.append(f"  - false merge: {pair}")
    for pair in sorted(sorted(p) for p in labelled - proposed):
        lines.append(f"  - missed: {pair}")
    return "\n".join(lines)


def unlabelled() -> str:
    """The merges and contradictions proposed on memories tidy was not tuned on, for a person to read."""
    lines = ["", "Proposals on the retrieval sets (not used for tuning):", ""]
    root = Path(__file__).with_name("retrieval")
    for name, path in (("quillbill", root / "memory.json"), ("trailmate", root / "trailmate" / "memory.json")):
        if not path.exists():
            continue
        memory = json.loads(path.read_text(encoding="utf-8"))
        with tempfile.TemporaryDirectory() as tmp:
            store = Store.open(Path(tmp), create=True)
            assert store is not None
            try:
                for item in memory["items"]:
                    kind = item["type"]
                    if kind == "decision":
                        decisions.log_decision(
                            store,
                            item["summary"],
                            rationale=item.get("rationale"),
                            implementation_details=item.get("implementation_details"),
                            tags=item.get("tags"),
                        )
                    elif kind == "system_pattern":
                        patterns.log_system_pattern(store, item["name"], item["description"], tags=item.get("tags"))
                    elif kind == "progress":
                        progress.log_progress(store, item["status"], item["description"])
                    else:
                        custom_data.log_custom_data(store, item["category"], item["key"], item["value"])
                cs = tidy.propose_cleanup(store, kinds=["duplicate", "contradiction"])
            finally:
                store.close()
        merges = [e for e in cs["entries"] if e["kind"] == "duplicate"]
        contradictions = [e for e in cs["entries"] if e["kind"] == "contradiction"]
        lines.append(
            f"- {name} ({len(memory['items'])} records): {len(merges)} merges, {len(contradictions)} contradictions"
        )
        for entry in merges:
            lines.append("  - merge: " + " / ".join(repr(i.get("title")) for i in entry["items"]))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args()
    result = measure()
    print(report(result))
    print(heldout())
    print(unlabelled())
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
