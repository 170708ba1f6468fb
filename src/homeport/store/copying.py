"""Copy one workspace's memory into another store (SQLite <-> PostgreSQL), in batches that a rerun resumes.

The source is read once, in one snapshot, and laid out as a plan: every item in the order it can be
written (decisions, progress parents before children, patterns, custom data, context versions, links),
then the rows of its history, lifecycle and provenance as they are (`homeport.store._transfer_history`:
every version of every item, deleted ones too, writers, states, changesets, branches, citations).
The plan is written `batch_rows` items per transaction; each transaction also records in the target how
far the plan is done (`homeport.store.copy_state`), so an interrupted copy (Ctrl-C, a lost connection, a
killed process) keeps every committed batch and the next run continues after the last one.

The checkpoint names the source and the SHA-256 of its memory when the copy began. A rerun whose source
still has that checksum resumes; if the source changed in between, the partial copy is discarded and the
copy starts over (mixing two states would copy a memory that never existed). A partial copy of another
source is only discarded with `replace`. After the last batch the whole target is read back: its counts
and checksum must equal the source's, and only then is the checkpoint removed in the same transaction;
until then the target is refused to anyone who opens it to serve it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import Connection, select

from homeport.errors import CopyUnfinishedError, HomeportError, InvalidItemError, StoreError
from homeport.store._common import dump_json
from homeport.store._copy_rows import check_item, known_items, write_items
from homeport.store._transfer_history import HISTORY, insert_history
from homeport.store.contexts import write_context
from homeport.store.copy_state import Checkpoint, clear_checkpoint, read_checkpoint, save_checkpoint
from homeport.store.database import Store
from homeport.store.provenance import writing_as
from homeport.store.schema import context_history, custom_data, decisions, links, progress, system_patterns
from homeport.store.transfer import _collect, _collect_in, _empty, memory_checksum

__all__ = ["BATCH_ROWS", "CopyProgress", "copy_memory", "source_identity"]

# Items per committed batch. Measured on 10k items SQLite -> PostgreSQL (bench/copy_memory.py): the
# commits and checkpoint updates of 500-item batches cost under 1% of the copy.
BATCH_ROWS = 500

# The source checksum a checkpoint gets when the verification failed: no source has it, so the next run starts over.
_MISMATCH = "mismatch"

Stage = Literal["copying", "verifying", "verified"]


@dataclass
class CopyProgress:
    """Where a copy is: per section, items in the source (`counts`) and committed in the target (`done`)."""

    counts: dict[str, int]
    done: dict[str, int]
    stage: Stage = "copying"
    resumed_from: int = 0  # items a previous run had committed
    restarted: str | None = None  # why a previous run's partial copy was discarded

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def committed(self) -> int:
        return sum(self.done.values())


def source_identity(store: Store) -> str:
    """How a checkpoint names the source: what `homeport copy --from` takes (a PostgreSQL URL without its password)."""
    from homeport.store.postgres import PostgresStore, shown_url

    if isinstance(store, PostgresStore):
        return f"{shown_url(store.url)} --key {store.key}"
    return f"sqlite:{store.root}"


def copy_memory(
    source: Store,
    target: Store,
    *,
    replace: bool = False,
    progress: Callable[[CopyProgress], None] | None = None,
    batch_rows: int | None = None,
) -> dict[str, Any]:
    """Copy one workspace's memory into another store, `batch_rows` items per transaction, resumable.

    The target must be empty, or hold an unfinished copy of this source (resumed), unless `replace`. Ids,
    uids, tags, links and context history are kept. `progress` is called once the start is settled and
    after each committed batch and step of the verification. Returns the counts, the checksum and where
    the copy resumed from (`resumed_from`) or why it started over (`restarted`).

    Raises:
        InvalidItemError: the target holds memory and not `replace`, or what was written differs from the source.
        CopyUnfinishedError: the target holds an unfinished copy of another source and not `replace`.
        StoreError: a batch failed (the message says how many items are committed and to run the copy again).
    """
    batch_rows = batch_rows or BATCH_ROWS
    data = _collect(source)
    counts = {section: len(items) for section, items in data.items()}
    expected = memory_checksum(data)
    plan = _plan(data)
    known = known_items(data)
    identity = source_identity(source)
    done, restarted = _begin(target, identity, expected, len(plan), replace=replace)
    state = CopyProgress(counts, _done_by_section(plan, done), resumed_from=done, restarted=restarted)
    if progress is not None:
        progress(state)
    while done < len(plan):
        batch = plan[done : done + batch_rows]
        try:
            with target.write() as conn:
                _still_ours(conn, target, Checkpoint(identity, expected, done, len(plan)))
                _write(conn, batch, known)
                save_checkpoint(conn, Checkpoint(identity, expected, done + len(batch), len(plan)))
        except StoreError as exc:
            if isinstance(exc, (InvalidItemError, CopyUnfinishedError)):
                raise
            raise StoreError(
                f"{exc.message}; {done} of {len(plan)} items are copied into {target.where}: run the same "
                "`homeport copy` again to resume from there"
            ) from exc
        done += len(batch)
        state.done = _done_by_section(plan, done)
        if progress is not None:
            progress(state)
    state.stage = "verifying"
    if progress is not None:
        progress(state)
    _verify(source, target, data, expected)
    state.stage = "verified"
    if progress is not None:
        progress(state)
    return {
        "counts": counts,
        "items": len(plan),
        "checksum": expected,
        "resumed_from": state.resumed_from,
        "restarted": restarted,
    }


def _begin(target: Store, identity: str, checksum: str, total: int, *, replace: bool) -> tuple[int, str | None]:
    """Settle where this run starts, in one transaction: items already done, and why a partial copy was discarded."""
    with target.write() as conn:
        found = read_checkpoint(conn)
        if found is not None and found.source == identity and found.source_checksum == checksum:
            return min(found.done, total), None
        restarted = None
        if found is not None and found.source == identity and found.source_checksum == _MISMATCH:
            restarted = f"the last run's copy did not match its source: its {found.done} copied items were discarded"
        elif found is not None and found.source == identity:
            restarted = (
                f"the source changed since the unfinished copy began (checksum {found.source_checksum[:12]} -> "
                f"{checksum[:12]}): its {found.done} copied items were discarded and the copy started over"
            )
        elif found is not None and not replace:
            raise CopyUnfinishedError(
                f"the target {target.where} holds an unfinished copy of {found.source}: run that copy again to "
                f"finish it, or pass --replace to discard it and copy {identity} instead"
            )
        elif found is not None:
            restarted = f"the unfinished copy of {found.source} was discarded (--replace)"
        elif _holds_memory(conn) and not replace:
            raise InvalidItemError(
                f"the target {target.where} already holds memory; pass --replace to overwrite it, or copy to "
                "an empty workspace"
            )
        _empty(conn)
        save_checkpoint(conn, Checkpoint(identity, checksum, 0, total))
        return 0, restarted


def _still_ours(conn: Connection, target: Store, mine: Checkpoint) -> None:
    """The checkpoint is where this run left it: no other copy into the target wrote in between.

    Raises:
        CopyUnfinishedError: another `homeport copy` into the same target moved or reset the checkpoint.
    """
    found = read_checkpoint(conn)
    if found != mine:
        at = f"{found.done} of {found.total} items" if found is not None else "finished"
        raise CopyUnfinishedError(
            f"another `homeport copy` into {target.where} is running or ran meanwhile (its checkpoint: {at}; "
            f"this copy: {mine.done}); this one stopped: let the other finish, then run the copy again"
        )


def _verify(source: Store, target: Store, data: dict[str, list[dict[str, Any]]], expected: str) -> None:
    """Read the whole target back; only a copy equal to the source is marked complete (checkpoint removed)."""
    with target.write() as conn:
        copied = _collect_in(conn)
        found = memory_checksum(copied)
        if found == expected:
            clear_checkpoint(conn)
            return
        # The next run starts over rather than resuming into the same difference.
        checkpoint = read_checkpoint(conn)
        if checkpoint is not None:
            save_checkpoint(conn, Checkpoint(checkpoint.source, _MISMATCH, checkpoint.done, checkpoint.total))
    differing = sorted(s for s in data if dump_json(data[s]) != dump_json(copied[s]))
    raise InvalidItemError(
        f"the copy in {target.where} differs from {source.where} in {', '.join(differing)} (checksum "
        f"{found[:12]} != {expected[:12]}); it stays marked unfinished: run the copy again to start it over"
    )


def _holds_memory(conn: Connection) -> bool:
    return any(
        conn.execute(select(table.c.id).limit(1)).first() is not None
        for table in (decisions, progress, system_patterns, custom_data, context_history, links)
    )


def _plan(data: dict[str, list[dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """Every item in an order in which each can be written after the ones before it (the same every run)."""
    plan = [("decisions", d) for d in data["decisions"]]
    plan += [("progress", p) for p in _parents_first(data["progress"])]
    for section in ("system_patterns", "custom_data", "product_context", "active_context", "links", *HISTORY):
        plan += [(section, item) for item in data[section]]
    return plan


def _parents_first(entries: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Progress entries by id, each after its parent.

    Raises:
        InvalidItemError: a parent that is missing, or a cycle (a damaged source).
    """
    pending = sorted(entries, key=lambda p: p["id"])
    placed: set[int] = set()
    while pending:
        ready = [p for p in pending if p.get("parent_id") is None or p["parent_id"] in placed]
        if not ready:
            raise InvalidItemError(
                f"progress {pending[0]['id']} has a parent that is missing or its own descendant in the source; "
                "fix parent_id there and copy again"
            )
        yield from ready
        placed |= {p["id"] for p in ready}
        pending = [p for p in pending if p["id"] not in placed]


