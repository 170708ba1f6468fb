"""Export and import: exact JSON and full-fidelity Markdown round trips (property-tested), merge and
replace, and paths that must stay inside the workspace."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from homeport.errors import HomeportError, InvalidItemError
from homeport.store import (
    SCHEMA_REVISION,
    Store,
    contexts,
    custom_data,
    decisions,
    links,
    patterns,
    progress,
    search,
    store_path_for,
)
from homeport.store.fields import MAX_LABEL_CHARS
from homeport.store.transfer import _collect, export_memory, import_memory

SECTIONS = ["decisions", "progress", "system_patterns", "custom_data", "product_context", "active_context", "links"]
HISTORY = ["item_versions", "item_writers", "changesets", "item_states", "item_branches", "item_citations"]


def new_store(root: Path, migrated_db: Path) -> Store:
    (root / ".git").mkdir(parents=True, exist_ok=True)
    store_path_for(root).parent.mkdir(parents=True)
    shutil.copyfile(migrated_db, store_path_for(root))
    return Store.open(root, create=False)


@contextmanager
def workspaces(migrated_db: Path, n: int) -> Iterator[list[tuple[Path, Store]]]:
    """`n` fresh workspaces with empty stores, removed afterwards (one set per hypothesis example)."""
    with tempfile.TemporaryDirectory() as tmp:
        made = [(Path(tmp) / f"ws{i}", new_store(Path(tmp) / f"ws{i}", migrated_db)) for i in range(n)]
        try:
            yield made
        finally:
            for _, s in made:
                s.close()


def copy_export(src_root: Path, dst_root: Path, name: str = ".homeport/export") -> str:
    shutil.copytree(src_root / ".homeport" / "export", dst_root / name)
    return name


def exported_files(root: Path, name: str = ".homeport/export") -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted((root / name).iterdir()) if p.name != "manifest.json"}


def search_rows(store: Store) -> list[tuple]:
    """The index, with the words of each item's tags sorted (their order in the index does not matter)."""
    with store.read() as conn:
        rows = conn.exec_driver_sql(
            "SELECT item_type, item_id, category, updated_at, title, body, tags FROM search_index"
        ).all()
    return sorted((*row[:6], sorted(row[6].split(" "))) for row in rows)


# --- generated memories ----------------------------------------------------------------------------------------

# Pieces that once confused Markdown exports: comment markers, headings, front matter, fences, escapes.
TRICKY = [
    "<!--",
    "-->",
    "<!-- end item -->",
    "<!-- field summary -->",
    "<!-- end summary -->",
    "\n## heading\n",
    "## ",
    "# ",
    "---",
    "\n---\n",
    "```",
    "```json\n",
    "<",
    ">",
    "\\u003c",
    "{",
    "}",
    " -->\n",
    "\n",
    "\n\n",
    "\t",
    " ",
    "é",
    "日本語",
    "🚀",
    "\u2028",
    "\x85",
    "\x00",
    '"',
    "\\",
]


def texts(alphabet: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(TRICKY) | st.text(alphabet, max_size=6), max_size=5).map("".join)


