"""Retrieval quality of the memory `search` tool: hit@1, hit@5, hit@10 and MRR by search mode and query kind.

Loads bench/retrieval/memory.json (319 records of a fictional invoicing SaaS) into a fresh workspace
through the real MCP tools (in-memory SDK client, `update_product_context` and `batch_log_items`),
then runs every labelled query of bench/retrieval/queries.json through `search` (limit 10) in each
search mode and scores the ranks of the items labelled relevant.

    python3 bench/retrieval_quality.py                      # every mode the tool offers
    python3 bench/retrieval_quality.py --modes words --misses
    python3 bench/retrieval_quality.py --json bench/results/retrieval.json
    python3 bench/retrieval_quality.py --limit 20           # the first 20 records and their queries (a smoke run)

Modes. The tool's own input schema decides: when `search` declares an argument `mode`, each of
words, semantic and auto that its schema allows is measured with `mode=<name>`; when it declares
none, words is measured without the argument (today's word search) and the others are reported as
"not available". Before measuring a mode other than words, the script waits until the tool reports
no item waiting for its index: any whole-number field of the result whose name contains pending,
not_yet, unembedded or queued, at any depth outside `results`, must be 0 (--wait-timeout, default
600 s; a timeout stops the run with a message).

Scores. A query hits at k when one of its relevant items is among the first k results; MRR is the
mean of 1/rank of the first relevant result within the 10 returned (0 when none). Kinds:
paraphrase (shares no word stem with its answers), synonym, identifier (a code identifier), lexical
(shares words), and negative (nothing in the memory answers it). "shared words" is lexical and
identifier together; "overall" is every query but the negatives. Negatives cannot hit; they are
reported as the share whose result list is empty and the median top-1 score, next to the median
top-1 score of answered queries whose first result is relevant (how far a score cut-off would
separate them). Targets of search by meaning: auto beats words by at least 5 points of hit@10
overall, and loses at most 1 point of hit@10 on the shared-word queries.

--or-baseline adds a reference row, words-or: word search with the query's words joined by OR (the
tool's own path for a query FTS5 cannot parse), so a gain from matching any word rather than every
word can be told apart from a gain from meaning (the paraphrase row).

Prints Markdown; --json PATH also writes every figure and every query's rank per mode.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from homeport.core import ServeSettings, build_runtime
from homeport.server import build_server
from homeport.store.search import plain_words

HERE = Path(__file__).resolve().parent
MEMORY = HERE / "retrieval" / "memory.json"
QUERIES = HERE / "retrieval" / "queries.json"
MODES = ("words", "semantic", "auto")
# --or-baseline: word search with the query's words joined by OR, the tool's own path for queries FTS5
# cannot parse. A reference for the targets: what ranking any word, without meaning, achieves.
OR_BASELINE = "words-or"
REPORT_ORDER = ("words", OR_BASELINE, "semantic", "auto")
KINDS = ("paraphrase", "synonym", "identifier", "lexical")
SHARED_WORDS = ("lexical", "identifier")
K = (1, 5, 10)
PENDING_WORDS = ("pending", "not_yet", "unembedded", "queued")
BATCH = 500


class BenchError(Exception):
    """A run that cannot give figures (the tool refused the memory, or the index never caught up)."""


# -- loading -------------------------------------------------------------------------------------------


def select(memory: dict[str, Any], labelled: list[dict[str, Any]], limit: int | None) -> tuple[list, list]:
    """The first `limit` records and the queries they can answer (relevant ids cut to them), plus every negative."""
    items = memory["items"][:limit] if limit else memory["items"]
    kept = {i["id"] for i in items}
    queries = []
    for q in labelled:
        relevant = [r for r in q["relevant"] if r in kept]
        if q["kind"] == "negative" or relevant:
            queries.append({**q, "relevant": relevant})
    return items, queries


async def load(session: Session, memory: dict[str, Any], items: list[dict[str, Any]]) -> dict[str, tuple[str, int]]:
    """Write the records through the MCP tools; returns {record id: (item type, stored id)}."""
    await session.call("update_product_context", content=memory["product_context"])
    stored: dict[str, tuple[str, int]] = {}
    todo = list(items)
    while todo:
        # Progress children need their parent's stored id: write in waves, parents first.
        ready = [i for i in todo if i["type"] != "progress" or not i.get("parent") or i["parent"] in stored]
        if not ready:
            raise BenchError(f"progress {todo[0]['id']} names a parent that is not in the memory")
        for item_type in ("decision", "system_pattern", "progress", "custom_data"):
            group = [i for i in ready if i["type"] == item_type]
            for start in range(0, len(group), BATCH):
                chunk = group[start : start + BATCH]
                rows = [_fields(i, stored) for i in chunk]
                written = await session.call("batch_log_items", item_type=item_type, items=rows)
                for record, row in zip(chunk, written["items"], strict=True):
                    stored[record["id"]] = (item_type, row["id"])
        todo = [i for i in todo if i["id"] not in stored]
    return stored


def _fields(item: dict[str, Any], stored: dict[str, tuple[str, int]]) -> dict[str, Any]:
    fields = {k: v for k, v in item.items() if k not in ("id", "type", "parent")}
    if item.get("parent"):
        fields["parent_id"] = stored[item["parent"]][1]
    return fields


class Session:
    """A client bound to the benchmark's workspace; a tool error raises BenchError."""

    def __init__(self, client: Client, root: Path) -> None:
        self.client, self.root = client, root

    async def call(self, tool: str, **args: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, {**args, "workspace": str(self.root)})
        if result.is_error:
            raise BenchError(f"{tool} failed: {result.content[0].text}")
        return result.structured_content or {}

    async def search(self, query: str, mode_args: dict[str, Any], limit: int = 10) -> tuple[list | None, dict]:
        """(results, whole structured result); results is None when the tool answered with an error."""
        result = await self.client.call_tool(
            "search", {"query": query, "limit": limit, **mode_args, "workspace": str(self.root)}
        )
        content = result.structured_content or {}
        if result.is_error:
            return None, {"error": result.content[0].text if result.content else str(content)}
        return list(content.get("results", [])), content


