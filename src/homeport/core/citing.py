"""Citations on the call path: anchored when an item is written, checked when it is read.

A tool that records text takes `cites` (`Cite`); `anchors_for` reads each cited file once, before the
write, and the item's store module saves the anchors in the item's own transaction. A tool that
returns items passes them through `annotate` (or `annotate_hits` for search and get_context): items
without citations come back exactly as they were, at the cost of one indexed lookup; cited ones get
`citations` (each with its `status`) and `citation_status`, the worst of them.

Checking reads the project's files, so on the HTTP event loop it first asks to move to a thread
(`Call.root` calls `may_wait`), and only when some returned item has citations: reads of items
without them stay on the loop. A logical workspace has no directory here: its citations are
`unverifiable`, and writing one is refused.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from homeport.citations.spans import STALE, Anchor, Verdict, worst
from homeport.citations.worktree import WorkTree, work_tree
from homeport.core.pipeline import Call
from homeport.errors import InvalidItemError, ItemNotFoundError
from homeport.store import citations as stored

__all__ = [
    "MAX_CITES",
    "Cite",
    "CitesArg",
    "anchor_row",
    "anchors_for",
    "annotate",
    "annotate_hits",
    "annotate_one",
    "confirm",
    "one_read",
    "verify",
]

MAX_CITES = 20


class Cite(BaseModel):
    """One citation: a file relative to the workspace root, and lines or a symbol in it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: Annotated[str, Field(min_length=1, max_length=1000, description="Relative to the workspace root.")]
    lines: Annotated[
        str | None, Field(max_length=24, pattern=r"^\s*\d+\s*(-\s*\d+\s*)?$", description="'40-58' or '40'.")
    ] = None
    symbol: Annotated[
        str | None, Field(min_length=1, max_length=300, description="A definition: 'Retry.schedule'.")
    ] = None


CitesArg = Annotated[
    list[Cite] | None,
    Field(
        max_length=MAX_CITES,
        description=(
            "Code this item is about: [{path, lines: '40-58'} or {path, symbol: 'Retry.schedule'}], paths relative "
            "to the workspace root. Checked on every read (status fresh, moved, changed, missing, unverifiable). "
            "Omit to keep the item's citations; [] removes them."
        ),
    ),
]


@contextlib.contextmanager
def one_read(call: Call) -> Iterator[None]:
    """Hold one read of the call's store open: the reads inside (the items, then their citations) join it,
    one snapshot and one transaction instead of one each (`Store.read`)."""
    if call.store is None:
        yield
        return
    with call.store.read():
        yield


def _tree(call: Call) -> WorkTree | None:
    """The workspace's files, or None for a logical workspace (no directory here)."""
    assert call.workspace is not None
    if call.workspace.logical_key is not None:
        return None
    return work_tree(call.root)


def anchors_for(call: Call, cites: Sequence[Cite] | None) -> list[dict[str, Any]] | None:
    """The anchors to store for `cites` (None: keep the item's citations).

    Raises:
        InvalidItemError: a path outside the workspace (named), not a file, bad lines, an unknown symbol.
        LogicalWorkspaceError: citations on a logical workspace, which has no files here.
        SecretDetectedError: a quoted line looks like a secret.
    """
    if cites is None:
        return None
    if not cites:
        return []
    if len(cites) > MAX_CITES:
        raise InvalidItemError(f"{len(cites)} citations; an item cites at most {MAX_CITES} spans")
    assert call.workspace is not None
    tree = work_tree(call.root)  # a logical workspace raises here: there are no files to cite
    rows = [anchor_row(tree.anchor(c.path, lines=c.lines, symbol=c.symbol)) for c in cites]
    if call.secrets is not None:  # the quotes come from the files, not from the arguments the gate saw
        call.secrets.check([r["quote"] for r in rows], prefix="cites")
    return rows


