"""The tidy promise as a property: whatever is proposed, amended, applied and reverted, reverting everything
gives back an export byte for byte the export before the first apply; a refused apply or revert changes nothing.

The default profile runs a few dozen random histories (well under 30 s); `HOMEPORT_HYPOTHESIS=deep` runs
10,000.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from homeport.errors import ChangesetConflictError, ChangesetGuardError, InvalidItemError
from homeport.store import Store, decisions, links, patterns, progress, store_path_for, tidy
from homeport.store._transfer_history import HISTORY
from homeport.store.schema import progress as progress_table
from homeport.store.transfer import export_memory

DEEP = settings().max_examples >= 1000
RUNS = 10_000 if DEEP else 40

SUBJECTS = ["SQLite in WAL mode", "PostgreSQL 16", "one schema per workspace", "signed handles", "the keyring"]
FRAMES = ["Use {} for the store", "Use {} for the local store", "We use {} for the store", "Never use {}"]
STATUSES = ["TODO", "IN_PROGRESS", "DONE"]

decision_texts = st.builds(lambda f, s: f.format(s), st.sampled_from(FRAMES), st.sampled_from(SUBJECTS))
tag_lists = st.lists(st.sampled_from(["db", "DB", "store", "auth", "perf"]), max_size=3)
memories = st.fixed_dictionaries(
    {
        "decisions": st.lists(st.tuples(decision_texts, tag_lists), min_size=2, max_size=12),
        "patterns": st.lists(st.sampled_from(["Repository", "Unit of work", "Outbox"]), max_size=3, unique=True),
        "progress": st.lists(st.tuples(st.sampled_from(STATUSES), st.booleans()), max_size=5),
        "links": st.lists(
            st.tuples(st.integers(0, 11), st.integers(0, 11), st.sampled_from(["superseded_by", "relates_to"])),
            min_size=2,
            max_size=8,
        ),
    }
)
actions = st.builds(
    lambda first, rest: [first, *rest],
    st.tuples(st.just("propose"), st.none()),
    st.lists(
        st.one_of(
            st.tuples(st.just("propose"), st.none()),
            st.tuples(st.just("propose_kinds"), st.lists(st.sampled_from(["duplicate", "superseded", "stale"]))),
            st.tuples(st.just("reject"), st.integers(0, 20)),
            st.tuples(
                st.just("add"),
                st.tuples(
                    st.sampled_from(["archive", "merge", "supersede", "retag", "relink"]),
                    st.integers(0, 20),
                    st.integers(0, 20),
                ),
            ),
            st.tuples(st.just("apply"), st.booleans() | st.just(True)),
            st.tuples(st.just("revert"), st.integers(0, 5)),
        ),
        min_size=1,
        max_size=10,
    ),
)


def export_bytes(store: Any, root: Path, name: str) -> dict[str, bytes]:
    """The export's item files (the history files record the apply and the revert, as they should)."""
    export_memory(store, root, output_dir=name)
    out = {}
    for path in sorted((root / name).iterdir()):
        if path.stem in HISTORY:
            continue
        body = path.read_bytes()
        if path.name == "manifest.json":
            manifest = json.loads(body)
            del manifest["exported_at"]
            manifest["counts"] = {k: v for k, v in manifest["counts"].items() if k not in HISTORY}
            body = json.dumps(manifest, sort_keys=True).encode()
        out[path.name] = body
    return out


def build(store: Any, memory: dict[str, Any]) -> list[tuple[str, int]]:
    items: list[tuple[str, int]] = []
    for text, tags in memory["decisions"]:
        items.append(("decision", decisions.log_decision(store, text, tags=tags)["id"]))
    for name in memory["patterns"]:
        items.append(
            ("system_pattern", patterns.log_system_pattern(store, name, f"{name} as the project does it")["id"])
        )
    for status, old in memory["progress"]:
        entry = progress.log_progress(store, status, f"finish the {status.lower()} work")
        items.append(("progress", entry["id"]))
        if old:
            with store.write() as conn:
                conn.execute(
                    progress_table.update()
                    .where(progress_table.c.id == entry["id"])
                    .values(updated_at="2020-01-01T00:00:00.000000Z")
                )
    for a, b, relationship in memory["links"]:
        if a < len(items) and b < len(items) and a != b:
            links.link_items(store, *items[a], *items[b], relationship)
    return items


