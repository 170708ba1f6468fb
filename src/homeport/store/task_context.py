"""One call for a task's context: the two context documents and the items most relevant to a task,
packed to fit a token budget.

Relevance is the store's full-text ranking (bm25 over the one index, `store.search`): the task's
words are searched as plain words joined with OR, so a sentence matches items that share any of
them and bm25 puts the items sharing the rarest ones first; an item that shares only stop words
("the", "of": `search.STOP_WORDS`) with the task is no match. Decisions, system patterns and
progress are ranked together with the glossary (custom data in `ProjectGlossary`); a task that
matches nothing gets the newest items instead.

Tokens are estimated, not counted: `estimate_tokens` is the UTF-8 length divided by 4, rounded
up. That is the usual rule for English with the GPT-style BPE tokenizers (about 4 characters per
token) and errs high for text outside ASCII, which takes more bytes per character. A real
tokenizer would need its vocabulary files at run time, which Homeport does not ship.

Packing is greedy and deterministic: each context document gets at most a quarter of the budget
(clipped, marked `clipped`), then the ranked items in order, each clipped to at most
`ITEM_MAX_TOKENS`; an item that no longer fits is skipped and counted in `omitted`, and a smaller
one further down may still fit. Ties in rank break by type and id, so the same memory and task
always give the same answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, select

from homeport.errors import InvalidItemError
from homeport.store import branches
from homeport.store import search as search_index
from homeport.store._common import load_json
from homeport.store.contexts import ContextKind, get_context
from homeport.store.custom_data import GLOSSARY_CATEGORY
from homeport.store.database import ByIds, Store
from homeport.store.lifecycle import hidden_keys
from homeport.store.schema import custom_data, decisions, progress, system_patterns
from homeport.store.tags import tags_of

__all__ = [
    "CONTEXT_SHARE",
    "ITEM_MAX_TOKENS",
    "MAX_BUDGET",
    "MIN_BUDGET",
    "TOKEN_ESTIMATE",
    "estimate_tokens",
    "task_context",
]

TOKEN_ESTIMATE = "ceil(utf8_bytes / 4)"
MIN_BUDGET = 100
MAX_BUDGET = 32_000
CONTEXT_SHARE = 4  # each context document gets at most budget / CONTEXT_SHARE
ITEM_MAX_TOKENS = 200  # one item's text is clipped to this (the agent fetches the rest by id)
_CANDIDATES = 60  # ranked candidates read per search
_RECENT = 10  # newest items per type when nothing matches
_RANKED_TYPES = ("decision", "system_pattern", "progress")
_ELLIPSIS = "…"


def estimate_tokens(text: str) -> int:
    """Tokens of `text` by the documented estimate (`TOKEN_ESTIMATE`)."""
    return -(-len(text.encode("utf-8")) // 4)


def task_context(store: Store | None, task: str, *, budget_tokens: int = 2000) -> dict[str, Any]:
    """The product and active context and the items most relevant to `task`, within `budget_tokens`.

    Returns `{task, budget_tokens, used_tokens, token_estimate, product_context, active_context,
    items, omitted}`; every entry carries `type`, `id`, `text` and its `tokens`, items also `why`
    ("match" or "recent") and, for matches, the search `score`.

    Raises:
        InvalidItemError: an empty task, or a budget outside MIN_BUDGET..MAX_BUDGET.
    """
    if not task.strip():
        raise InvalidItemError("task is empty; describe in a few words what you are about to do")
    if not MIN_BUDGET <= budget_tokens <= MAX_BUDGET:
        raise InvalidItemError(f"budget_tokens {budget_tokens} is outside {MIN_BUDGET}..{MAX_BUDGET}")
    out: dict[str, Any] = {
        "task": task,
        "budget_tokens": budget_tokens,
        "used_tokens": 0,
        "token_estimate": TOKEN_ESTIMATE,
        "product_context": None,
        "active_context": None,
        "items": [],
        "omitted": 0,
    }
    if store is None:
        return out
    left = budget_tokens
    # One read around all of them: the contexts, the searches and the texts join it (`Store.read`), so
    # the pack comes from one snapshot, and a PostgreSQL store runs one transaction instead of five.
    with store.read() as conn:
        for kind in ("product", "active"):
            entry = _context_entry(store, kind, min(left, budget_tokens // CONTEXT_SHARE))
            if entry is not None:
                out[f"{kind}_context"] = entry
                left -= entry["tokens"]
        ranked = _ranked(store, task)
        candidates = ranked or _recent(conn)
        candidates = branches.without_hidden(candidates, branches.hidden_keys(store, conn))  # other branches'
        hidden = hidden_keys(conn)  # archived, superseded, expired: left out, counted
        if hidden:
            current = [c for c in candidates if (c["type"], c["id"]) not in hidden]
            if len(current) < len(candidates):
                out["hidden_expired"] = len(candidates) - len(current)
            candidates = current
        texts = _texts(conn, [(c["type"], c["id"]) for c in candidates])
    why = "match" if ranked else "recent"
    for candidate in candidates:
        text = texts.get((candidate["type"], candidate["id"]))
        if text is None:  # an id the index holds and its table does not
            continue
        text = _clip(text, min(ITEM_MAX_TOKENS, budget_tokens // CONTEXT_SHARE))
        tokens = estimate_tokens(text)
        if tokens > left:
            out["omitted"] += 1
            continue
        left -= tokens
        entry = {"type": candidate["type"], "id": candidate["id"], "why": why, "text": text, "tokens": tokens}
        if "score" in candidate:
            entry["score"] = candidate["score"]
        out["items"].append(entry)
    out["used_tokens"] = budget_tokens - left
    return out


def _context_entry(store: Store, kind: ContextKind, cap: int) -> dict[str, Any] | None:
    document = get_context(store, kind)
    if not document["version"] or not document["content"] or cap <= 0:
        return None
    full = _render_document(document["content"])
    text = _clip(full, cap)
    return {
        "type": f"{kind}_context",
        "id": 1,
        "version": document["version"],
        "text": text,
        "tokens": estimate_tokens(text),
        "clipped": text != full,
    }


def _ranked(store: Store, task: str) -> list[dict[str, Any]]:
    """The search hits for the task's words, best first; glossary hits ranked with the rest.

    Every word ranks, but an item that shares only stop words with the task is no match ("Write the
    tests" must not bring "Move the logo"). Dropping the stop words from the ranking outright lost
    12 points of recall on the labelled tasks (bench/get_context.py); this rule loses 2, both tasks
    whose labelled answer shares no word with the task but "the" (found by meaning, not by words).
    """
    query = search_index.plain_words(task)
    if not query:
        return []
    hits = search_index.search(store, query, types=_RANKED_TYPES, limit=_CANDIDATES)
    hits += search_index.search(store, query, types=["custom_data"], category=GLOSSARY_CATEGORY, limit=_CANDIDATES)
    content = search_index.content_words(task)
    if content and len(content) < len(search_index.words(task)):  # a task of stop words only keeps them
        keep = search_index.matching(
            store, search_index.plain_words(task, content), [(h["type"], h["id"]) for h in hits]
        )
        hits = [h for h in hits if (h["type"], h["id"]) in keep]
    hits.sort(key=lambda h: (-h["score"], h["type"], h["id"]))
    return hits


def _recent(conn: Connection) -> list[dict[str, Any]]:
    """The newest decisions, unfinished progress, patterns and glossary terms, newest first."""
    found: list[tuple[str, str, int]] = []
    for item_type, table, condition in (
        ("decision", decisions, None),
        ("progress", progress, progress.c.status != "DONE"),
        ("system_pattern", system_patterns, None),
        ("custom_data", custom_data, custom_data.c.category == GLOSSARY_CATEGORY),
    ):
        stmt = select(table.c.id, table.c.updated_at)
        if condition is not None:
            stmt = stmt.where(condition)
        rows = conn.execute(stmt.order_by(table.c.updated_at.desc(), table.c.id.desc()).limit(_RECENT))
        found += [(updated_at, item_type, item_id) for item_id, updated_at in rows]
    found.sort(key=lambda f: (f[0], f[1], f[2]), reverse=True)
    return [{"type": item_type, "id": item_id} for _, item_type, item_id in found]


def _by_ids(*columns: Any) -> ByIds:
    table = columns[0].table
    return ByIds(lambda ids_in: select(*columns).where(ids_in(table.c.id)))


# Built once (the ids are a parameter): building them on every call cost more than running them.
_DECISIONS = _by_ids(decisions.c.id, decisions.c.summary, decisions.c.rationale, decisions.c.implementation_details)
_PATTERNS = _by_ids(system_patterns.c.id, system_patterns.c.name, system_patterns.c.description)
_PROGRESS = _by_ids(progress.c.id, progress.c.status, progress.c.description, progress.c.parent_id)
_CUSTOM = _by_ids(custom_data.c.id, custom_data.c.key, custom_data.c.value)


def _texts(conn: Connection, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """One line of text per item: what an agent needs to judge it, by type."""
    by_type: dict[str, list[int]] = {}
    for item_type, item_id in keys:
        by_type.setdefault(item_type, []).append(item_id)
    out: dict[tuple[str, int], str] = {}
    if ids := by_type.get("decision"):
        tags = tags_of(conn, "decision", ids)
        for item_id, summary, rationale, details in _DECISIONS.run(conn, {"ids": ids}):
            parts = [summary]
            if rationale:
                parts.append(f"why: {rationale}")
            if details:
                parts.append(f"how: {details}")
            out["decision", item_id] = " — ".join(parts) + _tag_suffix(tags.get(item_id, []))
    if ids := by_type.get("system_pattern"):
        tags = tags_of(conn, "system_pattern", ids)
        for item_id, name, description in _PATTERNS.run(conn, {"ids": ids}):
            out["system_pattern", item_id] = f"{name}: {description}" + _tag_suffix(tags.get(item_id, []))
    if ids := by_type.get("progress"):
        for item_id, status, description, parent_id in _PROGRESS.run(conn, {"ids": ids}):
            parent = f" (under progress {parent_id})" if parent_id else ""
            out["progress", item_id] = f"[{status}] {description}{parent}"
    if ids := by_type.get("custom_data"):
        for item_id, key, raw in _CUSTOM.run(conn, {"ids": ids}):
            value = load_json(raw)
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
            out["custom_data", item_id] = f"{key}: {shown}"
    return out


def _tag_suffix(tags: list[str]) -> str:
    return f" [tags: {', '.join(tags)}]" if tags else ""


def _render_document(content: dict[str, Any]) -> str:
    """A context document as `key: value` lines, keys sorted; values that are not text as compact JSON."""
    lines = []
    for key in sorted(content):
        value = content[key]
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
        lines.append(f"{key}: {shown}")
    return "\n".join(lines)


def _clip(text: str, max_tokens: int) -> str:
    """`text` cut to at most `max_tokens` by the estimate, ending in an ellipsis when cut."""
    limit = max_tokens * 4
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    room = limit - len(_ELLIPSIS.encode("utf-8"))
    return raw[: max(room, 0)].decode("utf-8", errors="ignore").rstrip() + _ELLIPSIS