def json_values(text: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text
    return st.recursive(
        scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=6
    )


def memories(alphabet: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    """What `write_memory` writes: items of every type with tricky text, a progress forest, deleted ids, links."""
    text = texts(alphabet)
    nonblank = text.filter(lambda s: s.strip())
    # A status is a short label (at most 64 characters); five tricky pieces can be longer than that.
    status = nonblank.filter(lambda s: len(s) <= MAX_LABEL_CHARS["status"])
    # U+001F separates aggregated tag lists; tags holding it are refused (tested in test_store).
    tags = st.lists(text.filter(lambda s: "\x1f" not in s), max_size=3)
    values = json_values(text)
    return st.fixed_dictionaries(
        {
            "decisions": st.lists(st.tuples(nonblank, st.none() | text, st.none() | text, tags), max_size=4),
            "deleted_decisions": st.lists(st.integers(0, 3), max_size=2),
            "progress": st.lists(st.tuples(status, nonblank, st.none() | st.integers(0, 5)), max_size=5),
            "patterns": st.lists(
                st.tuples(nonblank, nonblank, tags), max_size=3, unique_by=lambda p: p[0].strip().casefold()
            ),
            "custom": st.lists(
                st.tuples(nonblank, nonblank, values), max_size=3, unique_by=lambda c: (c[0].strip(), c[1].strip())
            ),
            "product": st.lists(st.dictionaries(text, values, max_size=3), max_size=3),
            "active": st.lists(st.dictionaries(text, values, max_size=2), max_size=2),
            "links": st.lists(
                st.tuples(st.integers(0, 20), st.integers(0, 20), nonblank, st.none() | text), max_size=5
            ),
        }
    )


def plan_of(**sections: list) -> dict[str, Any]:
    empty = {
        "decisions": [],
        "deleted_decisions": [],
        "progress": [],
        "patterns": [],
        "custom": [],
        "product": [],
        "active": [],
        "links": [],
    }
    return empty | sections


def write_memory(store: Store, plan: dict[str, Any]) -> None:
    nodes: list[tuple[str, int]] = []
    made = [
        decisions.log_decision(store, s, rationale=r, implementation_details=i, tags=t)["id"]
        for s, r, i, t in plan["decisions"]
    ]
    for index in sorted(set(plan["deleted_decisions"])):
        if index < len(made):
            decisions.delete_decision(store, made.pop(index))
    nodes += [("decision", i) for i in made]
    placed: list[int] = []
    for status, description, parent in plan["progress"]:
        parent_id = placed[parent] if parent is not None and parent < len(placed) else None
        placed.append(progress.log_progress(store, status, description, parent_id=parent_id)["id"])
    nodes += [("progress", i) for i in placed]
    nodes += [
        ("system_pattern", patterns.log_system_pattern(store, n, d, tags=t)["id"]) for n, d, t in plan["patterns"]
    ]
    nodes += [("custom_data", custom_data.log_custom_data(store, c, k, v)["id"]) for c, k, v in plan["custom"]]
    for kind in ("product", "active"):
        for document in plan[kind]:
            contexts.update_context(store, kind, content=document, allow_empty=True)
        if plan[kind]:
            nodes.append((f"{kind}_context", 1))
    for a, b, relationship, description in plan["links"]:
        if nodes and nodes[a % len(nodes)] != nodes[b % len(nodes)]:
            links.link_items(
                store, *nodes[a % len(nodes)], *nodes[b % len(nodes)], relationship, description=description
            )


def assert_round_trip(migrated_db: Path, plan: dict[str, Any], fmt: str) -> None:
    with workspaces(migrated_db, 2) as [(root_a, a), (root_b, b)]:
        write_memory(a, plan)
        before = _collect(a)
        out = export_memory(a, root_a, fmt=fmt)
        assert out["counts"] == {k: len(v) for k, v in before.items()}
        name = copy_export(root_a, root_b, "incoming")
        result = import_memory(b, root_b, input_dir=name, mode="merge")
        assert result["counts"] == out["counts"]
        assert _collect(b) == before
        assert search_rows(b) == search_rows(a)
        export_memory(b, root_b, fmt=fmt)
        assert exported_files(root_b) == exported_files(root_a)


# Text that becomes part of a Markdown heading (summary, status, name, category, key, relationship).
HEADING_PLAN = plan_of(
    decisions=[("x <!-- end item --> y", "rationale", None, [])],
    progress=[("<!-- end item -->", "description", None)],
    patterns=[("<!-- end item -->", "description", [])],
    custom=[("<!-- end item -->", "<!-- end item -->", {"a": 1})],
    links=[(0, 1, "<!-- end item -->", "description")],
)


ROUND_TRIP = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@ROUND_TRIP
@given(memories(st.characters(codec="utf-8")))
def test_json_export_imported_into_an_empty_workspace_round_trips_exactly(migrated_db, plan):
    assert_round_trip(migrated_db, plan, "json")


@ROUND_TRIP
@given(memories(st.characters(codec="utf-8")))
@example(HEADING_PLAN)
def test_markdown_export_imported_into_an_empty_workspace_round_trips_every_field(migrated_db, plan):
    assert_round_trip(migrated_db, plan, "markdown")


@pytest.mark.parametrize("fmt", ["json", "markdown"])
@pytest.mark.parametrize("value", ["a\rb", "a\r\nb", "trailing\r", "\r\n## x\r\n"])
def test_carriage_returns_survive_a_round_trip(migrated_db, fmt, value):
    plan = plan_of(
        decisions=[("summary", value, None, [])], progress=[("TODO", value, None)], patterns=[("p", value, [])]
    )
    assert_round_trip(migrated_db, plan, fmt)


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_comment_markers_in_heading_text_survive_a_round_trip(migrated_db, fmt):
    assert_round_trip(migrated_db, HEADING_PLAN, fmt)


# --- the files -------------------------------------------------------------------------------------------------


@pytest.fixture
def pair(migrated_db) -> Iterator[list[tuple[Path, Store]]]:
    with workspaces(migrated_db, 2) as made:
        yield made


def sample(store: Store) -> None:
    d1 = decisions.log_decision(store, "Use WAL", rationale="readers never block", tags=["db"])
    d2 = decisions.log_decision(store, "Use FTS5", implementation_details="one index")
    parent = progress.log_progress(store, "TODO", "ship search")
    progress.log_progress(store, "DONE", "write tests", parent_id=parent["id"])
    patterns.log_system_pattern(store, "Outbox", "events in the same transaction", tags=["events"])
    custom_data.log_custom_data(store, "ProjectGlossary", "WAL", "write-ahead log")
    contexts.update_context(store, "product", content={"goal": "memory"})
    contexts.update_context(store, "product", patch={"stack": ["py"]})
    links.link_items(store, "decision", d2["id"], "decision", d1["id"], "depends_on")


def test_export_writes_one_file_per_item_type_and_a_manifest(pair):
    (root, store), _ = pair
    sample(store)
    out = export_memory(store, root)
    assert out["output_dir"] == str(root / ".homeport" / "export")
    assert out["files"] == ["manifest.json", *[f"{s}.json" for s in SECTIONS + HISTORY]]
    assert {k: v for k, v in out["counts"].items() if k in SECTIONS} == {
        "decisions": 2,
        "progress": 2,
        "system_patterns": 1,
        "custom_data": 1,
        "product_context": 2,
        "active_context": 0,
        "links": 1,
    }
    assert out["counts"]["item_versions"] == 2 + 2 + 1 + 1  # one version of each item
    manifest = json.loads((root / ".homeport/export/manifest.json").read_text())
    assert manifest["format"] == "json" and manifest["schema_revision"] == SCHEMA_REVISION
    assert [d["id"] for d in json.loads((root / ".homeport/export/decisions.json").read_text())] == [1, 2]


def test_markdown_export_reads_as_markdown_with_front_matter_ids_and_timestamps(pair):
    (root, store), _ = pair
    sample(store)
    out = export_memory(store, root, fmt="markdown", output_dir="docs/memory")
    assert out["files"] == ["manifest.json", *[f"{s}.md" for s in SECTIONS + HISTORY]]
    text = (root / "docs/memory/decisions.md").read_text()
    assert text.startswith("---\ntype: decisions\ncount: 2\n---\n\n# Decisions\n")
    assert "## Use WAL (decision 1)\n" in text and "## Use FTS5 (decision 2)\n" in text
    assert text.index("(decision 1)") < text.index("(decision 2)")
    assert '"id": 1' in text and '"created_at": "' in text and '"tags": ["db"]' in text
    assert "## [DONE] write tests (progress 2)" in (root / "docs/memory/progress.md").read_text()


def test_exporting_twice_gives_the_same_files(pair):
    (root, store), _ = pair
    sample(store)
    export_memory(store, root, fmt="markdown")
    first = exported_files(root)
    export_memory(store, root, fmt="markdown")
    assert exported_files(root) == first


def test_exporting_a_workspace_without_store_writes_empty_files(tmp_path):
    out = export_memory(None, tmp_path)
    assert set(out["counts"].values()) == {0}
    assert json.loads((tmp_path / ".homeport/export/decisions.json").read_text()) == []


def test_unknown_format_and_mode_are_named(pair):
    (root, store), _ = pair
    with pytest.raises(InvalidItemError, match="format 'yaml' is not json or markdown"):
        export_memory(store, root, fmt="yaml")  # type: ignore[arg-type]
    with pytest.raises(InvalidItemError, match="mode 'upsert' is not merge or replace"):
        import_memory(store, root, mode="upsert")  # type: ignore[arg-type]


# --- merge and replace -----------------------------------------------------------------------------------------


def test_replace_empties_the_memory_first(pair):
    (root_a, a), (root_b, b) = pair
    sample(a)
    export_memory(a, root_a)
    for i in range(4):
        decisions.log_decision(b, f"local {i}")
    patterns.log_system_pattern(b, "Local only", "x")
    contexts.update_context(b, "active", content={"focus": "local"})
    copy_export(root_a, root_b)
    import_memory(b, root_b, mode="replace")
    assert _collect(b) == _collect(a)
    assert search.search(b, "local") == []
    assert [h["id"] for h in search.search(b, "WAL", types=["decision"])] == [1]


def test_merge_keeps_other_decisions_and_overwrites_the_one_with_the_same_id(pair):
    (root_a, a), (root_b, b) = pair
    decisions.log_decision(a, "exported decision", tags=["x"])
    export_memory(a, root_a)
    decisions.log_decision(b, "local decision one", tags=["local"])
    decisions.log_decision(b, "local decision two")
    copy_export(root_a, root_b)
    import_memory(b, root_b, mode="merge")
    assert [(d["id"], d["summary"], d["tags"]) for d in decisions.get_decisions(b)] == [
        (2, "local decision two", []),
        (1, "exported decision", ["x"]),
    ]
    assert {h["title"] for h in search.search(b, "decision")} == {"local decision two", "exported decision"}
    assert decisions.get_decisions(b, tags_any=["local"]) == []


def test_merge_matches_custom_data_by_category_and_key_and_keeps_the_rest(pair):
    (root_a, a), (root_b, b) = pair
    custom_data.log_custom_data(a, "ProjectGlossary", "WAL", "exported meaning")
    export_memory(a, root_a)
    custom_data.log_custom_data(b, "notes", "other", 1)  # the same id as the exported entry, another key
    custom_data.log_custom_data(b, "ProjectGlossary", "WAL", "local meaning")
    copy_export(root_a, root_b)
    import_memory(b, root_b, mode="merge")
    assert {(c["category"], c["key"], c["value"]) for c in custom_data.get_custom_data(b)} == {
        ("notes", "other", 1),
        ("ProjectGlossary", "WAL", "exported meaning"),
    }


def test_merge_matches_patterns_by_name_and_keeps_the_rest(pair):
    (root_a, a), (root_b, b) = pair
    patterns.log_system_pattern(a, "Outbox", "exported description")
    export_memory(a, root_a)
    patterns.log_system_pattern(b, "Local pattern", "kept")  # the same id as the exported pattern, another name
    patterns.log_system_pattern(b, "OUTBOX", "local description")
    copy_export(root_a, root_b)
    import_memory(b, root_b, mode="merge")
    assert {(p["name"], p["description"]) for p in patterns.get_system_patterns(b)} == {
        ("Outbox", "exported description"),
        ("Local pattern", "kept"),
    }


def test_merging_the_same_export_twice_changes_nothing_the_second_time(pair):
    (root_a, a), (root_b, b) = pair
    sample(a)
    export_memory(a, root_a)
    copy_export(root_a, root_b)
    import_memory(b, root_b, mode="merge")
    once = _collect(b)
    import_memory(b, root_b, mode="merge")
    assert _collect(b) == once == _collect(a)


def test_merge_adds_the_exported_context_as_the_next_version_and_keeps_local_history(pair):
    (root_a, a), (root_b, b) = pair
    contexts.update_context(a, "active", content={"focus": "old"})
    contexts.update_context(a, "active", content={"focus": "exported"})
    export_memory(a, root_a)
    contexts.update_context(b, "active", content={"focus": "local"})
    copy_export(root_a, root_b)
    for _ in range(2):  # the second merge finds the document current and adds nothing
        import_memory(b, root_b, mode="merge")
        assert [(v["version"], v["content"]) for v in contexts.get_history(b, "active")] == [
            (2, {"focus": "exported"}),
            (1, {"focus": "local"}),
        ]
    import_memory(b, root_b, mode="replace")
    assert _collect(b)["active_context"] == _collect(a)["active_context"]


def test_replace_removes_a_deep_local_progress_tree(pair):
    (root_a, a), (root_b, b) = pair
    progress.log_progress(a, "TODO", "exported")
    export_memory(a, root_a)
    parent = None
    for depth in range(4):
        parent = progress.log_progress(b, "TODO", f"level {depth}", parent_id=parent and parent["id"])
    copy_export(root_a, root_b)
    import_memory(b, root_b, mode="replace")
    assert [p["description"] for p in progress.get_progress(b)] == ["exported"]


def test_merge_overwrites_a_progress_entry_that_has_local_children(pair):
    (root_a, a), (root_b, b) = pair
    progress.log_progress(a, "DONE", "exported parent")
    export_memory(a, root_a)
    parent = progress.log_progress(b, "TODO", "local parent")
    child = progress.log_progress(b, "TODO", "local child", parent_id=parent["id"])
    copy_export(root_a, root_b)
    import_memory(b, root_b, mode="merge")
    assert {(p["id"], p["description"], p["parent_id"]) for p in progress.get_progress(b)} == {
        (parent["id"], "exported parent", None),
        (child["id"], "local child", parent["id"]),
    }


def test_merge_restores_a_link_whose_id_was_reused_locally(pair):
    (root, store), _ = pair
    a, b = decisions.log_decision(store, "a"), decisions.log_decision(store, "b")
    links.link_items(store, "decision", a["id"], "decision", b["id"], "implements")
    export_memory(store, root)
    decisions.delete_decision(store, a["id"])
    c = decisions.log_decision(store, "c")
    links.link_items(store, "decision", b["id"], "decision", c["id"], "relates_to")
    import_memory(store, root, mode="merge")
    assert {(x["type"], x["id"], x["relationship"]) for x in links.get_linked_items(store, "decision", b["id"])} == {
        ("decision", a["id"], "implements"),
        ("decision", c["id"], "relates_to"),
    }


def test_merged_links_follow_items_that_got_another_id(pair):
    (root_a, a), (root_b, b) = pair
    d = decisions.log_decision(a, "uses the glossary")
    c = custom_data.log_custom_data(a, "ProjectGlossary", "WAL", "write-ahead log")
    p = patterns.log_system_pattern(a, "Outbox", "events")
    links.link_items(a, "decision", d["id"], "custom_data", c["id"], "uses")
    links.link_items(a, "decision", d["id"], "system_pattern", p["id"], "implements")
    export_memory(a, root_a)
    custom_data.log_custom_data(b, "notes", "unrelated", 1)  # takes the exported ids
    patterns.log_system_pattern(b, "Unrelated pattern", "x")
    copy_export(root_a, root_b)
    import_memory(b, root_b, mode="merge")
    wal = custom_data.get_custom_data(b, category="ProjectGlossary", key="WAL")[0]
    outbox = next(x for x in patterns.get_system_patterns(b) if x["name"] == "Outbox")
    assert {(x["type"], x["id"]) for x in links.get_linked_items(b, "decision", d["id"])} == {
        ("custom_data", wal["id"]),
        ("system_pattern", outbox["id"]),
    }


# --- broken exports --------------------------------------------------------------------------------------------


def counts(store: Store) -> dict[str, int]:
    return {k: len(v) for k, v in _collect(store).items()}


def test_a_missing_manifest_is_a_clear_error(pair):
    (root, store), _ = pair
    (root / "empty").mkdir()
    with pytest.raises(InvalidItemError, match=r"empty holds no readable manifest\.json; export there first"):
        import_memory(store, root, input_dir="empty")
    with pytest.raises(InvalidItemError, match=r"no readable manifest\.json"):
        import_memory(store, root, input_dir="does/not/exist")


def test_an_export_with_a_broken_file_imports_nothing(pair):
    (root_a, a), (root_b, b) = pair
    sample(a)
    export_memory(a, root_a)
    decisions.log_decision(b, "kept")
    before = counts(b)
    copy_export(root_a, root_b)
    (root_b / ".homeport/export/links.json").write_text("[{]")
    with pytest.raises(InvalidItemError, match=r"links\.json is not valid JSON"):
        import_memory(b, root_b, mode="replace")
    assert counts(b) == before


@pytest.mark.parametrize(
    ("fmt", "name", "damage"),
    [
        ("markdown", "decisions.md", lambda t: t.replace('<!-- item {"', "<!-- item {", 1)),
        ("json", "decisions.json", lambda t: t.replace("Use WAL", "Use W\\udcffAL")),
        ("json", "decisions.json", None),
    ],
)
def test_a_hand_edited_export_that_cannot_be_read_names_the_file(pair, fmt, name, damage):
    (root_a, a), (root_b, b) = pair
    sample(a)
    export_memory(a, root_a, fmt=fmt)
    copy_export(root_a, root_b)
    path = root_b / ".homeport/export" / name
    if damage is None:
        path.write_bytes(b"[\xff\xfe]")
    else:
        path.write_text(damage(path.read_text()))
    with pytest.raises(InvalidItemError, match=name):
        import_memory(b, root_b)
    assert set(counts(b).values()) == {0}


def test_an_item_missing_a_field_imports_nothing(pair):
    (root_a, a), (root_b, b) = pair
    sample(a)
    export_memory(a, root_a)
    copy_export(root_a, root_b)
    path = root_b / ".homeport/export/custom_data.json"
    path.write_text(json.dumps([{k: v for k, v in i.items() if k != "key"} for i in json.loads(path.read_text())]))
    with pytest.raises(
        InvalidItemError, match=r"custom_data\.json item 0, id 1: field key: missing; nothing was imported"
    ):
        import_memory(b, root_b)
    assert set(counts(b).values()) == {0}


def test_a_progress_entry_whose_parent_is_not_in_the_export_is_refused(pair):
    (root_a, a), (root_b, b) = pair
    sample(a)
    export_memory(a, root_a)
    copy_export(root_a, root_b)
    path = root_b / ".homeport/export/progress.json"
    path.write_text(json.dumps([p for p in json.loads(path.read_text()) if p["parent_id"] is not None]))
    manifest = root_b / ".homeport/export/manifest.json"
    manifest.write_text(manifest.read_text().replace('"progress": 2', '"progress": 1'))
    with pytest.raises(InvalidItemError, match="progress 2 has a parent_id that is not in the export"):
        import_memory(b, root_b, mode="replace")
    assert set(counts(b).values()) == {0}


# --- paths -----------------------------------------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path) -> Path:
    target = tmp_path / "outside"
    target.mkdir()
    return target


def escapes(root: Path, outside: Path) -> list[str]:
    (root / "link").symlink_to(outside, target_is_directory=True)
    return ["../outside", str(outside), "link", "link/sub", ".homeport/../../outside", "/tmp/x"]


def test_export_refuses_every_path_outside_the_workspace(pair, outside):
    (root, store), _ = pair
    sample(store)
    for path in escapes(root, outside):
        with pytest.raises(InvalidItemError, match="outside the workspace") as info:
            export_memory(store, root, output_dir=path)
        assert repr(path) in info.value.message
    assert list(outside.iterdir()) == []
    assert not Path("/tmp/x/manifest.json").exists()


def test_import_refuses_every_path_outside_the_workspace(pair, outside):
    (root_a, a), (root_b, b) = pair
    sample(a)
    export_memory(a, root_a)
    shutil.copytree(root_a / ".homeport/export", outside, dirs_exist_ok=True)
    for path in escapes(root_b, outside):
        with pytest.raises(InvalidItemError, match="outside the workspace") as info:
            import_memory(b, root_b, input_dir=path)
        assert repr(path) in info.value.message
    assert set(counts(b).values()) == {0}


EXPORT_OS_ERROR = (
    "transfer.export_memory: OSError from target.mkdir/_write_atomic (an output_dir that is an existing file, or "
    "lies under one) is not translated, so callers get a bare FileExistsError/NotADirectoryError and MCP clients "
    "'Error executing tool export' with no cause; wrap them in a HomeportError naming the directory"
)


@pytest.mark.parametrize("path", ["notes.txt", "notes.txt/sub"])
def test_exporting_onto_a_file_is_a_clear_error(pair, path):
    (root, store), _ = pair
    (root / "notes.txt").write_text("not a directory")
    with pytest.raises(HomeportError, match=r"notes\.txt"):
        export_memory(store, root, output_dir=path)


def test_absolute_and_dotted_paths_inside_the_workspace_are_accepted(pair):
    (root, store), _ = pair
    sample(store)
    out = export_memory(store, root, output_dir=str(root / "backups" / "today"))
    assert out["output_dir"] == str(root / "backups" / "today")
    out = export_memory(store, root, output_dir="backups/../backups/./again")
    assert out["output_dir"] == str(root / "backups" / "again")
    assert import_memory(store, root, input_dir=str(root / "backups/today"))["counts"]["decisions"] == 2
    os.symlink(root / "backups", root / "inner")
    assert import_memory(store, root, input_dir="inner/again", mode="replace")["mode"] == "replace"


def test_replace_forgets_who_wrote_the_items_it_removes(pair):
    """An item that replace brings in under an id a removed item had is not credited to that item's writer."""
    from homeport.store import provenance

    (root_a, a), (root_b, b) = pair
    decisions.log_decision(a, "from the export")
    export_memory(a, root_a)
    with provenance.writing_as(provenance.Writer("mallory", tool="log_decision")):
        decisions.log_decision(b, "local, by mallory")
    copy_export(root_a, root_b)
    import_memory(b, root_b, mode="replace")
    with b.read() as conn:
        writes = provenance.writes_of_items(conn, "decision", [1])
    assert [w for w in writes.get(1, []) if w.get("principal") == "mallory"] == []
