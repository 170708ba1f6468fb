"""Every version of every item is kept, on SQLite and PostgreSQL: exact text back, who wrote it, restore, purge."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from homeport.errors import InvalidItemError, ItemNotFoundError
from homeport.store import contexts, custom_data, decisions, patterns, progress, provenance
from homeport.store.item_history import get_item_history, purge_item, restore_version
from homeport.store.versions import fields_of

ADA = provenance.Writer("ada", "claude-code", "2.1", "log_decision")
BOB = provenance.Writer("bob", "cursor", "1.0", "update_decision")


@pytest.fixture
def store(tmp_path: Path, copy_store):
    s = copy_store(tmp_path)
    yield s
    s.close()


def history(store, item_type: str, item_id: int, **kw) -> list[dict]:
    return get_item_history(store, item_type, item_id, limit=1000, **kw)


def test_a_decision_keeps_every_earlier_text_with_who_wrote_it_and_through_which_tool(store):
    with provenance.writing_as(ADA):
        d = decisions.log_decision(store, "Use WAL", rationale="readers never block", tags=["db", "Perf"])
    with provenance.writing_as(BOB):
        decisions.update_decision(store, d["id"], summary="Use SQLite WAL", implementation_details="PRAGMA")
    decisions.update_decision(store, d["id"], rationale="", tags=["db"])  # nobody named: no writer
    versions = history(store, "decision", d["id"])
    assert [v["version"] for v in versions] == [3, 2, 1]
    assert versions[2]["fields"] == {
        "summary": "Use WAL",
        "rationale": "readers never block",
        "implementation_details": None,
        "tags": ["db", "Perf"],
    }
    assert versions[1]["fields"] == {
        "summary": "Use SQLite WAL",
        "rationale": "readers never block",
        "implementation_details": "PRAGMA",
        "tags": ["db", "Perf"],
    }
    assert versions[0]["fields"] == {
        "summary": "Use SQLite WAL",
        "rationale": None,
        "implementation_details": "PRAGMA",
        "tags": ["db"],
    }
    assert versions[2]["written_by"] == ADA.describe() and versions[1]["written_by"] == BOB.describe()
    assert versions[0]["written_by"] is None
    assert not any(v["deleted"] for v in versions)
    assert versions[2]["changed_at"] <= versions[1]["changed_at"] <= versions[0]["changed_at"]


def test_progress_patterns_and_custom_data_keep_their_versions_too(store):
    p = progress.log_progress(store, "TODO", "ship it")
    progress.update_progress(store, p["id"], status="DONE")
    s = patterns.log_system_pattern(store, "Repository", "one class per table", tags=["db"])
    patterns.log_system_pattern(store, "repository", "one class per aggregate")  # same name, any case
    patterns.update_system_pattern(store, s["id"], name="Repository pattern", tags=[])
    c = custom_data.log_custom_data(store, "ProjectGlossary", "WAL", {"meaning": "write-ahead log"})
    custom_data.log_custom_data(store, "ProjectGlossary", "WAL", ["changed", 1.5, None])
    assert [v["fields"]["status"] for v in history(store, "progress", p["id"])] == ["DONE", "TODO"]
    assert [
        (v["fields"]["name"], v["fields"]["description"], v["fields"]["tags"])
        for v in history(store, "system_pattern", s["id"])
    ] == [
        ("Repository pattern", "one class per aggregate", []),
        ("repository", "one class per aggregate", ["db"]),
        ("Repository", "one class per table", ["db"]),
    ]
    assert [v["fields"]["value"] for v in history(store, "custom_data", c["id"])] == [
        ["changed", 1.5, None],
        {"meaning": "write-ahead log"},
    ]


def test_the_contexts_answer_through_the_same_history(store):
    contexts.update_context(store, "active", content={"focus": "a"})
    contexts.update_context(store, "active", patch={"focus": "b"})
    got = get_item_history(store, "active_context", None)
    assert [(v["version"], v["content"]) for v in got] == [(2, {"focus": "b"}), (1, {"focus": "a"})]
    assert get_item_history(store, "active_context", 1, version=1)[0]["content"] == {"focus": "a"}


def test_a_version_picked_by_number_or_bounded_by_time_comes_back_exactly(store):
    d = decisions.log_decision(store, "v1")
    decisions.update_decision(store, d["id"], summary="v2")
    decisions.update_decision(store, d["id"], summary="v3")
    [one] = history(store, "decision", d["id"], version=2)
    assert one["fields"]["summary"] == "v2"
    v1_at = history(store, "decision", d["id"], version=1)[0]["changed_at"]
    assert [v["version"] for v in history(store, "decision", d["id"], after=v1_at)] == [3, 2]
    with pytest.raises(ItemNotFoundError, match="no version 9"):
        history(store, "decision", d["id"], version=9)
    with pytest.raises(ItemNotFoundError, match="decision 999 has no history"):
        history(store, "decision", 999)
    with pytest.raises(InvalidItemError, match="pass item_id"):
        get_item_history(store, "decision", None)


def test_restoring_a_version_writes_it_again_as_a_new_version(store):
    d = decisions.log_decision(store, "Use WAL", rationale="fast", tags=["db"])
    decisions.update_decision(store, d["id"], summary="Use rollback journal", rationale="", tags=["legacy"])
    restored = restore_version(store, "decision", d["id"], 1)
    assert (restored["restored_version"], restored["version"]) == (1, 3)
    [now] = decisions.get_decisions(store)
    assert (now["summary"], now["rationale"], now["tags"]) == ("Use WAL", "fast", ["db"])
    versions = history(store, "decision", d["id"])
    assert [v["version"] for v in versions] == [3, 2, 1] and versions[0]["fields"] == versions[2]["fields"]


def test_deleting_an_item_keeps_its_history_with_a_deleted_marker_and_restore_brings_it_back(store):
    d = decisions.log_decision(store, "Use WAL", tags=["db"])
    decisions.update_decision(store, d["id"], summary="Use SQLite WAL")
    decisions.delete_decision(store, d["id"])
    assert decisions.get_decisions(store) == []
    versions = history(store, "decision", d["id"])
    assert [(v["version"], v["deleted"]) for v in versions] == [(3, True), (2, False), (1, False)]
    assert versions[0]["fields"]["summary"] == "Use SQLite WAL"  # as it was when deleted
    with pytest.raises(InvalidItemError, match="records its deletion"):
        restore_version(store, "decision", d["id"], 3)
    restore_version(store, "decision", d["id"], 1)
    [back] = decisions.get_decisions(store)
    assert (back["id"], back["summary"], back["tags"]) == (d["id"], "Use WAL", ["db"])
    assert [v["version"] for v in history(store, "decision", d["id"])] == [4, 3, 2, 1]


def test_every_item_type_keeps_its_history_after_delete(store):
    p = progress.log_progress(store, "TODO", "parent")
    child = progress.log_progress(store, "TODO", "child", parent_id=p["id"])
    s = patterns.log_system_pattern(store, "P", "d")
    c = custom_data.log_custom_data(store, "cat", "k", 1)
    progress.delete_progress(store, p["id"], cascade=True)
    patterns.delete_system_pattern(store, s["id"])
    custom_data.delete_custom_data(store, "cat", "k")
    for item_type, item_id in (("progress", p["id"]), ("progress", child["id"]), ("system_pattern", s["id"])):
        assert [v["deleted"] for v in history(store, item_type, item_id)] == [True, False]
    assert history(store, "custom_data", c["id"])[0] == {
        **history(store, "custom_data", c["id"])[0],
        "deleted": True,
        "fields": {"category": "cat", "key": "k", "value": 1},
    }
    # A child comes back only under a parent that exists.
    with pytest.raises(ItemNotFoundError, match="restore the parent first"):
        restore_version(store, "progress", child["id"], 1)
    restore_version(store, "progress", p["id"], 1)
    restore_version(store, "progress", child["id"], 1)
    assert {(e["id"], e["parent_id"]) for e in progress.get_progress(store)} == {
        (p["id"], None),
        (child["id"], p["id"]),
    }


def test_a_restore_that_the_items_rules_refuse_is_refused_and_changes_nothing(store):
    s = patterns.log_system_pattern(store, "Cache", "d")
    patterns.delete_system_pattern(store, s["id"])
    other = patterns.log_system_pattern(store, "cache", "another")
    with pytest.raises(InvalidItemError, match=f"system pattern {other['id']} is already named"):
        restore_version(store, "system_pattern", s["id"], 1)
    c = custom_data.log_custom_data(store, "cat", "k", 1)
    custom_data.delete_custom_data(store, "cat", "k")
    holder = custom_data.log_custom_data(store, "cat", "k", 2)
    with pytest.raises(InvalidItemError, match=f"custom data {holder['id']} now holds"):
        restore_version(store, "custom_data", c["id"], 1)
    assert [v["version"] for v in history(store, "custom_data", c["id"])] == [2, 1]
    y = patterns.log_system_pattern(store, "Y", "y")
    with pytest.raises(InvalidItemError, match=f"system pattern {other['id']} is already named 'CACHE'"):
        patterns.update_system_pattern(store, y["id"], name="CACHE")
    assert [v["fields"]["name"] for v in history(store, "system_pattern", y["id"])] == ["Y"]


def test_purge_removes_the_history_of_a_deleted_item_and_only_of_a_deleted_one(store):
    with provenance.writing_as(ADA):
        d = decisions.log_decision(store, "secret plan")
    keep = decisions.log_decision(store, "other")
    with pytest.raises(InvalidItemError, match="still exists"):
        purge_item(store, "decision", d["id"])
    decisions.delete_decision(store, d["id"])
    assert purge_item(store, "decision", d["id"]) == {"purged": {"type": "decision", "id": d["id"], "versions": 2}}
    with pytest.raises(ItemNotFoundError, match="has no history"):
        history(store, "decision", d["id"])
    with pytest.raises(ItemNotFoundError, match="no history to purge"):
        purge_item(store, "decision", d["id"])
    with pytest.raises(InvalidItemError, match="never deleted"):
        purge_item(store, "product_context", 1)
    with store.read() as conn:
        left = conn.exec_driver_sql("SELECT item_id FROM item_writers WHERE item_type = 'decision'").scalars().all()
        text = conn.exec_driver_sql("SELECT fields FROM item_versions").scalars().all()
    assert d["id"] not in left and not any("secret plan" in t for t in text)
    assert [v["fields"]["summary"] for v in history(store, "decision", keep["id"])] == ["other"]


def test_a_context_version_is_restored_as_its_next_version(store):
    contexts.update_context(store, "product", content={"goal": "a"})
    contexts.update_context(store, "product", content={"goal": "b"})
    restored = restore_version(store, "product_context", 1, 1)
    assert restored["version"] == 3
    assert contexts.get_context(store, "product")["content"] == {"goal": "a"}
    with pytest.raises(ItemNotFoundError, match="no version 7"):
        restore_version(store, "product_context", None, 7)


# --- the property: any sequence of writes leaves a history that matches the items ----------------------------

TYPES = ("decision", "progress", "system_pattern", "custom_data")
text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=12).filter(
    lambda s: s.strip() == s
)
action = st.tuples(
    st.sampled_from(["write", "update", "delete", "restore"]),
    st.sampled_from(TYPES),
    st.integers(0, 3),  # which item (slot) of that type
    text,
    st.integers(1, 6),  # a version to restore
    st.lists(st.sampled_from(["a", "B", "c"]), max_size=3),
)


def _current(store, item_type: str) -> dict[int, dict]:
    if item_type == "decision":
        rows = decisions.get_decisions(store, limit=1000)
    elif item_type == "progress":
        rows = progress.get_progress(store, limit=1000)
    elif item_type == "system_pattern":
        rows = patterns.get_system_patterns(store, limit=1000)
    else:
        rows = custom_data.get_custom_data(store)
    return {r["id"]: fields_of(item_type, r) for r in rows}


def _apply(store, step, slots: dict[tuple[str, int], int], counter) -> None:
    kind, item_type, slot, words, version, tags = step
    item_id = slots.get((item_type, slot))
    try:
        if kind == "write" or item_id is None:
            if item_type == "decision":
                written = decisions.log_decision(store, words, rationale=words * 2, tags=tags)
            elif item_type == "progress":
                written = progress.log_progress(store, "TODO", words)
            elif item_type == "system_pattern":
                written = patterns.log_system_pattern(store, f"p{slot}-{next(counter)}", words, tags=tags)
            else:
                written = custom_data.log_custom_data(store, "c", f"k{slot}-{next(counter)}", {"w": words})
            slots[(item_type, slot)] = written["id"]
        elif kind == "update":
            if item_type == "decision":
                decisions.update_decision(store, item_id, summary=words, tags=tags)
            elif item_type == "progress":
                progress.update_progress(store, item_id, status=words)
            elif item_type == "system_pattern":
                patterns.update_system_pattern(store, item_id, description=words, tags=tags)
            else:
                key = next(v["fields"]["key"] for v in history(store, "custom_data", item_id))
                custom_data.log_custom_data(store, "c", key, [words])
        elif kind == "delete":
            if item_type == "decision":
                decisions.delete_decision(store, item_id)
            elif item_type == "progress":
                progress.delete_progress(store, item_id)
            elif item_type == "system_pattern":
                patterns.delete_system_pattern(store, item_id)
            else:
                key = next(v["fields"]["key"] for v in history(store, "custom_data", item_id))
                custom_data.delete_custom_data(store, "c", key)
        else:
            restore_version(store, item_type, item_id, version)
    except (ItemNotFoundError, InvalidItemError):
        pass  # deleting or updating a deleted item, restoring a missing version or a deletion: refused, no change


def test_any_sequence_of_writes_leaves_a_history_whose_last_version_is_the_item_and_every_version_is_exact(
    tmp_path_factory, copy_store, examples
):
    @settings(max_examples=examples(25), deadline=None)
    @given(steps=st.lists(action, min_size=1, max_size=25))
    def history_follows(steps) -> None:
        store = copy_store(tmp_path_factory.mktemp("w"))
        try:
            slots: dict[tuple[str, int], int] = {}
            expected: dict[tuple[str, int], list[dict]] = {}  # every version's fields, as read right after each write
            counter = itertools.count()
            for step in steps:
                _apply(store, step, slots, counter)
                for item_type in TYPES:
                    for item_id, fields in _current(store, item_type).items():
                        seen = expected.setdefault((item_type, item_id), [])
                        if not seen or seen[-1] != fields:
                            seen.append(fields)
            for item_type in TYPES:
                live = _current(store, item_type)
                for (t, item_id), seen in expected.items():
                    if t != item_type:
                        continue
                    versions = history(store, item_type, item_id)[::-1]  # oldest first
                    assert [v["version"] for v in versions] == list(range(1, len(versions) + 1))
                    last = versions[-1]
                    if item_id in live:
                        assert not last["deleted"] and last["fields"] == live[item_id]
                    else:
                        assert last["deleted"]
                    # every distinct state the item was seen in is one of its versions, exactly, in order
                    kept = [v["fields"] for v in versions if not v["deleted"]]
                    it = iter(kept)
                    assert all(any(k == s for k in it) for s in seen), (seen, kept)
                    for v in versions:  # each one also comes back by its number
                        assert history(store, item_type, item_id, version=v["version"]) == [v]
        finally:
            store.close()

    history_follows()