def anchor_row(anchor: Anchor) -> dict[str, Any]:
    """An anchor as `homeport.store.citations` stores it."""
    return {
        "path": anchor.path,
        "start_line": anchor.start,
        "end_line": anchor.end,
        "symbol": anchor.symbol,
        "blob_id": anchor.blob,
        "span_hash": anchor.span_hash,
        "line_keys": " ".join(anchor.keys),
        "span_chars": anchor.chars,
        "quote": anchor.quote,
    }


def _anchor(row: dict[str, Any]) -> Anchor:
    return Anchor(
        path=row["path"],
        start=row["start_line"],
        end=row["end_line"],
        keys=tuple(row["line_keys"].split()),
        span_hash=row["span_hash"],
        chars=row["span_chars"],
        quote=row["quote"],
        symbol=row["symbol"],
        blob=row["blob_id"],
    )


def _checked(call: Call, rows: Sequence[dict[str, Any]]) -> list[Verdict]:
    tree = _tree(call)
    if tree is None:
        return [Verdict("unverifiable", reason="a logical workspace has no files on this machine") for _ in rows]
    return tree.check([_anchor(r) for r in rows])


def _public(row: dict[str, Any], verdict: Verdict) -> dict[str, Any]:
    out: dict[str, Any] = {"path": row["path"], "lines": f"{row['start_line']}-{row['end_line']}"}
    if row["symbol"] is not None:
        out["symbol"] = row["symbol"]
    out["quote"] = row["quote"]
    out.update(verdict.public())
    out["blob_id"] = row["blob_id"]
    out["cited_at"] = row["cited_at"]
    if row["confirmed_at"] is not None:
        out["confirmed_at"] = row["confirmed_at"]
    return out


