"""Export, import and copy carry what a memory acknowledged beyond its items' latest text: every version of
every item (deleted ones too), who wrote each, lifecycle states and tidy changesets. An export imported into
an empty store exports again byte for byte; a copy SQLite -> PostgreSQL -> SQLite keeps every history."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from homeport.errors import HomeportError, InvalidItemError
from homeport.store import Store, custom_data, decisions, patterns, progress, store_path_for
from homeport.store.copying import copy_memory
from homeport.store.item_history import get_item_history, purge_item, restore_version
from homeport.store.lifecycle import change_state, state_for
from homeport.store.provenance import Writer, writing_as
from homeport.store.tidy import propose_cleanup
from homeport.store.transfer import _collect, export_memory, import_memory

FIXTURES = Path(__file__).parent.parent / "fixtures" / "export_v1"
TYPES = ("decision", "progress", "system_pattern", "custom_data")


def new_store(root: Path, migrated_db: Path) -> Store:
    (root / ".git").mkdir(parents=True, exist_ok=True)
    store_path_for(root).parent.mkdir(parents=True)
    shutil.copyfile(migrated_db, store_path_for(root))
    return Store.open(root, create=False)


@contextmanager
def workspaces(migrated_db: Path, n: int) -> Iterator[list[tuple[Path, Store]]]:
    with tempfile.TemporaryDirectory() as tmp:
        made = [(Path(tmp) / f"ws{i}", new_store(Path(tmp) / f"ws{i}", migrated_db)) for i in range(n)]
        try:
            yield made
        finally:
            for _, s in made:
                s.close()


WORDS = st.text(st.sampled_from("abc é\n<>-"), min_size=1, max_size=12).filter(lambda t: t.strip())
WRITERS = st.one_of(st.none(), st.builds(Writer, st.sampled_from(["ann", "bob"]), st.sampled_from([None, "cli"])))
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("log"), st.sampled_from(TYPES), WORDS, WRITERS),
        st.tuples(st.just("update"), st.integers(0, 20), WORDS, WRITERS),
        st.tuples(st.just("delete"), st.integers(0, 20), st.just(""), WRITERS),
        st.tuples(st.just("restore"), st.integers(0, 20), st.integers(1, 4), WRITERS),
        st.tuples(st.just("archive"), st.integers(0, 20), st.booleans(), st.none()),
        st.tuples(st.just("pin"), st.integers(0, 20), st.sampled_from(["", "2030-01-01T00:00:00Z"]), st.none()),
        st.tuples(st.just("supersede"), st.integers(0, 20), st.integers(0, 20), st.none()),
        st.tuples(st.just("propose"), st.just(0), st.just(""), st.none()),
        st.tuples(st.just("purge"), st.integers(0, 20), st.just(""), st.none()),
    ),
    min_size=1,
    max_size=25,
)


def run(store: Store, ops: list[tuple[Any, ...]]) -> list[tuple[str, int]]:
    """Apply the drawn operations; each refused one (a restore of a live item, ...) changes nothing."""
    made: list[tuple[str, int]] = []
    for n, (op, a, b, writer) in enumerate(ops):
        with writing_as(writer):
            try:
                if op == "log":
                    made.append((a, _log(store, a, f"{b} {n}")))
                elif not made:
                    continue
                elif op == "update":
                    _update(store, *made[a % len(made)], f"{b} {n}")
                elif op == "delete":
                    _delete(store, *made[a % len(made)])
                elif op == "restore":
                    restore_version(store, *made[a % len(made)], b)
                elif op == "purge":
                    purge_item(store, *made[a % len(made)])
                elif op in ("archive", "pin", "supersede"):
                    item_type, item_id = made[a % len(made)]
                    with store.write() as conn:
                        if op == "archive":
                            change_state(conn, item_type, item_id, archived=b)
                        elif op == "pin":
                            change_state(conn, item_type, item_id, pinned=bool(b), valid_until=b or None)
                        else:
                            by = made[b % len(made)]
                            change_state(conn, item_type, item_id, superseded_type=by[0], superseded_id=by[1])
                else:
                    propose_cleanup(store, stale_days=1)
            except HomeportError:
                pass
    return made


def _log(store: Store, item_type: str, text: str) -> int:
    if item_type == "decision":
        return decisions.log_decision(store, text, rationale=text, tags=["t"])["id"]
    if item_type == "progress":
        return progress.log_progress(store, "TODO", text)["id"]
    if item_type == "system_pattern":
        return patterns.log_system_pattern(store, text, text)["id"]
    return custom_data.log_custom_data(store, "cat", text, {"v": text})["id"]


def _update(store: Store, item_type: str, item_id: int, text: str) -> None:
    if item_type == "decision":
        decisions.update_decision(store, item_id, rationale=text)
    elif item_type == "progress":
        progress.update_progress(store, item_id, description=text)
    elif item_type == "system_pattern":
        patterns.update_system_pattern(store, item_id, description=text)
    else:
        for row in _collect(store)["custom_data"]:
            if row["id"] == item_id:
                custom_data.log_custom_data(store, row["category"], row["key"], {"v": text})


def _delete(store: Store, item_type: str, item_id: int) -> None:
    if item_type == "decision":
        decisions.delete_decision(store, item_id)
    elif item_type == "progress":
        progress.delete_progress(store, item_id, cascade=True)
    elif item_type == "system_pattern":
        patterns.delete_system_pattern(store, item_id)
    else:
        for row in _collect(store)["custom_data"]:
            if row["id"] == item_id:
                custom_data.delete_custom_data(store, row["category"], row["key"])


def histories(store: Store, items: list[tuple[str, int]]) -> dict[tuple[str, int], Any]:
    out: dict[tuple[str, int], Any] = {}
    for key in set(items):
        try:
            out[key] = get_item_history(store, *key, limit=1000)
        except HomeportError as exc:  # purged: no history, on either side
            out[key] = type(exc).__name__
    return out


def files(root: Path, name: str = ".homeport/export") -> dict[str, str]:
    out = {p.name: p.read_text(encoding="utf-8") for p in (root / name).iterdir() if not p.name.startswith(".")}
    manifest = json.loads(out.pop("manifest.json"))
    manifest.pop("exported_at")
    out["manifest.json"] = json.dumps(manifest, sort_keys=True)
    return out


PROPERTY = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(OPS, st.sampled_from(["json", "markdown"]))
def test_an_export_imported_into_an_empty_store_exports_again_byte_for_byte(migrated_db, ops, fmt):
    with workspaces(migrated_db, 2) as [(root_a, a), (root_b, b)]:
        made = run(a, ops)
        export_memory(a, root_a, fmt=fmt)
        shutil.copytree(root_a / ".homeport/export", root_b / ".homeport/export")
        import_memory(b, root_b, mode="replace", allow_empty=True)
        shutil.rmtree(root_b / ".homeport/export")
        export_memory(b, root_b, fmt=fmt)
        assert files(root_b) == files(root_a)
        assert histories(b, made) == histories(a, made)
        for key in made:
            assert state_for(b, *key) == state_for(a, *key)


def test_a_deleted_item_keeps_its_history_and_its_id_through_an_import(migrated_db):
    with workspaces(migrated_db, 2) as [(root_a, a), (root_b, b)]:
        kept = decisions.log_decision(a, "kept")["id"]
        gone = decisions.log_decision(a, "gone")["id"]
        decisions.update_decision(a, gone, rationale="why")
        decisions.delete_decision(a, gone)
        export_memory(a, root_a)
        shutil.copytree(root_a / ".homeport/export", root_b / ".homeport/export")
        import_memory(b, root_b, mode="replace")
        assert [v["deleted"] for v in get_item_history(b, "decision", gone)] == [True, False, False]
        assert decisions.log_decision(b, "new")["id"] > gone > kept  # the deleted item's id is not reused
        restore_version(b, "decision", gone, 2)
        assert get_item_history(b, "decision", gone)[0]["fields"]["rationale"] == "why"


def test_replace_import_clears_the_history_and_states_of_the_replaced_memory(migrated_db):
    with workspaces(migrated_db, 2) as [(root_a, a), (root_b, b)]:
        decisions.log_decision(a, "theirs")
        ours = decisions.log_decision(b, "ours")["id"]
        decisions.update_decision(b, ours, rationale="local")
        with b.write() as conn:
            change_state(conn, "decision", ours, archived=True)
        propose_cleanup(b)
        export_memory(a, root_a)
        shutil.copytree(root_a / ".homeport/export", root_b / ".homeport/export")
        import_memory(b, root_b, mode="replace")
        after = _collect(b)
        assert after["item_states"] == [] and after["changesets"] == []
        assert len(get_item_history(b, "decision", ours)) == 1  # the export's decision 1, not ours
        assert {k: v for k, v in after.items() if k != "changesets"} == {
            k: v for k, v in _collect(a).items() if k != "changesets"
        }


def test_merge_keeps_local_history_and_adds_the_history_of_new_items(migrated_db):
    with workspaces(migrated_db, 2) as [(root_a, a), (root_b, b)]:
        shared = decisions.log_decision(a, "shared")["id"]
        decisions.update_decision(a, shared, rationale="exported")
        fresh = patterns.log_system_pattern(a, "Fresh", "one")["id"]
        patterns.update_system_pattern(a, fresh, description="two")
        decisions.log_decision(b, "local one")
        export_memory(a, root_a)
        shutil.copytree(root_a / ".homeport/export", root_b / ".homeport/export")
        result = import_memory(b, root_b, mode="merge")
        assert result["history_kept_local"] == {"item_versions": 2}
        # decision 1 was b's: its history stays, the import is its next version
        assert [v["fields"]["summary"] for v in get_item_history(b, "decision", shared)] == ["shared", "local one"]
        local = {p["name"]: p["id"] for p in _collect(b)["system_patterns"]}["Fresh"]
        assert [v["fields"]["description"] for v in get_item_history(b, "system_pattern", local)] == ["two", "one"]
        once = _collect(b)
        import_memory(b, root_b, mode="merge")
        assert _collect(b) == once


def test_an_export_from_before_history_still_imports(migrated_db, tmp_path):
    """tests/fixtures/export_v1 was written by `export_memory` at commit 571d8ff, before format version 2."""
    root = tmp_path / "ws"
    store = new_store(root, migrated_db)
    try:
        shutil.copytree(FIXTURES, root / ".homeport/export")
        # an item_versions.json beside a version 1 manifest is left over from another export: never read
        (root / ".homeport/export/item_versions.json").write_text("[{}]")
        result = import_memory(store, root, mode="replace")
        data = _collect(store)
        assert result["counts"]["decisions"] == len(data["decisions"]) > 0
        for d in data["decisions"]:
            assert len(get_item_history(store, "decision", d["id"])) == 1
    finally:
        store.close()


def test_an_export_from_a_newer_homeport_is_refused_by_name(migrated_db, tmp_path):
    root = tmp_path / "ws"
    store = new_store(root, migrated_db)
    try:
        export_memory(store, root)
        manifest = root / ".homeport/export/manifest.json"
        manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "format_version": 3}))
        with pytest.raises(InvalidItemError, match=r"format_version 3 .*upgrade Homeport"):
            import_memory(store, root)
    finally:
        store.close()


def test_a_history_row_that_does_not_fit_its_table_is_refused_and_nothing_changes(migrated_db):
    with workspaces(migrated_db, 2) as [(root_a, a), (root_b, b)]:
        decisions.log_decision(a, "one")
        decisions.log_decision(b, "mine")
        export_memory(a, root_a)
        shutil.copytree(root_a / ".homeport/export", root_b / ".homeport/export")
        path = root_b / ".homeport/export/item_versions.json"
        rows = json.loads(path.read_text())
        rows[0]["deleted"] = "no"
        path.write_text(json.dumps(rows))
        before = _collect(b)
        with pytest.raises(InvalidItemError, match=r"item_versions.json row 0: field deleted is a str"):
            import_memory(b, root_b, mode="replace")
        assert _collect(b) == before


@pytest.mark.postgres
@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
@pytest.mark.parametrize("layout", ["postgres_stores", "shared_postgres_stores"])
def test_a_copy_to_postgres_and_back_keeps_every_history(migrated_db, request, layout, ops):
    with workspaces(migrated_db, 2) as [(root_a, a), (_, b)]:
        made = run(a, ops)
        middle = request.getfixturevalue(layout).get(f"history-{root_a}", create=True)
        copy_memory(a, middle, replace=True)
        assert histories(middle, made) == histories(a, made)
        copy_memory(middle, b, replace=True)
        assert histories(b, made) == histories(a, made)
        assert _collect(b) == _collect(a)


@pytest.mark.postgres
@pytest.mark.parametrize("layout", ["postgres_stores", "shared_postgres_stores"])
def test_a_copy_keeps_a_deleted_items_id_from_being_given_again(migrated_db, request, layout, tmp_path):
    with workspaces(migrated_db, 1) as [(root_a, a)]:
        decisions.log_decision(a, "kept")
        gone = decisions.log_decision(a, "gone")["id"]
        decisions.delete_decision(a, gone)
        target = request.getfixturevalue(layout).get(f"ids-{root_a}", create=True)
        copy_memory(a, target, replace=True)
        fresh = decisions.log_decision(target, "new")["id"]
        assert fresh > gone
        assert [v["deleted"] for v in get_item_history(target, "decision", gone)] == [True, False]