def _done_by_section(plan: list[tuple[str, dict[str, Any]]], done: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for section, _ in plan[:done]:
        out[section] = out.get(section, 0) + 1
    return out


def _write(conn: Connection, batch: list[tuple[str, dict[str, Any]]], known: dict[str, set[int]]) -> None:
    """Write a slice of the plan inside the open transaction; ids are the source's (the target was empty).

    Every item is checked first, then each table gets one executemany (`_copy_rows`): a batch costs a few
    dozen statements instead of ten per item. No version or writer row is added for the copy itself: the
    source's own rows of both are in the plan, and are written as they are.

    Raises:
        InvalidItemError: an item the target refuses, named by section and id.
    """
    checked = []
    history: dict[str, list[dict[str, Any]]] = {}
    with writing_as(None):
        for section, item in batch:
            if section in HISTORY:  # as the source holds them: nothing to check that the source did not
                history.setdefault(section, []).append(item)
                continue
            try:
                if section.endswith("_context"):
                    kind = section.removesuffix("_context")
                    write_context(conn, kind, item["content"], changed_at=item["changed_at"])  # type: ignore[arg-type]
                else:
                    checked.append(check_item(section, item, known))
            except HomeportError as exc:
                if isinstance(exc, StoreError) and not isinstance(exc, InvalidItemError):
                    raise
                named = item.get("id", item.get("version"))
                raise InvalidItemError(f"{section} item {named}: {exc.message}; copy stopped before it") from exc
        write_items(conn, checked, record=False)
    for section, rows in history.items():
        insert_history(conn, section, rows)
