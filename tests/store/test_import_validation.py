"""Nothing lost on bad input: an import validates every item as the tools do and writes all or nothing,
Markdown is parsed line by line, dry runs write nothing, and export/import touch regular files only."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_transfer import copy_export, memories, sample, workspaces, write_memory

from homeport.errors import InvalidItemError, StoreError
from homeport.store import Store, decisions, progress
from homeport.store.fields import MAX_TEXT_CHARS, RECORDS
from homeport.store.transfer import _collect, export_memory, import_memory

EXPORT = ".homeport/export"


@pytest.fixture
def pair(migrated_db):
    with workspaces(migrated_db, 2) as made:
        yield made


def exported(root: Path, section: str) -> list[dict[str, Any]]:
    return json.loads((root / EXPORT / f"{section}.json").read_text(encoding="utf-8"))


def rewrite(root: Path, section: str, items: Any) -> None:
    (root / EXPORT / f"{section}.json").write_text(json.dumps(items), encoding="utf-8")


# --- every field is checked as the tools check it ---------------------------------------------------------------


BAD_DECISIONS = [
    ("tags", "abc", "tags"),  # a string is not a list of tags (it used to become the tags a, b, c)
    ("tags", ["ok", 7], "tags.1"),
    ("summary", 42, "summary"),
    ("summary", "   ", "summary"),
    ("rationale", ["a"], "rationale"),
    ("rationale", "x" * (MAX_TEXT_CHARS + 1), "rationale"),
    ("id", 0, "id"),
    ("id", 2**63, "id"),
    ("id", "1", "id"),
    ("id", True, "id"),
    ("created_at", "yesterday", "created_at"),
    ("colour", "blue", "colour"),  # an unknown field is refused, not dropped
]


@pytest.mark.parametrize(("field", "value", "named"), BAD_DECISIONS)
def test_an_invalid_decision_is_refused_naming_item_and_field_and_nothing_is_written(pair, field, value, named):
    (root_a, a), (root_b, b) = pair
    sample(a)
    export_memory(a, root_a)
    decisions.log_decision(b, "kept", rationale="keep me")
    before = _collect(b)
    copy_export(root_a, root_b)
    items = exported(root_b, "decisions")
    items[1][field] = value
    rewrite(root_b, "decisions", items)
    for mode in ("merge", "replace"):
        with pytest.raises(InvalidItemError) as info:
            import_memory(b, root_b, mode=mode)
        assert info.value.code == "invalid_item"
        assert "decisions.json item 1" in info.value.message and f"field {named}:" in info.value.message
        assert _collect(b) == before


@pytest.mark.parametrize(
    ("section", "damage", "named"),
    [
        ("progress", lambda items: items[0].update(parent_id=-1), "field parent_id"),
        ("progress", lambda items: items[0].update(status="s" * 65), "at most 64 characters"),
        ("custom_data", lambda items: items[0].update(value={"big": "x" * 1_000_001}), "1,000,000"),
        ("custom_data", lambda items: items[0].update(value=float("nan")), "not JSON"),
        ("product_context", lambda items: items[0].update(content=["not", "an", "object"]), "field content"),
        ("product_context", lambda items: items.pop(0), r"versions \[2\] are not 1, 2, 3"),
        ("links", lambda items: items[0].update(source_type="ticket"), "field source_type"),
        ("links", lambda items: items.append(dict(items[0], id=99)), "both write"),
        ("decisions", lambda items: items.append(dict(items[0], summary="other")), "both write 1"),
        ("system_patterns", lambda items: items.append(dict(items[0], id=50, name="OUTBOX")), "both write 'outbox'"),
        ("decisions", lambda items: items.__setitem__(0, "not an object"), "not an object"),
    ],
)
def test_items_the_store_would_merge_or_drop_silently_are_refused(pair, section, damage, named):
    (root_a, a), (root_b, b) = pair
    sample(a)
    export_memory(a, root_a)
    decisions.log_decision(b, "kept")
    before = _collect(b)
    copy_export(root_a, root_b)
    items = exported(root_b, section)
    damage(items)
    (root_b / EXPORT / f"{section}.json").write_text(json.dumps(items), encoding="utf-8")
    with pytest.raises(InvalidItemError, match=named):
        import_memory(b, root_b, mode="replace")
    assert _collect(b) == before


def test_a_link_to_an_item_that_is_not_there_names_the_link(pair):
    (root_a, a), (root_b, b) = pair
    sample(a)
    export_memory(a, root_a)
    copy_export(root_a, root_b)
    items = exported(root_b, "links")
    items[0]["target_id"] = 999
    rewrite(root_b, "links", items)
    with pytest.raises(InvalidItemError, match=r"links item 0 \(id 1\): decision 999 does not exist"):
        import_memory(b, root_b)
    assert set(map(len, _collect(b).values())) == {0}


# --- property: export -> import is the identity; a mutated export is imported as read, or refused --------------


def canonical(data: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """What the store keeps of a document, as the records read it (trimmed text, ordered tags, UTC stamps)."""
    key = {s: ("version" if s.endswith("_context") else "id") for s in data}
    return {
        section: sorted((RECORDS[section].model_validate(i).model_dump() for i in items), key=lambda i: i[key[section]])
        for section, items in data.items()
    }


def _uids_as_given(collected: dict[str, list[dict[str, Any]]], document: dict[str, list[dict[str, Any]]]) -> dict:
    """`collected`, with the uid an item got on import blanked where the document gave it none (a new one is made)."""
    for section, items in document.items():
        for got, want in zip(collected[section], items, strict=False):
            if "uid" in want and want["uid"] is None and got.get("uid"):
                got["uid"] = None
    return collected


FIELD_NAMES = sorted({f for model in RECORDS.values() for f in model.model_fields} | {"extra"})
MUTANT_VALUES = (
    st.none()
    | st.booleans()
    | st.integers(-3, 12)
    | st.sampled_from([2**63, 1.5, "", " x ", "abc", "2026-01-01T00:00:00Z", "DONE", "decision", [], ["a", "A"], {}])
    | st.lists(st.sampled_from(["a", "b", 1]), max_size=2)
)
MUTATIONS = st.tuples(
    st.sampled_from(list(RECORDS)), st.integers(0, 5), st.sampled_from(FIELD_NAMES), MUTANT_VALUES, st.booleans()
)
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(memories(st.characters(codec="utf-8")), st.lists(MUTATIONS, min_size=1, max_size=3))
def test_a_mutated_export_is_imported_exactly_as_read_or_refused_with_nothing_changed(migrated_db, plan, mutations):
    with workspaces(migrated_db, 2) as [(root_a, a), (root_b, b)]:
        write_memory(a, plan)
        write_memory(b, plan)  # the target holds memory too: a refusal must leave all of it
        export_memory(a, root_a)
        copy_export(root_a, root_b)
        document = {s: exported(root_b, s) for s in RECORDS}
        for section, index, field, value, delete in mutations:
            items = document[section]
            if not items:
                continue
            item = items[index % len(items)]
            if delete:
                item.pop(field, None)
            else:
                item[field] = copy.deepcopy(value)
        for section, items in document.items():
            rewrite(root_b, section, items)
        before = _collect(b)
        try:
            import_memory(b, root_b, mode="replace", allow_empty=True)
        except InvalidItemError:
            assert _collect(b) == before
            return
        items = {s: v for s, v in _collect(b).items() if s in RECORDS}  # history: test_transfer_history.py
        assert _uids_as_given(items, canonical(document)) == canonical(document)


@PROPERTY
@given(memories(st.characters(codec="utf-8")), st.sampled_from(["json", "markdown"]))
def test_a_dry_run_reports_every_change_and_writes_nothing(migrated_db, plan, fmt):
    with workspaces(migrated_db, 2) as [(root_a, a), (root_b, b)]:
        write_memory(a, plan)
        decisions.log_decision(b, "local")
        export_memory(a, root_a, fmt=fmt)
        copy_export(root_a, root_b)
        before = _collect(b)
        planned = import_memory(b, root_b, mode="replace", dry_run=True, allow_empty=True)
        assert _collect(b) == before
        done = import_memory(b, root_b, mode="replace", allow_empty=True)
        assert planned["changes"] == done["changes"] and planned["dry_run"] and not done["dry_run"]
        assert _collect(b) == _collect(a)


# --- Markdown ---------------------------------------------------------------------------------------------------


def markdown_pair(pair) -> tuple[Path, Store, Path]:
    (root_a, a), (root_b, b) = pair
    sample(a)
    export_memory(a, root_a, fmt="markdown")
    copy_export(root_a, root_b)
    import_memory(b, root_b)
    return root_b, b, root_b / EXPORT / "decisions.md"


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda t: t.replace("<!-- end rationale -->\n", "", 1), r"line 1[0-9]: field rationale opened on line 1"),
        (lambda t: t.replace("<!-- end rationale -->", "<!-- end rational -->", 1), "field rationale"),
        (lambda t: t.replace("<!-- field rationale -->\n", "", 1), "not closed|lost its field|unexpected marker"),
        (lambda t: t.replace("<!-- end item -->\n", "", 1), r"line \d+: the item opened on line \d+ is not closed"),
        (lambda t: t.replace("<!-- field rationale -->", "<!-- field why -->", 1), "unknown field 'why'"),
        (lambda t: t.replace("count: 2", "count: 3", 1), "count: 3 but the file holds 2"),
        (lambda t: t[: t.rindex("<!-- item ")], "count: 2 but the file holds 1"),
        (
            lambda t: t.replace("<!-- field rationale -->\nreaders never block\n<!-- end rationale -->\n", ""),
            "lost its field",
        ),
    ],
)
def test_a_damaged_markdown_export_is_refused_with_the_line_and_nothing_changes(pair, damage, problem):
    root, store, path = markdown_pair(pair)
    before = _collect(store)
    path.write_text(damage(path.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(InvalidItemError, match=problem) as info:
        import_memory(store, root)
    assert "decisions.md" in info.value.message
    assert _collect(store) == before
    assert [d["rationale"] for d in before["decisions"]] == ["readers never block", None]


# --- paths and files --------------------------------------------------------------------------------------------


def test_the_default_directory_is_named_in_an_error_not_none(pair, tmp_path):
    (root, store), _ = pair
    (root / ".homeport").rename(tmp_path / "elsewhere")
    (root / ".homeport").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(InvalidItemError) as info:
        export_memory(store, root)
    assert "None" not in info.value.message and "'.homeport/export'" in info.value.message


@pytest.mark.parametrize("kind", ["symlink_out", "symlink_in", "fifo", "directory"])
def test_export_replaces_only_regular_files_and_writes_nothing_when_one_is_not(pair, tmp_path, kind):
    (root, store), _ = pair
    sample(store)
    target = root / EXPORT
    target.mkdir(parents=True)
    outside = tmp_path / "victim.json"
    outside.write_text("precious")
    special = target / "links.json"
    if kind == "symlink_out":
        special.symlink_to(outside)
    elif kind == "symlink_in":
        (root / "mine.json").write_text("mine")
        special.symlink_to(root / "mine.json")
    elif kind == "fifo":
        os.mkfifo(special)
    else:
        special.mkdir()
    with pytest.raises(InvalidItemError, match=r"links\.json is a") as info:
        export_memory(store, root)
    assert info.value.code == "invalid_item"
    assert outside.read_text() == "precious"
    assert sorted(p.name for p in target.iterdir()) == ["links.json"]  # nothing else was written


@pytest.mark.parametrize("kind", ["fifo", "symlink_out", "symlink_out_manifest"])
def test_import_refuses_fifos_and_symlinks_that_leave_the_workspace(pair, tmp_path, kind):
    (root_a, a), (root_b, b) = pair
    sample(a)
    export_memory(a, root_a)
    copy_export(root_a, root_b)
    name = "manifest.json" if kind == "symlink_out_manifest" else "decisions.json"
    path = root_b / EXPORT / name
    outside = tmp_path / name
    os.replace(path, outside)
    if kind == "fifo":
        os.mkfifo(path)  # opening it to read would block forever
    else:
        path.symlink_to(outside)
    problem = r"is not a regular file" if kind == "fifo" else r"is a symlink to .*, outside the workspace"
    with pytest.raises(InvalidItemError, match=problem):
        import_memory(b, root_b)
    assert set(map(len, _collect(b).values())) == {0}


def test_a_symlink_inside_the_workspace_is_imported(pair):
    (root_a, a), (root_b, b) = pair
    sample(a)
    export_memory(a, root_a)
    copy_export(root_a, root_b)
    path = root_b / EXPORT / "decisions.json"
    os.replace(path, root_b / "decisions-copy.json")
    path.symlink_to(root_b / "decisions-copy.json")
    assert import_memory(b, root_b)["counts"]["decisions"] == 2


@pytest.mark.parametrize("dangling", [False, True])
def test_a_store_file_that_is_a_symlink_is_refused(tmp_path, migrated_db, dangling):
    victim = tmp_path / "other" / "homeport.db"
    victim.parent.mkdir()
    if not dangling:
        victim.write_bytes(migrated_db.read_bytes())
    root = tmp_path / "ws"
    (root / ".homeport").mkdir(parents=True)
    (root / ".homeport" / "homeport.db").symlink_to(victim)
    with pytest.raises(StoreError, match="is a symlink"):
        Store.open(root, create=True)
    assert victim.exists() is not dangling


# --- replace-style writes ---------------------------------------------------------------------------------------


def test_replace_with_an_empty_export_is_refused_unless_explicit(pair):
    (root_a, a), (root_b, b) = pair
    export_memory(a, root_a)  # nothing in it
    copy_export(root_a, root_b)
    sample(b)
    before = _collect(b)
    with pytest.raises(InvalidItemError, match="allow_empty") as info:
        import_memory(b, root_b, mode="replace")
    assert info.value.code == "invalid_item" and _collect(b) == before
    import_memory(b, root_b, mode="replace", allow_empty=True)
    assert set(map(len, _collect(b).values())) == {0}


def test_progress_parents_from_an_import_cannot_close_a_cycle_with_local_entries(pair):
    _, (root_b, b) = pair
    top = progress.log_progress(b, "TODO", "top")
    child = progress.log_progress(b, "TODO", "child", parent_id=top["id"])
    export_memory(b, root_b, output_dir="mine")
    # The export says `top` now hangs under `child`: with the local child of top, a loop.
    items = json.loads((root_b / "mine/progress.json").read_text())
    items = [dict(i, parent_id=child["id"]) for i in items if i["id"] == top["id"]]
    (root_b / "mine/progress.json").write_text(json.dumps(items))
    before = _collect(b)
    with pytest.raises(InvalidItemError, match=r"cycle \(1 -> 2 -> 1\)|cycle \(2 -> 1 -> 2\)|own ancestor"):
        import_memory(b, root_b, input_dir="mine")
    assert _collect(b) == before


@pytest.mark.parametrize("fmt", ["json", "markdown"])
@pytest.mark.parametrize("damage", ["delete the file", "cut the list"])
def test_an_export_with_fewer_items_than_its_manifest_counts_is_refused(pair, fmt, damage):
    (root_a, a), (root_b, b) = pair
    sample(a)
    export_memory(a, root_a, fmt=fmt)
    copy_export(root_a, root_b)
    sample(b)
    before = _collect(b)
    path = root_b / EXPORT / f"decisions.{'json' if fmt == 'json' else 'md'}"
    if damage == "delete the file":
        path.unlink()
    elif fmt == "json":
        rewrite(root_b, "decisions", exported(root_b, "decisions")[:1])
    else:
        text = path.read_text(encoding="utf-8")
        path.write_text(text[: text.rindex("<!-- item ")].replace("count: 2", "count: 1"), encoding="utf-8")
    with pytest.raises(InvalidItemError, match=r"the manifest counts 2 decisions but the files hold [01]"):
        import_memory(b, root_b, mode="replace")
    assert _collect(b) == before


def test_a_merge_of_a_shortened_export_imports_the_subset(pair):
    (root_a, a), (root_b, b) = pair
    sample(a)
    export_memory(a, root_a)
    copy_export(root_a, root_b)
    (root_b / EXPORT / "decisions.json").unlink()
    (root_b / EXPORT / "links.json").unlink()  # they join decisions
    assert import_memory(b, root_b)["counts"]["decisions"] == 0
    assert len(_collect(b)["progress"]) == 2


@PROPERTY
@given(memories(st.characters(codec="utf-8")), st.data())
def test_deleting_any_marker_line_of_a_markdown_export_is_refused_with_nothing_changed(migrated_db, plan, data):
    with workspaces(migrated_db, 2) as [(root_a, a), (root_b, b)]:
        write_memory(a, plan)
        write_memory(b, plan)
        export_memory(a, root_a, fmt="markdown")
        copy_export(root_a, root_b)
        files = sorted(p for p in (root_b / EXPORT).glob("*.md") if "<!--" in p.read_text(encoding="utf-8"))
        if not files:
            return
        path = data.draw(st.sampled_from(files))
        lines = path.read_text(encoding="utf-8").split("\n")
        markers = [i for i, line in enumerate(lines) if line.startswith("<!--")]
        del lines[data.draw(st.sampled_from(markers))]
        path.write_text("\n".join(lines), encoding="utf-8")
        before = _collect(b)
        for mode in ("merge", "replace"):
            with pytest.raises(InvalidItemError, match=rf"{path.name}( line \d+)?:"):
                import_memory(b, root_b, mode=mode)
            assert _collect(b) == before
