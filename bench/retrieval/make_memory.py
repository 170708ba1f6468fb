"""Write memory.json and queries.json of the retrieval benchmark's two labelled sets from their records.

Two sets, written by hand, of two different projects' memories:

- **quillbill** (this folder: _records_a.py decisions; _records_b.py patterns, progress, glossary,
  other custom data; _queries.py) as the team of a fictional invoicing SaaS would record them, by
  topic. Its records were not logged in conversations, so its *session* (the group an item came
  from) is its topic: a decision's or pattern's first tag, the top of a progress entry's parent
  chain, a custom data item's category.
- **trailmate** (trailmate/_records.py, trailmate/_queries.py): a fictional offline hiking app for
  Android and iOS, logged session by session: each item names the working conversation in which an
  agent logged it (`session`).

The session is the benchmark's grouping, never stored. This script gives every query a stable id,
checks the set and writes the two JSON files that bench/retrieval_quality.py and
tests/test_retrieval_set.py read:

    python3 bench/retrieval/make_memory.py                    # rewrite both sets' files
    python3 bench/retrieval/make_memory.py --check            # only check; exit 1 when a set breaks a rule
    python3 bench/retrieval/make_memory.py --set trailmate    # one set

Rules checked: ids unique, every item in a session, every progress parent logged before its
children, every labelled id exists, no duplicate query text, the minimum count of items and of each
kind, that a lexical or identifier query shares a word stem with every answer, and that a
paraphrase query shares no word stem with any of its answers (stems by SQLite's own porter
tokenizer, the one the search index uses, less stop words).
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _queries as quillbill_queries  # noqa: E402
from _records_a import DECISIONS  # noqa: E402
from _records_b import GLOSSARY, OTHER_DATA, PATTERNS, PROGRESS  # noqa: E402
from trailmate import _queries as trailmate_queries  # noqa: E402
from trailmate import _records as trailmate_records  # noqa: E402

MEMORY_PATH = HERE / "memory.json"
QUERIES_PATH = HERE / "queries.json"
KINDS = {"paraphrase": 40, "synonym": 20, "identifier": 20, "lexical": 40, "negative": 20}
MIN_ITEMS = 300
# The second set is smaller: a project half a year old.
TRAILMATE_KINDS = {"paraphrase": 30, "synonym": 15, "identifier": 15, "lexical": 25, "negative": 10}
TRAILMATE_MIN_ITEMS = 150
# Kinds whose queries share words with every answer.
SHARED_WORD_KINDS = ("lexical", "identifier")
# Words that carry no topic; a paraphrase may share these with its answer.
_STOP_TEXT = """
    a an the and or but if of to in on at by for from with without into onto about as is are was were be been
    being do does did done have has had having can could should would will shall may might must we our us
    you your i me my it its this that these those there here what which who whom whose when where why how
    not no nor so than then too very just only also any all each every some such same other another own
    up down out off over under again further once after before ever never one them they their through while
    across between s t
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())

PRODUCT_CONTEXT = {
    "name": "Quillbill",
    "goal": "Invoicing for small agencies and freelancers in Europe: create, send and get paid for invoices, "
    "with e-invoicing and tax rules handled.",
    "stack": "Python 3.12, FastAPI, SQLAlchemy 2, PostgreSQL 16, Redis, Dramatiq; React + TypeScript + Vite; "
    "AWS ECS Fargate in eu-central-1; Stripe Billing and Stripe Connect; Postmark",
    "team": "five engineers, one designer",
}


def items() -> list[dict[str, Any]]:
    """Quillbill's records, each with its session (its topic, see the module docstring)."""
    records = [*DECISIONS, *PATTERNS, *PROGRESS, *GLOSSARY, *OTHER_DATA]
    by_id = {r["id"]: r for r in records}
    return [{**r, "session": topic_session(r, by_id)} for r in records]