# -- modes and the index -------------------------------------------------------------------------------


def offered_modes(input_schema: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """({mode: extra search arguments} measurable, {mode: why not}) from the search tool's input schema."""
    mode = input_schema.get("properties", {}).get("mode")
    if mode is None:
        why = "not available: the search tool has no `mode` argument"
        return {"words": {}}, {m: why for m in MODES if m != "words"}
    allowed = _enum_values(mode, input_schema.get("$defs", {})) or set(MODES)
    usable = {m: {"mode": m} for m in MODES if m in allowed}
    missing = {m: f"not available: `mode` allows {', '.join(sorted(allowed))}" for m in MODES if m not in allowed}
    return usable, missing


def _enum_values(schema: Any, defs: dict[str, Any]) -> set[str]:
    """Every enum or const string reachable from `schema` (anyOf, oneOf, $ref into $defs)."""
    if isinstance(schema, list):
        return set().union(*(_enum_values(s, defs) for s in schema)) if schema else set()
    if not isinstance(schema, dict):
        return set()
    found = {v for v in schema.get("enum", []) if isinstance(v, str)}
    if isinstance(schema.get("const"), str):
        found.add(schema["const"])
    ref = schema.get("$ref", "")
    if ref.startswith("#/$defs/"):
        found |= _enum_values(defs.get(ref.removeprefix("#/$defs/")), defs)
    for key in ("anyOf", "oneOf", "allOf"):
        found |= _enum_values(schema.get(key, []), defs)
    return found


def pending_count(content: Any) -> int | None:
    """Items the index has not caught up with, from any pending-like whole-number field; None if none is reported."""
    total, seen = 0, False
    stack = [content]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("results", "workspace"):
                    continue
                if isinstance(value, int) and not isinstance(value, bool) and any(w in key for w in PENDING_WORDS):
                    total, seen = total + value, True
                elif isinstance(value, dict | list):
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return total if seen else None


async def wait_for_index(session: Session, mode_args: dict[str, Any], timeout: float) -> str:
    """Poll `search` until nothing is pending; returns what was seen. Raises BenchError on timeout."""
    start = time.monotonic()
    while True:
        results, content = await session.search("invoice", mode_args, limit=1)
        if results is None:
            return f"search answered an error while waiting: {content['error']}"
        pending = pending_count(content)
        if pending is None:
            return "the tool reports no pending count"
        if pending == 0:
            return f"index complete after {time.monotonic() - start:.1f} s"
        if time.monotonic() - start > timeout:
            raise BenchError(
                f"{pending} item(s) still not indexed after {timeout:.0f} s in mode {mode_args.get('mode')}; "
                "raise --wait-timeout, or check that the index is being built"
            )
        await anyio.sleep(0.5)


# -- scoring -----------------------------------------------------------------------------------------


async def run_mode(
    session: Session,
    mode_args: dict[str, Any],
    queries: list[dict[str, Any]],
    stored: dict[str, tuple[str, int]],
    *,
    any_word: bool = False,
) -> dict[str, Any]:
    per_query = []
    start = time.perf_counter()
    for q in queries:
        text = plain_words(q["text"]) if any_word else q["text"]
        results, content = await session.search(text, mode_args)
        wanted = {stored[r] for r in q["relevant"]}
        hits = [(r["type"], r["id"]) for r in results or []]
        rank = next((n for n, hit in enumerate(hits, start=1) if hit in wanted), None)
        per_query.append(
            {
                "id": q["id"],
                "kind": q["kind"],
                "text": q["text"],
                "rank": rank,
                "results": len(hits),
                "top_score": (results[0].get("score") if results else None),
                "top_relevant": rank == 1,
                "error": content.get("error"),
            }
        )
    seconds = time.perf_counter() - start
    return {"queries": per_query, "ms_per_query": seconds * 1000 / max(1, len(queries)), **figures(per_query)}


def figures(per_query: list[dict[str, Any]]) -> dict[str, Any]:
    groups: dict[str, list[dict[str, Any]]] = {k: [q for q in per_query if q["kind"] == k] for k in KINDS}
    groups["shared words"] = [q for q in per_query if q["kind"] in SHARED_WORDS]
    groups["overall"] = [q for q in per_query if q["kind"] != "negative"]
    negatives = [q for q in per_query if q["kind"] == "negative"]
    answered_top = [q["top_score"] for q in per_query if q["top_relevant"] and q["top_score"] is not None]
    negative_top = [q["top_score"] for q in negatives if q["top_score"] is not None]
    return {
        "groups": {name: score(rows) for name, rows in groups.items()},
        "negatives": {
            "n": len(negatives),
            "empty": sum(q["results"] == 0 for q in negatives),
            "median_top_score": statistics.median(negative_top) if negative_top else None,
            "median_top_score_of_relevant_hits": statistics.median(answered_top) if answered_top else None,
        },
        "errors": sum(q["error"] is not None for q in per_query),
    }


def score(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    out: dict[str, Any] = {"n": n}
    for k in K:
        out[f"hit@{k}"] = sum(q["rank"] is not None and q["rank"] <= k for q in rows) / n if n else None
    out["mrr"] = sum(1 / q["rank"] for q in rows if q["rank"]) / n if n else None
    return out


def targets(modes: dict[str, Any]) -> list[dict[str, Any]]:
    words, auto = modes.get("words", {}).get("groups"), modes.get("auto", {}).get("groups")
    rows = [
        ("auto hit@10 overall ≥ words + 5 points", "overall", 5.0),
        ("auto hit@10 on shared-word queries ≥ words − 1 point", "shared words", -1.0),
    ]
    out = []
    for label, group, margin in rows:
        if not words or not auto or words[group]["hit@10"] is None:
            out.append({"target": label, "words": None, "auto": None, "verdict": "not measured (auto not available)"})
            continue
        w, a = 100 * words[group]["hit@10"], 100 * auto[group]["hit@10"]
        out.append({"target": label, "words": w, "auto": a, "verdict": "meets" if a - w >= margin else "misses"})
    return out


# -- report ------------------------------------------------------------------------------------------


def pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def report(result: dict[str, Any]) -> str:
    modes, lines = result["modes"], []
    lines.append(
        f"Retrieval quality of `search`: {result['items']} records, {result['queries']} queries, "
        f"limit 10 per search (hit@k in %, MRR over the first 10)\n"
    )
    for mode in (m for m in REPORT_ORDER if m in modes):
        m = modes[mode]
        state = f"{m['ms_per_query']:.2f} ms per query" if "groups" in m else m["note"]
        if mode == OR_BASELINE:
            state += " (words mode, the query's words joined by OR; a reference, not a mode)"
        extra = f"; {m['index']}" if m.get("index") else ""
        errors = f"; {m['errors']} queries answered with an error" if m.get("errors") else ""
        lines.append(f"- **{mode}**: {state}{extra}{errors}")
    lines.append("\n| queries | n | mode | hit@1 | hit@5 | hit@10 | MRR |")
    lines.append("| :--- | ---: | :--- | ---: | ---: | ---: | ---: |")
    for group in (*KINDS, "shared words", "overall"):
        for mode in (m for m in REPORT_ORDER if m in modes):
            g = modes[mode].get("groups", {}).get(group)
            if g is None:
                continue
            mrr = "–" if g["mrr"] is None else f"{g['mrr']:.3f}"
            row = [group, g["n"], mode, pct(g["hit@1"]), pct(g["hit@5"]), pct(g["hit@10"]), mrr]
            lines.append("| " + " | ".join(str(c) for c in row) + " |")
    lines.append("\nNegative queries (nothing relevant exists):\n")
    lines.append("| mode | n | empty result list | median top-1 score | median top-1 score of relevant first hits |")
    lines.append("| :--- | ---: | ---: | ---: | ---: |")
    for mode in (m for m in REPORT_ORDER if m in modes):
        neg = modes[mode].get("negatives")
        if neg:
            cells = [neg["median_top_score"], neg["median_top_score_of_relevant_hits"]]
            scores = ["–" if s is None else f"{s:.3g}" for s in cells]
            lines.append(f"| {mode} | {neg['n']} | {neg['empty']} / {neg['n']} | {scores[0]} | {scores[1]} |")
    lines.append("\nTargets of search by meaning:\n")
    lines.append("| target | words | auto | verdict |")
    lines.append("| :--- | ---: | ---: | :--- |")
    for t in result["targets"]:
        w = "–" if t["words"] is None else f"{t['words']:.1f}"
        a = "–" if t["auto"] is None else f"{t['auto']:.1f}"
        lines.append(f"| {t['target']} | {w} | {a} | {t['verdict']} |")
    return "\n".join(lines)


def misses(result: dict[str, Any]) -> str:
    lines = ["\nQueries without a relevant item in the first 10:"]
    for mode in (m for m in REPORT_ORDER if m in result["modes"]):
        rows = [q for q in result["modes"][mode].get("queries", []) if q["kind"] != "negative" and q["rank"] is None]
        if "queries" in result["modes"][mode]:
            lines.append(f"\n{mode} ({len(rows)}):")
            lines += [f"- {q['id']} [{q['kind']}] {q['text']}" for q in rows]
    return "\n".join(lines)


# -- main --------------------------------------------------------------------------------------------


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    memory = json.loads(Path(args.memory).read_text(encoding="utf-8"))
    labelled = json.loads(Path(args.queries).read_text(encoding="utf-8"))["queries"]
    items, queries = select(memory, labelled, args.limit)
    with tempfile.TemporaryDirectory(prefix="homeport-retrieval-") as tmp:
        root = Path(tmp) / "quillbill"
        (root / ".git").mkdir(parents=True)
        runtime = build_runtime(ServeSettings(cwd=Path("/"), home=Path(tmp), workspace=str(root)))
        try:
            async with Client(build_server(runtime)) as client:
                session = Session(client, root)
                tools = {t.name: t for t in (await client.list_tools()).tools}
                usable, missing = offered_modes(tools["search"].input_schema)
                stored = await load(session, memory, items)
                modes: dict[str, Any] = {m: {"note": why} for m, why in missing.items()}
                for mode in MODES:
                    if mode not in usable or mode not in args.modes:
                        modes.setdefault(mode, {"note": "not requested (--modes)"})
                        continue
                    index = None
                    if mode != "words":
                        index = await wait_for_index(session, usable[mode], args.wait_timeout)
                    modes[mode] = {"arguments": usable[mode], "index": index}
                    modes[mode].update(await run_mode(session, usable[mode], queries, stored))
                    print(f"{mode}: done", file=sys.stderr, flush=True)
                    if mode == "words" and args.or_baseline:
                        baseline = await run_mode(session, usable[mode], queries, stored, any_word=True)
                        modes[OR_BASELINE] = {"arguments": usable[mode], "index": None, **baseline}
                modes = {m: modes[m] for m in REPORT_ORDER if m in modes}
        finally:
            runtime.close()
    return {
        "command": " ".join(["python3", "bench/retrieval_quality.py", *args.argv]),
        "items": len(items),
        "queries": len(queries),
        "kinds": {k: sum(q["kind"] == k for q in queries) for k in (*KINDS, "negative")},
        "modes": modes,
        "targets": targets(modes),
    }


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modes", default=",".join(MODES), help="comma-separated modes to measure (default: all three)")
    p.add_argument("--limit", type=int, help="load only the first N records and run only the queries they answer")
    p.add_argument("--json", metavar="PATH", help="also write every figure and each query's rank per mode here")
    p.add_argument("--misses", action="store_true", help="list, per mode, the queries with no relevant item in 10")
    p.add_argument(
        "--or-baseline",
        action="store_true",
        help=f"with words, also measure {OR_BASELINE}: the query's words joined by OR (any word may match)",
    )
    p.add_argument("--wait-timeout", type=float, default=600.0, help="seconds to wait for the index (default 600)")
    p.add_argument("--memory", default=str(MEMORY), help=argparse.SUPPRESS)
    p.add_argument("--queries", default=str(QUERIES), help=argparse.SUPPRESS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    args.argv = argv
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in args.modes if m not in MODES]
    if unknown:
        print(f"unknown mode(s) {', '.join(unknown)}; use any of {', '.join(MODES)}", file=sys.stderr)
        return 2
    if args.limit is not None and args.limit < 1:
        print("--limit must be at least 1", file=sys.stderr)
        return 2
    try:
        result = anyio.run(measure, args)
    except BenchError as exc:
        print(f"retrieval_quality: {exc}", file=sys.stderr)
        return 1
    print(report(result))
    if args.misses:
        print(misses(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
