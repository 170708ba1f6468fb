"""What a tidy proposal finds in the memory: duplicates, contradictions, superseded and stale items.

Reads only; `homeport.store.tidy` stores what this finds as a changeset. No language model: the
duplicate and contradiction verdicts are `homeport.store.tidy_signals` over the items' texts, plus
their vectors when the semantic extra has embedded them (read straight from `item_vectors`).

Each entry says why it was proposed (`reason`) and shows the evidence (the signals, the link, the
dates), and carries the operations that would carry it out. Contradictions carry none: they are
surfaced for a person or an agent to decide (amend the changeset with the operation they choose).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, select

from homeport.store import search as search_index
from homeport.store._common import load_json, now
from homeport.store.database import Store
from homeport.store.lifecycle import TABLES, TIDY_TYPES, hidden_keys
from homeport.store.schema import item_vectors, links
from homeport.store.tidy_signals import (
    WORDS_SAME_SUBJECT,
    candidate_pairs,
    clusters,
    content_tokens,
    signals,
    verdict,
)

__all__ = [
    "DONE_STATUSES",
    "KINDS",
    "SUPERSEDING",
    "cited_stale_entries",
    "find_entries",
    "item_text",
    "near_duplicate",
    "title_of",
]

KINDS = ("duplicate", "contradiction", "superseded", "stale")
# Link relationships that say one item replaces another: (relationship, the replaced end).
SUPERSEDING = {"superseded_by": "source", "replaced_by": "source", "supersedes": "target", "replaces": "target"}
DONE_STATUSES = frozenset({"done", "completed", "complete", "cancelled", "canceled", "closed", "wontfix"})


def item_text(item_type: str, row: dict[str, Any]) -> str:
    """The text two items of a type are compared by."""
    if item_type == "decision":
        return " ".join(x for x in (row["summary"], row.get("rationale")) if x)
    if item_type == "system_pattern":
        return f"{row['name']} {row['description']}"
    if item_type == "progress":
        return str(row["description"])
    value = load_json(row["value"]) if isinstance(row["value"], str) else row["value"]
    body = value if isinstance(value, str) else " ".join(str(v) for v in _leaves(value))
    return f"{row['key']} {body}"


def _subject(item_type: str, row: dict[str, Any]) -> str:
    """The one-line claim two items are checked for disagreement by."""
    if item_type == "decision":
        return str(row["summary"])
    return item_text(item_type, row)


def title_of(item_type: str, row: dict[str, Any]) -> str:
    if item_type == "decision":
        return str(row["summary"])
    if item_type == "system_pattern":
        return str(row["name"])
    if item_type == "progress":
        return str(row["description"])[:120]
    return f"{row['category']}: {row['key']}"


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def find_entries(
    conn: Connection,
    *,
    scope: str | None = None,
    kinds: Sequence[str] = KINDS,
    stale_days: int = 90,
    at: str | None = None,
) -> list[dict[str, Any]]:
    """The proposal's entries (without ids), over the current items of `scope` (an item type, or all)."""
    types = TIDY_TYPES if scope in (None, "all") else (scope,)
    hidden = hidden_keys(conn, at=at)
    rows = {t: [dict(r._mapping) for r in conn.execute(select(TABLES[t]).order_by(TABLES[t].c.id))] for t in types}
    rows = {t: [r for r in found if (t, r["id"]) not in hidden] for t, found in rows.items()}
    entries: list[dict[str, Any]] = []
    if "superseded" in kinds:
        entries += _superseded(conn, types, hidden)
    taken = {(op["item"]["type"], op["item"]["id"]) for e in entries for op in e["operations"]}
    if "duplicate" in kinds or "contradiction" in kinds:
        meanings = _meanings(conn, types)
        for item_type in types:
            entries += _similar(item_type, rows[item_type], meanings, kinds, taken)
    if "stale" in kinds and "progress" in types:
        entries += _stale(rows["progress"], stale_days, at or now(), taken)
    return entries


def _ref(item_type: str, row: dict[str, Any]) -> dict[str, Any]:
    return {"type": item_type, "id": row["id"], "title": title_of(item_type, row)}


def _key(ref: dict[str, Any]) -> dict[str, Any]:
    return {"type": ref["type"], "id": ref["id"]}