def topic_session(item: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> str:
    if item["type"] == "custom_data":
        return f"data:{item['category']}"
    if item["type"] == "progress":
        top = item
        while top.get("parent"):
            top = by_id[top["parent"]]
        return f"progress:{top['id']}"
    return f"topic:{item['tags'][0]}" if item.get("tags") else f"topic:{item['type']}"


def queries(source: Any = quillbill_queries) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    labelled = [
        ("paraphrase", source.PARAPHRASE),
        ("synonym", source.SYNONYM),
        ("identifier", source.IDENTIFIER),
        ("lexical", source.LEXICAL),
    ]
    for kind, rows in labelled:
        out += [{"kind": kind, "text": text, "relevant": ids} for text, ids in rows]
    out += [{"kind": "negative", "text": text, "relevant": []} for text in source.NEGATIVE]
    return [{"id": f"q{n:03d}", **q} for n, q in enumerate(out, start=1)]


def item_text(item: dict[str, Any]) -> str:
    """Every text the search index holds for the item (title, body, tags; custom data as it is indexed)."""
    if item["type"] == "custom_data":
        value = item["value"]
        body = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
        return f"{item['category']}: {item['key']}\n{body}"
    fields = ("summary", "rationale", "implementation_details", "name", "description", "status")
    return "\n".join([*(item[f] for f in fields if item.get(f)), *item.get("tags", [])])


def content_stems(text: str, conn: sqlite3.Connection | None = None) -> set[str]:
    """The porter stems FTS5 ('porter unicode61', as the search index) makes of `text`, less stop words."""
    own = conn is None
    conn = conn or sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS _t USING fts5(x, tokenize='porter unicode61')")
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS _v USING fts5vocab(_t, 'row')")
        conn.execute("DELETE FROM _t")
        words = " ".join(w for w in re.findall(r"\w+", text.lower()) if w not in STOP_WORDS)
        conn.execute("INSERT INTO _t (x) VALUES (?)", (words,))
        return {row[0] for row in conn.execute("SELECT term FROM _v")}
    finally:
        if own:
            conn.close()


def problems(
    memory: dict[str, Any],
    labelled: list[dict[str, Any]],
    *,
    min_items: int = MIN_ITEMS,
    kinds: dict[str, int] = KINDS,
) -> list[str]:
    """Every rule the set breaks, as sentences; empty when it is sound."""
    found: list[str] = []
    by_id: dict[str, dict[str, Any]] = {}
    for item in memory["items"]:
        if item["id"] in by_id:
            found.append(f"item id {item['id']} is used twice")
        if not isinstance(item.get("session"), str) or not item["session"]:
            found.append(f"item {item['id']} names no session")
        if item["type"] == "progress" and item.get("parent") and item["parent"] not in by_id:
            found.append(f"progress {item['id']} names parent {item['parent']} that is not logged before it")
        by_id[item["id"]] = item
    if len(by_id) < min_items:
        found.append(f"{len(by_id)} items, fewer than {min_items}")
    texts: set[str] = set()
    counts = dict.fromkeys(kinds, 0)
    conn = sqlite3.connect(":memory:")
    for q in labelled:
        if q["kind"] not in kinds:
            found.append(f"{q['id']} has kind {q['kind']!r}, not one of {', '.join(kinds)}")
            continue
        counts[q["kind"]] += 1
        norm = " ".join(q["text"].lower().split())
        if norm in texts:
            found.append(f"{q['id']} repeats the text {q['text']!r}")
        texts.add(norm)
        missing = [r for r in q["relevant"] if r not in by_id]
        if missing:
            found.append(f"{q['id']} names unknown item(s) {', '.join(missing)}")
        if (q["kind"] == "negative") != (not q["relevant"]):
            found.append(f"{q['id']}: only negative queries have no relevant items")
        if q["kind"] == "paraphrase":
            stems = content_stems(q["text"], conn)
            for ref in q["relevant"]:
                shared = stems & content_stems(item_text(by_id[ref]), conn) if ref in by_id else set()
                if shared:
                    found.append(f"{q['id']} ({q['text']!r}) shares {sorted(shared)} with {ref}")
        if q["kind"] in SHARED_WORD_KINDS:
            stems = content_stems(q["text"], conn)
            for ref in q["relevant"]:
                if ref in by_id and not stems & content_stems(item_text(by_id[ref]), conn):
                    found.append(f"{q['id']} ({q['text']!r}) is {q['kind']} but shares no word with {ref}")
    conn.close()
    found += [f"{counts[k]} {k} queries, fewer than {n}" for k, n in kinds.items() if counts[k] < n]
    return found


QUERIES_ABOUT = (
    "Labelled queries over memory.json. `relevant` lists the ids of the items that answer the "
    "query (any of them counts as a hit); negative queries have none. Kinds: paraphrase (shares no word "
    "stem with its answers), synonym (other words for the key terms), identifier (a code identifier), "
    "lexical (shares words with the answer), negative (nothing in the memory answers it)."
)


def build(name: str = "quillbill") -> tuple[dict[str, Any], dict[str, Any]]:
    """(memory, labelled queries) of the set `name` (see SETS)."""
    if name == "trailmate":
        memory = {
            "about": "The project memory of Trailmate, a fictional offline hiking app for Android and iOS, as "
            "an agent logged it over 26 working sessions: decisions, system patterns, progress, a glossary and "
            "other custom data. `id` is the benchmark's stable key for each item and `session` the conversation "
            "it was logged in; neither is stored. Written by bench/retrieval/make_memory.py.",
            "product_context": trailmate_records.PRODUCT_CONTEXT,
            "sessions": [{"id": sid, "date": day, "about": about} for sid, day, about, _ in trailmate_records.SESSIONS],
            "items": trailmate_records.items(),
        }
        return memory, {"about": QUERIES_ABOUT, "queries": queries(trailmate_queries)}
    memory = {
        "about": "The project memory of Quillbill, a fictional invoicing SaaS, as its team would record it: "
        "decisions, system patterns, progress (some nested through `parent`), a glossary (custom data in "
        "ProjectGlossary) and other custom data. `id` is the benchmark's stable key for each item; it is not "
        "stored. `session` is the topic group the item belongs to (its first tag, the top of its progress "
        "chain, or its category), the benchmark's grouping, not stored either. Written by "
        "bench/retrieval/make_memory.py.",
        "product_context": PRODUCT_CONTEXT,
        "items": items(),
    }
    return memory, {"about": QUERIES_ABOUT, "queries": queries()}


# name: (memory.json, queries.json, minimum items, minimum queries of each kind)
SETS: dict[str, tuple[Path, Path, int, dict[str, int]]] = {
    "quillbill": (MEMORY_PATH, QUERIES_PATH, MIN_ITEMS, KINDS),
    "trailmate": (
        HERE / "trailmate" / "memory.json",
        HERE / "trailmate" / "queries.json",
        TRAILMATE_MIN_ITEMS,
        TRAILMATE_KINDS,
    ),
}


def set_problems(name: str, memory: dict[str, Any], labelled: list[dict[str, Any]]) -> list[str]:
    """`problems` with the set's own minimums."""
    _, _, min_items, kinds = SETS[name]
    return problems(memory, labelled, min_items=min_items, kinds=kinds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="check the records; write nothing")
    parser.add_argument("--set", choices=sorted(SETS), action="append", help="only this set (default: both)")
    args = parser.parse_args()
    status = 0
    for name in args.set or list(SETS):
        memory, labelled = build(name)
        found = set_problems(name, memory, labelled["queries"])
        for line in found:
            print(f"{name}: {line}", file=sys.stderr)
        if found:
            status = 1
            continue
        memory_path, queries_path, _, kinds = SETS[name]
        if not args.check:
            for path, data in ((memory_path, memory), (queries_path, labelled)):
                path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        counts = {k: sum(q["kind"] == k for q in labelled["queries"]) for k in kinds}
        sessions = len({i["session"] for i in memory["items"]})
        print(
            f"{name}: {len(memory['items'])} items in {sessions} sessions, {len(labelled['queries'])} queries {counts}"
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
