"""Memory items at full depth, through the store functions: patterns, deletes, the progress tree, tags,
links and graph walks, context history, recent activity, the schema and batch writes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from homeport.errors import InvalidItemError, ItemNotFoundError
from homeport.store import (
    Store,
    activity,
    batch,
    catalog,
    contexts,
    custom_data,
    decisions,
    links,
    patterns,
    progress,
    search,
)
from homeport.store.items import ITEM_TYPES
from homeport.store.schema import decisions as decisions_table
from homeport.store.schema import item_tags
from homeport.store.schema import links as links_table
from homeport.store.schema import progress as progress_table
from homeport.store.schema import system_patterns as patterns_table


@pytest.fixture
def store(tmp_path: Path, copy_store):
    s = copy_store(tmp_path)
    yield s
    s.close()


def count(store: Store, table) -> int:
    with store.read() as conn:
        return conn.execute(select(func.count()).select_from(table)).scalar()


def tag_rows(store: Store, item_type: str, item_id: int) -> list[str]:
    with store.read() as conn:
        return list(
            conn.execute(
                select(item_tags.c.tag).where(item_tags.c.item_type == item_type, item_tags.c.item_id == item_id)
            ).scalars()
        )


def indexed(store: Store, item_type: str, item_id: int) -> bool:
    with store.read() as conn:
        return (
            conn.execute(
                text("SELECT count(*) FROM search_index WHERE item_type = :t AND item_id = :i"),
                {"t": item_type, "i": item_id},
            ).scalar()
            > 0
        )


# --- system patterns -------------------------------------------------------------------------------------------


def test_logging_an_existing_pattern_name_in_any_case_updates_that_pattern(store):
    first = patterns.log_system_pattern(store, "Repository Pattern", "one class per table", tags=["db"])
    again = patterns.log_system_pattern(store, "  repository PATTERN ", "one module per item type", tags=["Store"])
    assert first["updated"] is False and again["updated"] is True
    assert again["id"] == first["id"] and again["created_at"] == first["created_at"]
    listed = patterns.get_system_patterns(store)
    assert [(p["id"], p["name"], p["description"], p["tags"]) for p in listed] == [
        (first["id"], "repository PATTERN", "one module per item type", ["Store"])
    ]
    assert "name_key" not in listed[0]
    assert search.search(store, "module")[0] == search.search(store, "module", types=["system_pattern"])[0]
    assert search.search(store, "class") == []


def test_patterns_are_listed_by_name_and_filtered_by_tags_case_insensitively(store):
    patterns.log_system_pattern(store, "beta", "b", tags=["API", "db"])
    patterns.log_system_pattern(store, "Alpha", "a", tags=["api"])
    patterns.log_system_pattern(store, "gamma", "g", tags=["cli"])
    assert [p["name"] for p in patterns.get_system_patterns(store)] == ["Alpha", "beta", "gamma"]
    assert [p["name"] for p in patterns.get_system_patterns(store, tags_any=[" Api "])] == ["Alpha", "beta"]
    assert [p["name"] for p in patterns.get_system_patterns(store, tags_all=["DB", "api"])] == ["beta"]
    assert [p["name"] for p in patterns.get_system_patterns(store, tags_any=["cli", "db"])] == ["beta", "gamma"]
    assert [p["name"] for p in patterns.get_system_patterns(store, limit=1)] == ["Alpha"]
    assert patterns.get_system_patterns(store, tags_any=["nothing"]) == []
    assert patterns.get_system_patterns(None) == []


@pytest.mark.parametrize(("name", "description"), [("", "d"), ("  ", "d"), ("n", ""), ("n", " \n ")])
def test_pattern_without_name_or_description_is_refused(store, name, description):
    with pytest.raises(InvalidItemError, match="non-empty name and description"):
        patterns.log_system_pattern(store, name, description)
    assert count(store, patterns_table) == 0


def test_deleting_a_pattern_removes_its_tags_links_and_index_entry_and_says_what_went(store):
    p = patterns.log_system_pattern(store, "Outbox", "write events in the same transaction", tags=["events"])
    d = decisions.log_decision(store, "Use an outbox")
    links.link_items(store, "decision", d["id"], "system_pattern", p["id"], "implements")
    out = patterns.delete_system_pattern(store, p["id"])
    assert out["links_removed"] == 1
    assert out["deleted"] | {"created_at": 0, "updated_at": 0} == {
        "type": "system_pattern",
        "id": p["id"],
        "name": "Outbox",
        "description": "write events in the same transaction",
        "tags": ["events"],
        "created_at": 0,
        "updated_at": 0,
    }
    assert tag_rows(store, "system_pattern", p["id"]) == []
    assert not indexed(store, "system_pattern", p["id"])
    assert count(store, links_table) == 0
    assert links.get_linked_items(store, "decision", d["id"]) == []
    with pytest.raises(ItemNotFoundError, match=f"system pattern {p['id']} does not exist"):
        patterns.delete_system_pattern(store, p["id"])


# --- deletes ---------------------------------------------------------------------------------------------------


def test_deleting_a_decision_returns_it_and_removes_tags_links_and_index_entry(store):
    d = decisions.log_decision(store, "Use WAL", rationale="readers", tags=["db"])
    other = decisions.log_decision(store, "Keep WAL small")
    links.link_items(store, "decision", other["id"], "decision", d["id"], "depends_on")
    out = decisions.delete_decision(store, d["id"])
    assert out["deleted"]["type"] == "decision" and out["deleted"]["id"] == d["id"]
    assert out["deleted"]["summary"] == "Use WAL" and out["deleted"]["rationale"] == "readers"
    assert out["links_removed"] == 1
    assert [x["id"] for x in decisions.get_decisions(store)] == [other["id"]]
    assert tag_rows(store, "decision", d["id"]) == [] and not indexed(store, "decision", d["id"])
    assert [h["id"] for h in search.search(store, "WAL")] == [other["id"]]


@pytest.mark.parametrize("missing", [0, 42, -1])
def test_deleting_an_unknown_decision_names_the_id(store, missing):
    decisions.log_decision(store, "stays")
    with pytest.raises(ItemNotFoundError, match=f"decision {missing} does not exist"):
        decisions.delete_decision(store, missing)
    assert count(store, decisions_table) == 1


def test_deleting_custom_data_by_category_and_key_returns_the_value(store):
    item = custom_data.log_custom_data(store, "ProjectGlossary", "WAL", {"meaning": "write-ahead log"})
    custom_data.log_custom_data(store, "ProjectGlossary", "FTS", "full-text search")
    out = custom_data.delete_custom_data(store, " ProjectGlossary ", " WAL ")
    assert out["deleted"] | {"created_at": 0, "updated_at": 0} == {
        "type": "custom_data",
        "id": item["id"],
        "category": "ProjectGlossary",
        "key": "WAL",
        "value": {"meaning": "write-ahead log"},
        "created_at": 0,
        "updated_at": 0,
    }
    assert out["links_removed"] == 0
    assert [i["key"] for i in custom_data.get_custom_data(store)] == ["FTS"]
    assert not indexed(store, "custom_data", item["id"])


def test_deleting_unknown_custom_data_names_category_and_key(store):
    with pytest.raises(ItemNotFoundError, match="'ProjectGlossary' and key 'nope'"):
        custom_data.delete_custom_data(store, "ProjectGlossary", "nope")


# --- progress tree ---------------------------------------------------------------------------------------------


@pytest.fixture
def tree(store):
    """root1 (TODO) -> a (DONE) -> a1 (BLOCKED); root1 -> b (TODO); root2 (DONE)."""
    ids = {}
    ids["root1"] = progress.log_progress(store, "TODO", "ship resolver")["id"]
    ids["a"] = progress.log_progress(store, "DONE", "write guards", parent_id=ids["root1"])["id"]
    ids["root2"] = progress.log_progress(store, "DONE", "ship store")["id"]
    ids["a1"] = progress.log_progress(store, "BLOCKED", "guard symlinks", parent_id=ids["a"])["id"]
    ids["b"] = progress.log_progress(store, "TODO", "write docs", parent_id=ids["root1"])["id"]
    return ids


def shape(nodes: list[dict]) -> list:
    """A tree as (description, [children]) tuples, for readable comparisons."""
    return [(n["description"], shape(n["children"])) for n in nodes]


def test_progress_tree_nests_children_under_every_top_level_entry_oldest_first(store, tree):
    assert shape(progress.get_progress_tree(store)) == [
        ("ship resolver", [("write guards", [("guard symlinks", [])]), ("write docs", [])]),
        ("ship store", []),
    ]


def test_progress_tree_with_a_root_returns_only_that_subtree(store, tree):
    out = progress.get_progress_tree(store, root_id=tree["a"])
    assert shape(out) == [("write guards", [("guard symlinks", [])])]
    assert out[0]["id"] == tree["a"] and out[0]["parent_id"] == tree["root1"] and out[0]["status"] == "DONE"


def test_progress_tree_status_filter_keeps_the_ancestors_of_matches(store, tree):
    assert shape(progress.get_progress_tree(store, status="BLOCKED")) == [
        ("ship resolver", [("write guards", [("guard symlinks", [])])])
    ]
    assert shape(progress.get_progress_tree(store, status=" DONE ")) == [
        ("ship resolver", [("write guards", [])]),
        ("ship store", []),
    ]
    assert shape(progress.get_progress_tree(store, root_id=tree["b"], status="DONE")) == []
    assert progress.get_progress_tree(store, status="NOPE") == []


def test_progress_tree_of_an_unknown_root_names_the_id(store, tree):
    with pytest.raises(ItemNotFoundError, match="root_id 99"):
        progress.get_progress_tree(store, root_id=99)
    with pytest.raises(ItemNotFoundError, match="progress 7"):
        progress.get_progress_tree(None, root_id=7)
    assert progress.get_progress_tree(None) == []


def test_deleting_progress_with_children_is_refused_without_cascade(store, tree):
    with pytest.raises(InvalidItemError, match=rf"progress {tree['root1']} has 3 descendant\(s\).*cascade=true"):
        progress.delete_progress(store, tree["root1"])
    assert count(store, progress_table) == 5


def test_cascading_delete_removes_the_whole_subtree_with_links_and_index_entries(store, tree):
    d = decisions.log_decision(store, "guard decision")
    links.link_items(store, "progress", tree["a1"], "decision", d["id"], "implements")
    links.link_items(store, "progress", tree["root2"], "decision", d["id"], "implements")
    links.link_items(store, "progress", tree["b"], "progress", tree["a"], "follows")  # inside the subtree: one link
    out = progress.delete_progress(store, tree["root1"], cascade=True)
    assert sorted(x["id"] for x in out["deleted"]) == sorted([tree["root1"], tree["a"], tree["a1"], tree["b"]])
    assert {x["type"] for x in out["deleted"]} == {"progress"} and out["links_removed"] == 2
    assert [p["id"] for p in progress.get_progress(store)] == [tree["root2"]]
    assert search.search(store, "guard", types=["progress"]) == []
    assert [(x["type"], x["id"]) for x in links.get_linked_items(store, "decision", d["id"])] == [
        ("progress", tree["root2"])
    ]


def test_parent_id_0_moves_an_entry_to_the_top_level(store, tree):
    moved = progress.update_progress(store, tree["a"], parent_id=0)
    assert moved["parent_id"] is None
    assert shape(progress.get_progress_tree(store)) == [
        ("ship resolver", [("write docs", [])]),
        ("write guards", [("guard symlinks", [])]),
        ("ship store", []),
    ]


def test_ids_of_deleted_items_are_never_reused(store):
    first = decisions.log_decision(store, "first")
    decisions.delete_decision(store, first["id"])
    assert decisions.log_decision(store, "second")["id"] == first["id"] + 1


def test_deleting_a_leaf_needs_no_cascade_and_unknown_ids_are_named(store, tree):
    out = progress.delete_progress(store, tree["a1"])
    assert [x["id"] for x in out["deleted"]] == [tree["a1"]] and out["links_removed"] == 0
    with pytest.raises(ItemNotFoundError, match=f"progress_id {tree['a1']}"):
        progress.delete_progress(store, tree["a1"], cascade=True)


# --- tags ------------------------------------------------------------------------------------------------------


def test_tags_are_trimmed_deduplicated_case_insensitively_and_keep_the_first_spelling(store):
    p = patterns.log_system_pattern(store, "p", "d", tags=["  Perf ", "perf", "PERF", "\tdb\n", "", "   "])
    assert p["tags"] == ["Perf", "db"]
    assert sorted(tag_rows(store, "system_pattern", p["id"])) == ["Perf", "db"]
    relogged = patterns.log_system_pattern(store, "P", "d", tags=["cli"])
    assert relogged["tags"] == ["cli"] and tag_rows(store, "system_pattern", p["id"]) == ["cli"]


def test_relogging_a_pattern_without_tags_keeps_its_tags_and_an_empty_list_clears_them(store):
    p = patterns.log_system_pattern(store, "Outbox", "d", tags=["events"])
    assert patterns.log_system_pattern(store, "outbox", "new description")["tags"] == ["events"]
    assert search.search(store, "events")[0]["id"] == p["id"]
    assert patterns.log_system_pattern(store, "outbox", "d", tags=[])["tags"] == []
    assert patterns.get_system_patterns(store, tags_any=["events"]) == []


def test_tags_match_case_insensitively_for_unicode_too(store):
    d = decisions.log_decision(store, "Straße", tags=["Größe", "ÉTÉ"])
    assert [x["id"] for x in decisions.get_decisions(store, tags_any=["größe"])] == [d["id"]]
    assert [x["id"] for x in decisions.get_decisions(store, tags_all=["été", "GRÖSSE"])] == [d["id"]]


def test_an_overlong_tag_is_refused(store):
    with pytest.raises(InvalidItemError, match="longer than 200"):
        decisions.log_decision(store, "x", tags=["t" * 201])
    assert count(store, decisions_table) == 0


# --- links -----------------------------------------------------------------------------------------------------


def test_a_link_needs_both_ends_and_the_error_names_the_missing_one(store):
    d = decisions.log_decision(store, "d")
    with pytest.raises(ItemNotFoundError, match="progress 5 does not exist"):
        links.link_items(store, "decision", d["id"], "progress", 5, "implements")
    with pytest.raises(ItemNotFoundError, match="system_pattern 9 does not exist"):
        links.link_items(store, "system_pattern", 9, "decision", d["id"], "implements")
    with pytest.raises(InvalidItemError, match="unknown item type 'ticket'"):
        links.link_items(store, "decision", d["id"], "ticket", 1, "implements")
    assert count(store, links_table) == 0


def test_linking_the_same_pair_again_is_one_link(store):
    a, b = decisions.log_decision(store, "a"), decisions.log_decision(store, "b")
    first = links.link_items(store, "decision", a["id"], "decision", b["id"], " implements ", description="x")
    again = links.link_items(store, "decision", a["id"], "decision", b["id"], "implements", description="other")
    assert first["created"] is True and again["created"] is False
    assert again["id"] == first["id"] and again["description"] == "x" and again["relationship"] == "implements"
    other = links.link_items(store, "decision", a["id"], "decision", b["id"], "relates_to")
    assert other["created"] is True and count(store, links_table) == 2


def test_self_links_and_empty_relationships_are_refused(store):
    d = decisions.log_decision(store, "d")
    with pytest.raises(InvalidItemError, match=f"decision {d['id']} cannot be linked to itself"):
        links.link_items(store, "decision", d["id"], "decision", d["id"], "relates_to")
    p = progress.log_progress(store, "TODO", "p")
    with pytest.raises(InvalidItemError, match="relationship is empty"):
        links.link_items(store, "decision", d["id"], "progress", p["id"], "  ")


def test_contexts_can_be_linked_with_id_1_only_after_they_were_written(store):
    d = decisions.log_decision(store, "d")
    with pytest.raises(ItemNotFoundError, match=r"active_context is empty.*update_active_context"):
        links.link_items(store, "decision", d["id"], "active_context", 1, "informs")
    contexts.update_context(store, "active", content={"focus": "links"})
    with pytest.raises(ItemNotFoundError, match="single id 1, not 2"):
        links.link_items(store, "decision", d["id"], "active_context", 2, "informs")
    out = links.link_items(store, "decision", d["id"], "active_context", 1, "informs")
    assert out["created"] is True
    assert [(x["type"], x["id"], x["direction"]) for x in links.get_linked_items(store, "active_context", 1)] == [
        ("decision", d["id"], "incoming")
    ]
    with pytest.raises(ItemNotFoundError, match="product_context is empty"):
        links.get_linked_items(store, "product_context", 1)


@pytest.fixture
def graph(store):
    """d3 -> d1 -> d2 -> p1 -> s1 (relationships: refines, depends_on, implements, follows); c1 -> d2 (explains)."""
    n = {
        "d1": ("decision", decisions.log_decision(store, "d1")["id"]),
        "d2": ("decision", decisions.log_decision(store, "d2")["id"]),
        "d3": ("decision", decisions.log_decision(store, "d3")["id"]),
        "p1": ("progress", progress.log_progress(store, "TODO", "p1")["id"]),
        "s1": ("system_pattern", patterns.log_system_pattern(store, "s1", "s")["id"]),
        "c1": ("custom_data", custom_data.log_custom_data(store, "notes", "c1", 1)["id"]),
    }
    for src, dst, rel in (
        ("d3", "d1", "refines"),
        ("d1", "d2", "depends_on"),
        ("d2", "p1", "implements"),
        ("p1", "s1", "follows"),
        ("c1", "d2", "explains"),
    ):
        links.link_items(store, *n[src], *n[dst], rel)
    return n


def walk(store, start, **kw) -> list[tuple]:
    return [
        (x["type"], x["id"], x["relationship"], x["direction"], x["depth"], (x["via"]["type"], x["via"]["id"]))
        for x in links.get_linked_items(store, *start, **kw)
    ]


def test_linked_items_at_depth_1_are_the_neighbours_in_both_directions(store, graph):
    assert walk(store, graph["d2"]) == [
        (*graph["d1"], "depends_on", "incoming", 1, graph["d2"]),
        (*graph["p1"], "implements", "outgoing", 1, graph["d2"]),
        (*graph["c1"], "explains", "incoming", 1, graph["d2"]),
    ]


def test_deeper_walks_reach_further_nearest_first_and_name_the_item_they_came_through(store, graph):
    two = walk(store, graph["d2"], depth=2)
    assert [x[:2] for x in two] == [graph["d1"], graph["p1"], graph["c1"], graph["d3"], graph["s1"]]
    assert two[3] == (*graph["d3"], "refines", "incoming", 2, graph["d1"])
    assert two[4] == (*graph["s1"], "follows", "outgoing", 2, graph["p1"])
    three = walk(store, graph["d3"], depth=3)
    assert [(x[:2], x[4]) for x in three] == [(graph["d1"], 1), (graph["d2"], 2), (graph["p1"], 3), (graph["c1"], 3)]


def test_linked_items_filter_by_relationship_and_linked_type(store, graph):
    assert [x[:2] for x in walk(store, graph["d2"], relationship="implements")] == [graph["p1"]]
    assert [x[:2] for x in walk(store, graph["d2"], relationship="implements", depth=3)] == [graph["p1"]]
    assert [x[:2] for x in walk(store, graph["d2"], linked_type="decision", depth=3)] == [graph["d1"], graph["d3"]]
    # The walk goes on through items of other types; only the answer is filtered.
    assert [x[:2] for x in walk(store, graph["d3"], linked_type="system_pattern", depth=3)] == []
    assert [(x[:2], x[4]) for x in walk(store, graph["d1"], linked_type="system_pattern", depth=3)] == [
        (graph["s1"], 3)
    ]


@pytest.mark.parametrize("depth", [0, 4, -1])
def test_depth_outside_1_to_3_is_refused(store, graph, depth):
    with pytest.raises(InvalidItemError, match=f"depth {depth} is out of range; use 1 to 3"):
        links.get_linked_items(store, *graph["d1"], depth=depth)


def test_walking_from_an_unknown_item_names_it(store, graph):
    with pytest.raises(ItemNotFoundError, match="decision 99"):
        links.get_linked_items(store, "decision", 99)


def test_deleting_an_item_removes_its_links_in_both_directions(store, graph):
    out = decisions.delete_decision(store, graph["d2"][1])
    assert out["links_removed"] == 3
    assert walk(store, graph["d1"]) == [(*graph["d3"], "refines", "incoming", 1, graph["d1"])]
    assert walk(store, graph["p1"]) == [(*graph["s1"], "follows", "outgoing", 1, graph["p1"])]
    assert count(store, links_table) == 2


# --- history and activity --------------------------------------------------------------------------------------


@pytest.fixture
def history(store):
    return [contexts.update_context(store, "product", patch={"v": i}) for i in range(1, 6)]


def test_every_context_change_keeps_a_version_newest_first(store, history):
    out = contexts.get_history(store, "product")
    assert [(v["version"], v["content"]) for v in out] == [(i, {"v": i}) for i in range(5, 0, -1)]
    assert [v["changed_at"] for v in out] == [h["updated_at"] for h in reversed(history)]
    assert contexts.get_history(store, "active") == []


def test_history_by_limit_version_and_time_bounds(store, history):
    assert [v["version"] for v in contexts.get_history(store, "product", limit=2)] == [5, 4]
    assert contexts.get_history(store, "product", version=3) == [
        {"version": 3, "content": {"v": 3}, "changed_at": history[2]["updated_at"], "written_by": None}
    ]
    assert [v["version"] for v in contexts.get_history(store, "product", before=history[2]["updated_at"])] == [2, 1]
    assert [v["version"] for v in contexts.get_history(store, "product", after=history[2]["updated_at"])] == [5, 4]
    assert [
        v["version"]
        for v in contexts.get_history(
            store, "product", after=history[0]["updated_at"], before=history[4]["updated_at"], limit=2
        )
    ] == [4, 3]


def test_history_time_bounds_accept_any_utc_offset_and_refuse_other_text(store, history):
    third = datetime.fromisoformat(history[2]["updated_at"].replace("Z", "+00:00"))
    east = third.astimezone(timezone(timedelta(hours=9))).isoformat()
    assert [v["version"] for v in contexts.get_history(store, "product", before=east)] == [2, 1]
    assert [v["version"] for v in contexts.get_history(store, "product", after=east)] == [5, 4]
    with pytest.raises(InvalidItemError, match="before 'soon' is not an ISO 8601 time"):
        contexts.get_history(store, "product", before="soon")


def test_an_unknown_history_version_names_it(store, history):
    with pytest.raises(ItemNotFoundError, match="product context has no version 9"):
        contexts.get_history(store, "product", version=9)
    with pytest.raises(ItemNotFoundError, match="active context has no version 1"):
        contexts.get_history(None, "active", version=1)


def old_decision(store: Store, summary: str, stamp: str) -> None:
    with store.write() as conn:
        decisions.insert_decision(conn, summary, created_at=stamp)


def test_recent_activity_lists_recent_items_per_type_with_counts(store):
    old_decision(store, "ancient", "2020-01-01T00:00:00.000000Z")
    for i in range(7):
        decisions.log_decision(store, f"d{i}", tags=["t"])
    progress.log_progress(store, "TODO", "task")
    patterns.log_system_pattern(store, "pat", "desc")
    custom_data.log_custom_data(store, "ProjectGlossary", "WAL", {"x": 1})
    contexts.update_context(store, "active", content={"focus": "x"})
    out = activity.recent_activity(store, limit_per_type=5)
    assert [d["summary"] for d in out["decisions"]] == ["d6", "d5", "d4", "d3", "d2"]
    assert out["decisions"][0]["tags"] == ["t"]
    assert [p["description"] for p in out["progress"]] == ["task"]
    assert [(p["name"], p["tags"]) for p in out["system_patterns"]] == [("pat", [])]
    assert "name_key" not in out["system_patterns"][0]
    assert [(c["key"], c["value"]) for c in out["custom_data"]] == [("WAL", {"x": 1})]
    assert [(c["item_type"], c["version"]) for c in out["context_changes"]] == [("active_context", 1)]
    assert out["counts"] == {
        "decisions": 7,
        "progress": 1,
        "system_patterns": 1,
        "custom_data": 1,
        "context_changes": 1,
    }


def test_recent_activity_counts_every_context_change_not_only_the_listed_ones(store):
    for i in range(7):
        contexts.update_context(store, "active", patch={"i": i})
        decisions.log_decision(store, f"d{i}")
    out = activity.recent_activity(store, limit_per_type=5)
    assert len(out["decisions"]) == 5 and out["counts"]["decisions"] == 7
    assert len(out["context_changes"]) == 5 and out["counts"]["context_changes"] == 7


def test_recent_activity_respects_hours_ago_and_since(store):
    old_decision(store, "ancient", "2020-01-01T00:00:00.000000Z")
    decisions.log_decision(store, "fresh")
    assert [d["summary"] for d in activity.recent_activity(store, hours_ago=1)["decisions"]] == ["fresh"]
    assert activity.recent_activity(store, hours_ago=1)["counts"]["decisions"] == 1
    everything = activity.recent_activity(store, since="2019-12-31T00:00:00Z")
    assert [d["summary"] for d in everything["decisions"]] == ["fresh", "ancient"]
    assert everything["since"] == "2019-12-31T00:00:00.000000Z"
    # An offset is converted to UTC before comparing: one hour ago, written in UTC+05:00.
    east = (datetime.now(UTC) - timedelta(hours=1)).astimezone(timezone(timedelta(hours=5))).isoformat()
    assert [d["summary"] for d in activity.recent_activity(store, since=east)["decisions"]] == ["fresh"]
    future = activity.recent_activity(store, since="2999-01-01")
    assert future["decisions"] == [] and future["counts"]["decisions"] == 0


def test_recent_activity_refuses_both_bounds_and_a_bad_since(store):
    with pytest.raises(InvalidItemError, match="hours_ago or since, not both"):
        activity.recent_activity(store, hours_ago=1, since="2026-01-01T00:00:00Z")
    with pytest.raises(InvalidItemError, match="since 'last tuesday' is not an ISO 8601 time"):
        activity.recent_activity(store, since="last tuesday")


def test_recent_activity_of_a_workspace_without_store_is_empty():
    out = activity.recent_activity(None, hours_ago=2)
    assert out["decisions"] == [] and out["context_changes"] == [] and out["counts"] == {}


# --- schema ----------------------------------------------------------------------------------------------------


def test_memory_schema_lists_every_item_type_with_fields_and_tools():
    schema = catalog.memory_schema()
    assert set(schema["item_types"]) == set(ITEM_TYPES)
    for name, item in schema["item_types"].items():
        assert item["fields"] and item["write"] and item["read"], name
    assert schema["links"]["write"] == ["link_items"]


# --- batch -----------------------------------------------------------------------------------------------------


def test_batch_writes_500_items_in_one_call(store):
    out = batch.batch_log_items(store, "decision", [{"summary": f"d{i}", "tags": ["bulk"]} for i in range(500)])
    assert len(out) == 500 and count(store, decisions_table) == 500
    assert len(search.search(store, "d499")) == 1
    assert len(decisions.get_decisions(store, tags_any=["BULK"], limit=1000)) == 500


def test_batch_of_501_items_is_refused_and_writes_nothing(store):
    with pytest.raises(InvalidItemError, match="501 items is more than 500"):
        batch.batch_log_items(store, "decision", [{"summary": f"d{i}"} for i in range(501)])
    assert count(store, decisions_table) == 0


GOOD_ITEMS = {
    "decision": lambda i: {"summary": f"ok {i}"},
    "progress": lambda i: {"status": "TODO", "description": f"ok {i}"},
    "system_pattern": lambda i: {"name": f"ok {i}", "description": "ok"},
    "custom_data": lambda i: {"category": "c", "key": f"k{i}", "value": i},
}


@pytest.mark.parametrize(
    ("item_type", "bad", "message"),
    [
        ("decision", {"rationale": "no summary"}, "item 3: missing summary"),
        ("decision", {"summary": "x", "priority": 1}, r"item 3: unknown field\(s\) priority"),
        ("decision", {"summary": "   "}, "item 3: decision summary is empty"),
        ("progress", {"status": "TODO"}, "item 3: missing description"),
        ("progress", {"status": "TODO", "description": "x", "parent_id": 999}, "item 3: parent_id 999"),
        ("system_pattern", {"name": "x", "description": ""}, "item 3: a system pattern needs"),
        ("custom_data", {"category": "c", "key": "", "value": 1}, "item 3: custom data needs"),
        ("custom_data", "not an object", "item 3 is not an object"),
    ],
)
def test_an_invalid_item_names_its_index_and_nothing_is_written(store, item_type, bad, message):
    before = [count(store, t) for t in (decisions_table, progress_table, patterns_table)]
    items = [GOOD_ITEMS[item_type](i) for i in range(3)] + [bad, GOOD_ITEMS[item_type](4)]
    with pytest.raises(InvalidItemError, match=message) as info:
        batch.batch_log_items(store, item_type, items)
    assert "nothing was written" in info.value.message
    assert [count(store, t) for t in (decisions_table, progress_table, patterns_table)] == before
    assert custom_data.get_custom_data(store) == []
    with store.read() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM search_index").scalar() == 0


@pytest.mark.parametrize(
    ("item_type", "bad"),
    [
        ("decision", {"summary": 123}),
        ("decision", {"summary": "x", "tags": "db"}),
        ("decision", {"summary": "x", "tags": [1]}),
        ("progress", {"status": "TODO", "description": "x", "parent_id": "1"}),
        ("system_pattern", {"name": None, "description": "x"}),
        ("custom_data", {"category": "c", "key": 7, "value": 1}),
    ],
)
def test_a_field_of_the_wrong_type_names_its_index(store, item_type, bad):
    with pytest.raises(InvalidItemError, match="item 1") as info:
        batch.batch_log_items(store, item_type, [GOOD_ITEMS[item_type](0), bad])
    assert "nothing was written" in info.value.message
    assert [count(store, t) for t in (decisions_table, progress_table, patterns_table)] == [0, 0, 0]
    assert custom_data.get_custom_data(store) == []


def test_batch_refuses_unknown_types_and_empty_lists(store):
    with pytest.raises(InvalidItemError, match="'product_context' is not one of"):
        batch.batch_log_items(store, "product_context", [{"content": {}}])
    with pytest.raises(InvalidItemError, match="items is empty"):
        batch.batch_log_items(store, "decision", [])


def test_batch_progress_may_name_a_parent_written_earlier_in_the_same_batch(store):
    parent = progress.log_progress(store, "TODO", "parent")
    out = batch.batch_log_items(
        store,
        "progress",
        [
            {"status": "TODO", "description": "child", "parent_id": parent["id"]},
            {"status": "DONE", "description": "grandchild", "parent_id": parent["id"] + 1},
        ],
    )
    assert [o["parent_id"] for o in out] == [parent["id"], parent["id"] + 1]