def _similar(
    item_type: str,
    rows: list[dict[str, Any]],
    meanings: dict[tuple[str, int], tuple[float, ...]],
    kinds: Sequence[str],
    taken: set[tuple[str, int]],
) -> list[dict[str, Any]]:
    texts = [item_text(item_type, r) for r in rows]
    subjects = [_subject(item_type, r) for r in rows]
    duplicates: list[tuple[int, int]] = []
    evidence: dict[tuple[int, int], dict[str, object]] = {}
    out: list[dict[str, Any]] = []
    for a, b in candidate_pairs(texts):
        ra, rb = rows[a], rows[b]
        if item_type == "custom_data" and ra["category"] != rb["category"]:
            continue
        va, vb = meanings.get((item_type, ra["id"])), meanings.get((item_type, rb["id"]))
        meaning = sum(x * y for x, y in zip(va, vb, strict=True)) if va and vb and len(va) == len(vb) else None
        sig = signals(texts[a], texts[b], meaning=meaning)
        said = verdict(sig)
        if said != "contradiction" and subjects[a] != texts[a]:
            # two decisions whose summaries disagree, whatever their rationales share
            claim = signals(subjects[a], subjects[b])
            if verdict(claim) == "contradiction":
                sig, said = claim, "contradiction"
        if said == "duplicate" and "duplicate" in kinds:
            duplicates.append((a, b))
            evidence[(a, b)] = sig.evidence()
        elif said == "contradiction" and "contradiction" in kinds:
            out.append(
                {
                    "kind": "contradiction",
                    "reason": f"{item_type} {ra['id']} and {rb['id']} are about the same subject and disagree; "
                    "decide which holds (amend this changeset with a supersede or archive), nothing is done "
                    "on its own",
                    "evidence": {**sig.evidence(), "texts": [subjects[a], subjects[b]]},
                    "items": [_ref(item_type, ra), _ref(item_type, rb)],
                    "operations": [],
                    "accepted": False,
                }
            )
    for group in clusters(duplicates):
        members = [rows[i] for i in group]
        if any((item_type, m["id"]) in taken for m in members):
            continue
        keep = max(members, key=lambda m: (m["updated_at"], m["id"]))
        pairs = [
            {"items": [rows[a]["id"], rows[b]["id"]], **evidence[(a, b)]}
            for a, b in duplicates
            if a in group and b in group
        ]
        out.append(
            {
                "kind": "duplicate",
                "reason": f"{len(members)} {item_type} items say the same thing (word and "
                f"{'meaning' if any('meaning' in p for p in pairs) else 'character'} overlap agree); "
                f"merge into the most recently changed, {item_type} {keep['id']}, keeping every text in its history",
                "evidence": {"pairs": pairs},
                "items": [_ref(item_type, m) for m in members],
                "operations": [
                    {"op": "merge", "item": _key(_ref(item_type, m)), "into": _key(_ref(item_type, keep))}
                    for m in members
                    if m is not keep
                ],
                "accepted": True,
            }
        )
        taken.update((item_type, m["id"]) for m in members)
    return out


def _superseded(conn: Connection, types: Sequence[str], hidden: set[tuple[str, int]]) -> list[dict[str, Any]]:
    found = conn.execute(select(links).where(links.c.relationship.in_(list(SUPERSEDING))).order_by(links.c.id)).all()
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, int]] = set()
    for link in found:
        old_end = SUPERSEDING[link.relationship]
        old = (link.source_type, link.source_id) if old_end == "source" else (link.target_type, link.target_id)
        new = (link.target_type, link.target_id) if old_end == "source" else (link.source_type, link.source_id)
        if old[0] not in types or old in hidden or old in seen or old[0] not in TIDY_TYPES or new[0] not in TIDY_TYPES:
            continue
        seen.add(old)
        out.append(
            {
                "kind": "superseded",
                "reason": f"{old[0]} {old[1]} is linked as replaced by {new[0]} {new[1]}; mark it superseded so "
                "it leaves search and get_context (it stays readable and in its history)",
                "evidence": {"link_id": link.id, "relationship": link.relationship, "created_at": link.created_at},
                "items": [{"type": old[0], "id": old[1]}, {"type": new[0], "id": new[1]}],
                "operations": [
                    {"op": "supersede", "item": {"type": old[0], "id": old[1]}, "by": {"type": new[0], "id": new[1]}}
                ],
                "accepted": True,
            }
        )
    return out


