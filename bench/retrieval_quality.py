"""Retrieval quality of the memory `search` tool on two labelled sets, by search mode and query kind.

Each set (bench/retrieval/: quillbill, 319 records of a fictional invoicing SaaS; trailmate, 158
records of a fictional offline hiking app, logged in 26 working sessions) is loaded into a fresh
workspace through the real MCP tools (in-memory SDK client, `update_product_context` and
`batch_log_items`); every labelled query then runs through `search` (limit 10) in each search mode.

    python3 bench/retrieval_quality.py                      # both sets, every mode the tool offers
    python3 bench/retrieval_quality.py --set trailmate --modes words --misses
    python3 bench/retrieval_quality.py --json bench/results/retrieval.json
    python3 bench/retrieval_quality.py --limit 20           # the first 20 records and their queries (a smoke run)

Modes. The tool's own input schema decides: when `search` declares an argument `mode`, each of
words, semantic and auto that its schema allows is measured with `mode=<name>`; when it declares
none, words is measured without the argument (today's word search) and the others are reported as
"not available". Before measuring a mode other than words, the script waits until the tool reports
no item waiting for its index: any whole-number field of the result whose name contains pending,
not_yet, unembedded or queued, at any depth outside `results`, must be 0 (--wait-timeout, default
600 s; a timeout stops the run with a message).

Scores, over the 10 results of each query, at item level and at session level (a result's session
is the group its record came from: a working conversation in trailmate, a topic in quillbill; see
bench/retrieval/make_memory.py):

- any@k (item hit@k): one of the query's relevant items is among the first k results;
- coverage@k: the share of the query's relevant items among the first k (recall@k);
- session any@k / coverage@k: the same with the sessions of the relevant items, a session counting
  as found when any result of it is among the first k;
- MRR: the mean of 1/rank of the first relevant result (0 when none in the 10), for items and for
  sessions.

Kinds: paraphrase (shares no word stem with its answers), synonym, identifier (a code identifier),
lexical (shares words), and negative (nothing in the memory answers it). "shared words" is lexical
and identifier together; "overall" is every query but the negatives. Negatives cannot hit; they are
reported as the share whose result list is empty and the median top-1 score, next to the median
top-1 score of answered queries whose first result is relevant (how far a score cut-off would
separate them). Targets of search by meaning, on each set: auto beats words by at least 15 points of
hit@10 overall, and never loses on the shared-word queries (its hit@10 there is at least words', and
no shared-word query that words finds in its first 10 is missing from auto's).

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
# name: (memory.json, queries.json); bench/retrieval/make_memory.py writes them.
SETS = {
    "quillbill": (HERE / "retrieval" / "memory.json", HERE / "retrieval" / "queries.json"),
    "trailmate": (HERE / "retrieval" / "trailmate" / "memory.json", HERE / "retrieval" / "trailmate" / "queries.json"),
}
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
    # The benchmark's own keys (id, session) are never stored: search must not see the answer's group.
    fields = {k: v for k, v in item.items() if k not in ("id", "type", "parent", "session")}
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
    sessions: dict[str, str],
    *,
    any_word: bool = False,
) -> dict[str, Any]:
    """Every query through `search`; `sessions` maps a record id to its session."""
    record_of = {key: record for record, key in stored.items()}
    per_query = []
    start = time.perf_counter()
    for q in queries:
        text = plain_words(q["text"]) if any_word else q["text"]
        results, content = await session.search(text, mode_args)
        found = [record_of.get((r["type"], r["id"])) for r in results or []]
        per_query.append(
            {
                "id": q["id"],
                "kind": q["kind"],
                "text": q["text"],
                **ranks(found, q["relevant"], sessions),
                "results": len(found),
                "top_score": (results[0].get("score") if results else None),
                "error": content.get("error"),
            }
        )
    seconds = time.perf_counter() - start
    return {"queries": per_query, "ms_per_query": seconds * 1000 / max(1, len(queries)), **figures(per_query)}


def ranks(found: Sequence[str | None], relevant: Sequence[str], sessions: dict[str, str]) -> dict[str, Any]:
    """Where the relevant items and their sessions are in `found` (record ids, best first; None for an
    item that is not one of the set's records): `rank` of the first relevant item, `item_ranks` of each
    relevant item (None when not found), and the same for sessions."""
    position = {}
    for n, record in enumerate(found, start=1):
        if record is not None:
            position.setdefault(record, n)
    session_position: dict[str, int] = {}
    for n, record in enumerate(found, start=1):
        if record is not None:
            session_position.setdefault(sessions[record], n)
    wanted_sessions = sorted({sessions[r] for r in relevant})
    item_ranks = [position.get(r) for r in relevant]
    session_ranks = [session_position.get(s) for s in wanted_sessions]
    return {
        "rank": min((r for r in item_ranks if r), default=None),
        "item_ranks": item_ranks,
        "session_rank": min((r for r in session_ranks if r), default=None),
        "session_ranks": session_ranks,
        "top_relevant": bool(found) and found[0] in relevant,
    }


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
    """hit@k (any@k) and coverage@k of items and of sessions, and both MRRs, over `rows`."""
    n = len(rows)
    out: dict[str, Any] = {"n": n}
    for level, first, each in (("", "rank", "item_ranks"), ("session ", "session_rank", "session_ranks")):
        for k in K:
            out[f"{level}hit@{k}"] = sum(q[first] is not None and q[first] <= k for q in rows) / n if n else None
            out[f"{level}coverage@{k}"] = (
                sum(sum(r is not None and r <= k for r in q[each]) / len(q[each]) for q in rows) / n if n else None
            )
        out[f"{level}mrr"] = sum(1 / q[first] for q in rows if q[first]) / n if n else None
    return out


# What search by meaning must achieve on each set (issue 30): points of hit@10 of auto over words.
AUTO_GAIN = 15.0


def targets(modes: dict[str, Any]) -> list[dict[str, Any]]:
    words, auto = modes.get("words", {}), modes.get("auto", {})
    if "groups" not in words or "groups" not in auto:
        why = "not measured (words and auto are both needed)"
        return [{"target": t, "words": None, "auto": None, "verdict": why} for t in (_GAIN_LABEL, _SHARED_LABEL)]
    out = []
    w, a = 100 * words["groups"]["overall"]["hit@10"], 100 * auto["groups"]["overall"]["hit@10"]
    out.append({"target": _GAIN_LABEL, "words": w, "auto": a, "verdict": "meets" if a - w >= AUTO_GAIN else "misses"})
    w, a = 100 * words["groups"]["shared words"]["hit@10"], 100 * auto["groups"]["shared words"]["hit@10"]
    lost = lost_queries(words, auto)
    verdict = "meets" if a >= w and not lost else f"misses ({len(lost)} lost: {', '.join(lost)})" if lost else "misses"
    out.append({"target": _SHARED_LABEL, "words": w, "auto": a, "verdict": verdict})
    return out


_GAIN_LABEL = f"auto hit@10 overall ≥ words + {AUTO_GAIN:.0f} points"
_SHARED_LABEL = "auto never loses a shared-word query words finds (hit@10)"


def lost_queries(words: dict[str, Any], auto: dict[str, Any]) -> list[str]:
    """Shared-word queries that words finds in its 10 and auto does not."""
    auto_rank = {q["id"]: q["rank"] for q in auto["queries"]}
    return [q["id"] for q in words["queries"] if q["kind"] in SHARED_WORDS and q["rank"] and not auto_rank[q["id"]]]


# -- report ------------------------------------------------------------------------------------------


def report(name: str, result: dict[str, Any]) -> str:
    """One set's figures as Markdown."""
    modes, lines = result["modes"], []
    lines.append(
        f"### {name}: {result['items']} records in {result['sessions']} sessions, {result['queries']} queries, "
        f"limit 10 per search\n"
    )
    for mode in (m for m in REPORT_ORDER if m in modes):
        m = modes[mode]
        state = f"{m['ms_per_query']:.2f} ms per query" if "groups" in m else m["note"]
        if mode == OR_BASELINE:
            state += " (words mode, the query's words joined by OR; a reference, not a mode)"
        extra = f"; {m['index']}" if m.get("index") else ""
        errors = f"; {m['errors']} queries answered with an error" if m.get("errors") else ""
        lines.append(f"- **{mode}**: {state}{extra}{errors}")
    lines.append(
        "\nItems: any@k (hit@k) and coverage@k in %, MRR. Sessions: the same over the relevant items' sessions.\n"
    )
    lines.append(
        "| queries | n | mode | any@1 | any@5 | any@10 | cov@5 | cov@10 | MRR "
        "| s any@1 | s any@5 | s any@10 | s cov@10 | s MRR |"
    )
    lines.append("| :--- | ---: | :--- |" + " ---: |" * 11)
    for group in (*KINDS, "shared words", "overall"):
        for mode in (m for m in REPORT_ORDER if m in modes):
            g = modes[mode].get("groups", {}).get(group)
            if g is None:
                continue
            cells = [pct(g[f"hit@{k}"]) for k in K] + [pct(g["coverage@5"]), pct(g["coverage@10"]), mrr(g["mrr"])]
            cells += [pct(g[f"session hit@{k}"]) for k in K] + [pct(g["session coverage@10"]), mrr(g["session mrr"])]
            lines.append("| " + " | ".join(str(c) for c in [group, g["n"], mode, *cells]) + " |")
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


def pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def mrr(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def misses(name: str, result: dict[str, Any]) -> str:
    lines = [f"\n{name}: queries without a relevant item in the first 10:"]
    for mode in (m for m in REPORT_ORDER if m in result["modes"]):
        rows = [q for q in result["modes"][mode].get("queries", []) if q["kind"] != "negative" and q["rank"] is None]
        if "queries" in result["modes"][mode]:
            lines.append(f"\n{mode} ({len(rows)}):")
            lines += [f"- {q['id']} [{q['kind']}] {q['text']}" for q in rows]
    return "\n".join(lines)


# -- main --------------------------------------------------------------------------------------------


async def measure_set(name: str, args: argparse.Namespace) -> dict[str, Any]:
    memory_path, queries_path = SETS[name]
    memory = json.loads(memory_path.read_text(encoding="utf-8"))
    labelled = json.loads(queries_path.read_text(encoding="utf-8"))["queries"]
    items, queries = select(memory, labelled, args.limit)
    sessions = {i["id"]: i["session"] for i in items}
    with tempfile.TemporaryDirectory(prefix="homeport-retrieval-") as tmp:
        root = Path(tmp) / name
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
                    modes[mode].update(await run_mode(session, usable[mode], queries, stored, sessions))
                    print(f"{name} {mode}: done", file=sys.stderr, flush=True)
                    if mode == "words" and args.or_baseline:
                        baseline = await run_mode(session, usable[mode], queries, stored, sessions, any_word=True)
                        modes[OR_BASELINE] = {"arguments": usable[mode], "index": None, **baseline}
                modes = {m: modes[m] for m in REPORT_ORDER if m in modes}
        finally:
            runtime.close()
    return {
        "items": len(items),
        "sessions": len(set(sessions.values())),
        "queries": len(queries),
        "kinds": {k: sum(q["kind"] == k for q in queries) for k in (*KINDS, "negative")},
        "modes": modes,
        "targets": targets(modes),
    }


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    sets = {name: await measure_set(name, args) for name in args.sets}
    return {"command": " ".join(["python3", "bench/retrieval_quality.py", *args.argv]), "sets": sets}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--set", action="append", choices=sorted(SETS), help="only this labelled set (default: both)")
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
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    args.argv = argv
    args.sets = args.set or list(SETS)
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
    print(f"Retrieval quality of `search` ({result['command']})\n")
    for name, figures_of_set in result["sets"].items():
        print(report(name, figures_of_set) + "\n")
        if args.misses:
            print(misses(name, figures_of_set))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