def _citations_of(call: Call, item_type: str, ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
    """The checked citations of some items of one type, by id (items without citations absent)."""
    found = stored.rows_of(call.store, item_type, ids)
    if not found:
        return {}
    flat = [(item_id, row) for item_id, rows in found.items() for row in rows]
    verdicts = _checked(call, [row for _, row in flat])
    out: dict[int, list[dict[str, Any]]] = {}
    for (item_id, row), verdict in zip(flat, verdicts, strict=True):
        out.setdefault(item_id, []).append(_public(row, verdict))
    return out


def annotate(call: Call, item_type: str, items: Any) -> Any:
    """Items of one type with their checked citations: a list of dicts with `id`, one such dict, or a
    result that holds such a list beside counts (`{"decisions": [...], "hidden_expired": 2}`)."""
    if isinstance(items, dict) and "id" not in items:
        for value in items.values():
            if isinstance(value, list):
                annotate(call, item_type, value)
        return items
    listed = [items] if isinstance(items, dict) else items
    if not isinstance(listed, list) or not listed or item_type not in stored.CITABLE_TYPES:
        return items
    checked = _citations_of(call, item_type, [i["id"] for i in listed if isinstance(i, dict) and "id" in i])
    if not checked:
        return items
    for item in listed:
        cites = checked.get(item.get("id", -1)) if isinstance(item, dict) else None
        if cites:
            item["citations"] = cites
            item["citation_status"] = worst(c["status"] for c in cites)
    return items


def annotate_one(call: Call, item_type: str, item: dict[str, Any]) -> dict[str, Any]:
    """One item (a write's result) with its checked citations."""
    annotate(call, item_type, item)
    return item


def annotate_hits(call: Call, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Search or get_context entries (`type`, `id`) labelled with `citation_status`, the stale ones
    (changed, missing) moved below the others, each group in its order: labelled, never dropped."""
    by_type: dict[str, list[int]] = {}
    for hit in hits:
        if hit.get("type") in stored.CITABLE_TYPES:
            by_type.setdefault(hit["type"], []).append(hit["id"])
    status: dict[tuple[str, int], str | None] = {}
    for item_type, ids in by_type.items():
        for item_id, cites in _citations_of(call, item_type, ids).items():
            status[(item_type, item_id)] = worst(c["status"] for c in cites)
    if not status:
        return hits
    for hit in hits:
        found = status.get((hit.get("type"), hit.get("id")))  # type: ignore[arg-type]
        if found is not None:
            hit["citation_status"] = found
    return [h for h in hits if h.get("citation_status") not in STALE] + [
        h for h in hits if h.get("citation_status") in STALE
    ]


def confirm(call: Call, item_type: str, item_id: int, *, accept_changes: bool = False) -> dict[str, Any]:
    """Record that the caller re-checked an item's citations: moved ones are anchored at their new place
    (and, with accept_changes, changed ones at the lines they cover now). Returns the citations after.

    Raises:
        ItemNotFoundError: the item has no citations (or does not exist).
        LogicalWorkspaceError: a logical workspace (no files here to re-anchor to).
        SecretDetectedError: a re-anchored span's quote looks like a secret.
    """
    store = call.require_store()
    rows = stored.rows_of(store, item_type, [item_id]).get(item_id)
    if not rows or not stored.cited_items(store, only=(item_type, item_id)):
        raise ItemNotFoundError(
            f"{item_type} {item_id} has no citations to confirm; add some with cites=[...] on its update tool"
        )
    tree = work_tree(call.root)
    verdicts = tree.check([_anchor(r) for r in rows])
    moved: dict[int, dict[str, Any]] = {}
    kept: list[str] = []
    for row, verdict in zip(rows, verdicts, strict=True):
        take = verdict.status == "moved" or (accept_changes and verdict.status == "changed")
        if take and verdict.path is not None and verdict.start is not None and verdict.end is not None:
            anchor = tree.anchor(verdict.path, lines=f"{verdict.start}-{verdict.end}")
            moved[row["position"]] = anchor_row(anchor)
        elif take:  # a changed span with no place to go to: anchored at its old lines as they read now
            try:
                moved[row["position"]] = anchor_row(
                    tree.anchor(row["path"], lines=f"{row['start_line']}-{row['end_line']}")
                )
            except InvalidItemError as exc:
                kept.append(f"{row['path']}: {exc}")
    if call.secrets is not None:  # new quotes, read from the files as they are now
        call.secrets.check([anchor["quote"] for anchor in moved.values()], prefix="cites")
    with store.write() as conn:
        stamp = stored.confirm(conn, item_type, item_id, moved)
    after = _citations_of(call, item_type, [item_id]).get(item_id, [])
    out: dict[str, Any] = {
        "item_type": item_type,
        "item_id": item_id,
        "confirmed_at": stamp,
        "reanchored": len(moved),
        "citations": after,
        "citation_status": worst(c["status"] for c in after),
    }
    if kept:
        out["not_reanchored"] = kept
    return out


def verify(call: Call, *, include_fresh: bool = False) -> dict[str, Any]:
    """Every item with citations, checked: those not fresh (all with include_fresh), counts by status,
    and `failing`: whether any is changed or missing (what `homeport verify` exits non-zero on)."""
    cited = stored.cited_items(call.store)
    counts = {"fresh": 0, "moved": 0, "unverifiable": 0, "changed": 0, "missing": 0}
    items: list[dict[str, Any]] = []
    by_type: dict[str, list[int]] = {}
    titles: dict[tuple[str, int], str] = {}
    for item_type, item_id, title in cited:
        by_type.setdefault(item_type, []).append(item_id)
        titles[(item_type, item_id)] = title
    for item_type, ids in by_type.items():
        for item_id, cites in sorted(_citations_of(call, item_type, ids).items()):
            for cite in cites:
                counts[cite["status"]] += 1
            status = worst(c["status"] for c in cites)
            if status != "fresh" or include_fresh:
                items.append(
                    {
                        "type": item_type,
                        "id": item_id,
                        "title": titles[(item_type, item_id)],
                        "citation_status": status,
                        "citations": [c for c in cites if include_fresh or c["status"] != "fresh"],
                    }
                )
    return {
        "items_checked": len(cited),
        "citations_checked": sum(counts.values()),
        "counts": counts,
        "failing": counts["changed"] + counts["missing"] > 0,
        "items": items,
    }