def _stale(rows: list[dict[str, Any]], days: int, at: str, taken: set[tuple[str, int]]) -> list[dict[str, Any]]:
    cutoff = (datetime.fromisoformat(at.replace("Z", "+00:00")) - timedelta(days=days)).astimezone(UTC)
    limit = cutoff.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    out = []
    for row in rows:
        if row["status"].strip().casefold() in DONE_STATUSES or row["updated_at"] >= limit:
            continue
        if ("progress", row["id"]) in taken:
            continue
        out.append(
            {
                "kind": "stale",
                "reason": f"progress {row['id']} is {row['status']} and untouched for more than {days} days; "
                "archive it (it stays readable; revert brings it back)",
                "evidence": {"status": row["status"], "updated_at": row["updated_at"], "stale_days": days},
                "items": [_ref("progress", row)],
                "operations": [{"op": "archive", "item": {"type": "progress", "id": row["id"]}}],
                "accepted": True,
            }
        )
    return out


def _meanings(conn: Connection, types: Sequence[str]) -> dict[tuple[str, int], tuple[float, ...]]:
    """The first chunk's vector of every embedded item (one model: the most used), when there are any."""
    c = item_vectors.c
    rows = conn.execute(
        select(c.item_type, c.item_id, c.model, c.vector).where(c.chunk == 0, c.item_type.in_(list(types)))
    ).all()
    if not rows:
        return {}
    models: dict[str, int] = {}
    for r in rows:
        models[r.model] = models.get(r.model, 0) + 1
    model = max(models, key=lambda m: models[m])
    out = {}
    for r in rows:
        if r.model == model:
            blob = bytes(r.vector)
            out[(r.item_type, r.item_id)] = struct.unpack(f"<{len(blob) // 4}f", blob)
    return out


def near_duplicate(store: Store, item_type: str, item: dict[str, Any]) -> dict[str, Any] | None:
    """The current item of `item_type` that `item` (just written) says the same thing as, or None.

    One full-text query for the title's rarest words (the 5 best), then the signals on those few. Used by
    log_decision to say "decision 12 says this already".
    """
    text = item_text(item_type, item)
    # the title's words only: a duplicate shares its claim, and a short query keeps the write cheap
    title = title_of(item_type, item)
    query = search_index.plain_words(title, search_index.rarest_words(store, search_index.content_words(title)[:12]))
    if not query:
        return None
    hits = [h for h in search_index.search(store, query, types=[item_type], limit=5) if h["id"] != item["id"]]
    if not hits:
        return None
    table = TABLES[item_type]
    with store.read() as conn:
        hidden = hidden_keys(conn, item_type)
        rows = {
            r.id: dict(r._mapping)
            for r in conn.execute(select(table).where(table.c.id.in_([h["id"] for h in hits])))
            if (item_type, r.id) not in hidden
        }
    best: tuple[float, dict[str, Any], dict[str, object]] | None = None
    mine = content_tokens(text)
    for hit in hits:
        row = rows.get(hit["id"])
        if row is None:
            continue
        theirs = item_text(item_type, row)
        shared = content_tokens(theirs)
        if len(mine & shared) < WORDS_SAME_SUBJECT * len(mine | shared):  # cheap: most hits stop here
            continue
        sig = signals(text, theirs)
        if verdict(sig) == "duplicate" and (best is None or sig.words > best[0]):
            best = (sig.words, row, sig.evidence())
    if best is None:
        return None
    _, row, evidence = best
    return {"type": item_type, "id": row["id"], "title": title_of(item_type, row), "evidence": evidence}


def cited_stale_entries(
    cited: Sequence[dict[str, Any]], taken: set[tuple[str, int]], scope: str | None
) -> list[dict[str, Any]]:
    """Stale entries for items whose citations to code are changed or missing: the code they describe moved
    on. The archive they carry is left unaccepted: the item may only need its citation confirmed."""
    out = []
    for item in cited:
        key = (item["type"], item["id"])
        if item["type"] not in TIDY_TYPES or key in taken or scope not in (None, "all", item["type"]):
            continue
        if item.get("citation_status") not in ("changed", "missing"):
            continue
        places = [
            {k: c.get(k) for k in ("path", "lines", "symbol", "status") if c.get(k) is not None}
            for c in item.get("citations", [])
            if c.get("status") in ("changed", "missing")
        ]
        out.append(
            {
                "kind": "stale",
                "reason": f"{item['type']} {item['id']} cites code that is now {item['citation_status']}; read it "
                "again, then confirm its citations (confirm_citations) or accept this archive",
                "evidence": {"citation_status": item["citation_status"], "citations": places},
                "items": [{"type": item["type"], "id": item["id"], "title": item.get("title")}],
                "operations": [{"op": "archive", "item": {"type": item["type"], "id": item["id"]}}],
                "accepted": False,
            }
        )
    return out