def added_operation(store: Any, items: list[tuple[str, int]], kind: str, i: int, j: int) -> dict[str, Any] | None:
    a, b = items[i % len(items)], items[j % len(items)]
    if kind == "archive":
        return {"op": "archive", "item": f"{a[0]}:{a[1]}"}
    if kind == "merge" and a[0] == b[0] and a != b:
        return {"op": "merge", "item": f"{a[0]}:{a[1]}", "into": f"{b[0]}:{b[1]}"}
    if kind == "supersede" and a != b:
        return {"op": "supersede", "item": f"{a[0]}:{a[1]}", "by": f"{b[0]}:{b[1]}"}
    if kind == "retag" and a[0] in ("decision", "system_pattern"):
        return {"op": "retag", "item": f"{a[0]}:{a[1]}", "tags": ["tidied", f"t{j % 3}"]}
    if kind == "relink" and a != b:
        with store.read() as conn:
            found = links_of(conn, a)
        if found:
            link = found[j % len(found)]
            return {"op": "relink", "link_id": link["id"], "from": f"{a[0]}:{a[1]}", "to": f"{b[0]}:{b[1]}"}
    return None


def links_of(conn: Any, key: tuple[str, int]) -> list[dict[str, Any]]:
    from homeport.store.schema import links as table

    c = table.c
    rows = conn.execute(
        table.select().where(
            ((c.source_type == key[0]) & (c.source_id == key[1]))
            | ((c.target_type == key[0]) & (c.target_id == key[1]))
        )
    )
    return [dict(r._mapping) for r in rows]


@settings(max_examples=RUNS)
@given(memory=memories, steps=actions)
def test_any_history_of_changesets_reverted_gives_back_the_export_byte_for_byte(migrated_db, memory, steps):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store_path_for(root).parent.mkdir()
        shutil.copyfile(migrated_db, store_path_for(root))  # SQLite: the PostgreSQL tests run the same code
        store = Store.open(root, create=False)
        try:
            run(store, root, memory, steps)
        finally:
            store.close()


def run(store: Any, root: Path, memory: dict[str, Any], steps: list[tuple[str, Any]]) -> None:
    items = build(store, memory)
    original = export_bytes(store, root, "original")
    proposed: list[int] = []
    applied: list[int] = []
    for n, (kind, arg) in enumerate(steps):
        if kind in ("propose", "propose_kinds"):
            proposed.append(tidy.propose_cleanup(store, kinds=arg)["id"])
        elif kind in ("reject", "add") and proposed:
            target = proposed[-1]
            try:
                if kind == "reject":
                    entries = tidy.get_changeset(store, target)["entries"]
                    if entries:
                        tidy.amend_changeset(store, target, reject=[entries[arg % len(entries)]["id"]])
                else:
                    op = added_operation(store, items, *arg)
                    if op is not None:
                        tidy.amend_changeset(store, target, add=[op])
            except InvalidItemError:
                pass  # amending a changeset that is no longer proposed
        elif kind == "apply" and proposed:
            target = proposed.pop()
            before = export_bytes(store, root, f"before-apply-{n}")
            try:
                done = tidy.apply_changeset(store, target, force=arg)
                applied.append(target)
                event(f"applied {done['counts']['operations'] > 0}: " + ",".join(sorted(_ops(store, target))))
            except (ChangesetConflictError, ChangesetGuardError, InvalidItemError):
                assert export_bytes(store, root, f"after-refusal-{n}") == before  # all or nothing
        elif kind == "revert" and applied:
            target = applied[-(arg % len(applied)) - 1]
            before = export_bytes(store, root, f"before-revert-{n}")
            try:
                tidy.revert_changeset(store, target)
                applied.remove(target)
                event("reverted mid-way")
            except ChangesetConflictError:
                assert export_bytes(store, root, f"after-refusal-{n}") == before
    for target in reversed(applied):
        tidy.revert_changeset(store, target)
    assert export_bytes(store, root, "reverted") == original


def _ops(store: Any, changeset_id: int) -> set[str]:
    entries = tidy.get_changeset(store, changeset_id)["entries"]
    return {op["op"] for e in entries if e["accepted"] for op in e["operations"]}
