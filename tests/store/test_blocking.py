"""Blocking dependencies between progress entries (beads' `blocks`), and the work that is ready now.

Every test runs on SQLite and PostgreSQL (`copy_store`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from homeport.errors import InvalidItemError
from homeport.store import blocking, decisions, links, progress
from homeport.store.schema import links as links_table


@pytest.fixture
def store(tmp_path: Path, copy_store):
    s = copy_store(tmp_path)
    yield s
    s.close()


def _task(store, description: str, status: str = "TODO") -> int:
    return int(progress.log_progress(store, status, description)["id"])


def _edges(store) -> list[tuple[int, int, str]]:
    with store.read() as conn:
        rows = conn.execute(select(links_table).order_by(links_table.c.id)).all()
    return [(r.source_id, r.target_id, r.relationship) for r in rows]


def test_blocked_by_is_stored_as_the_reverse_blocks_link(store):
    a, b = _task(store, "schema"), _task(store, "api")
    link = links.link_items(store, "progress", b, "progress", a, "blocked_by")
    assert (link["source_id"], link["target_id"], link["relationship"]) == (a, b, "blocks")
    assert _edges(store) == [(a, b, "blocks")]
    again = links.link_items(store, "progress", a, "progress", b, "blocks")
    assert again["created"] is False and again["id"] == link["id"]


def test_a_blocks_link_that_closes_a_cycle_is_refused_naming_the_cycle(store):
    a, b, c = _task(store, "one"), _task(store, "two"), _task(store, "three")
    links.link_items(store, "progress", a, "progress", b, "blocks")
    links.link_items(store, "progress", b, "progress", c, "blocks")
    with pytest.raises(InvalidItemError) as caught:
        links.link_items(store, "progress", c, "progress", a, "blocks")
    message = str(caught.value)
    assert f"progress {c} blocks progress {a} blocks progress {b} blocks progress {c}" in message
    assert "cycle" in message
    with pytest.raises(InvalidItemError, match="cycle"):
        links.link_items(store, "progress", a, "progress", c, "blocked_by")
    assert _edges(store) == [(a, b, "blocks"), (b, c, "blocks")]


def test_an_item_cannot_block_itself(store):
    a = _task(store, "alone")
    with pytest.raises(InvalidItemError, match="itself"):
        links.link_items(store, "progress", a, "progress", a, "blocks")


def test_blocks_between_other_item_types_stays_an_ordinary_relationship(store):
    d1 = int(decisions.log_decision(store, "first")["id"])
    d2 = int(decisions.log_decision(store, "second")["id"])
    links.link_items(store, "decision", d1, "decision", d2, "blocks")
    links.link_items(store, "decision", d2, "decision", d1, "blocks")  # no dependency meaning: no cycle check
    links.link_items(store, "decision", d1, "decision", d2, "blocked_by")
    assert sorted(_edges(store)) == sorted([(d1, d2, "blocks"), (d2, d1, "blocks"), (d1, d2, "blocked_by")])


def test_the_blocked_by_view_lists_the_items_that_block_one(store):
    a, b, c = _task(store, "one"), _task(store, "two"), _task(store, "three")
    links.link_items(store, "progress", a, "progress", c, "blocks")
    links.link_items(store, "progress", c, "progress", b, "blocked_by")  # b blocks c
    links.link_items(store, "progress", c, "progress", a, "relates_to")
    view = links.get_linked_items(store, "progress", c, relationship="blocked_by")
    assert [(v["id"], v["relationship"]) for v in view] == [(a, "blocked_by"), (b, "blocked_by")]
    assert links.get_linked_items(store, "progress", a, relationship="blocked_by") == []


def test_ready_work_is_the_open_items_without_open_blockers_each_saying_why(store):
    schema = _task(store, "schema")
    api = _task(store, "api")
    docs = _task(store, "docs")
    started = _task(store, "started", "IN_PROGRESS")
    shipped = _task(store, "shipped", "DONE")
    links.link_items(store, "progress", schema, "progress", api, "blocks")
    links.link_items(store, "progress", shipped, "progress", docs, "blocks")
    ready = blocking.ready_work(store)
    ids = [item["id"] for item in ready["items"]]
    assert ids == [started, schema, docs]  # in progress first, then oldest first; api waits on schema
    why = {item["id"]: item["ready_because"] for item in ready["items"]}
    assert why[schema] == "no blockers"
    assert why[docs] == f"every blocker is done: progress {shipped} (DONE)"
    assert ready["blocked"] == [{"id": api, "blocked_by": [{"id": schema, "status": "TODO"}]}]
    assert "priority" in ready["order"]

    progress.update_progress(store, schema, status="DONE")
    assert [item["id"] for item in blocking.ready_work(store)["items"]] == [started, api, docs]


def test_ready_work_of_a_workspace_without_memory_is_empty():
    assert blocking.ready_work(None)["items"] == []


def test_done_is_recognised_whatever_its_case(store):
    blocker, blocked = _task(store, "blocker", "done"), _task(store, "blocked")
    links.link_items(store, "progress", blocker, "progress", blocked, "blocks")
    assert [item["id"] for item in blocking.ready_work(store)["items"]] == [blocked]
