"""Selects narrowed to a list of ids (`database.ByIds`): the same rows for any list, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from homeport.store import Store
from homeport.store.decisions import log_decision
from homeport.store.tags import tags_of


@pytest.fixture
def store(tmp_path, copy_store) -> Store:
    return copy_store(tmp_path / "shop")


@pytest.mark.parametrize("count", [1, 2, 60, 1200])  # 1200: more ids than an expanded IN may bind on old SQLite
def test_tags_of_any_number_of_ids_in_any_order_with_repeats_and_absent_ones(store, count):
    made = [log_decision(store, f"decision {i}", tags=[f"t{i % 3}", "all"])["id"] for i in range(3)]
    ids = [*reversed([made[i % 3] for i in range(count)]), 10**9]
    with store.read() as conn:
        found = tags_of(conn, "decision", ids)
    wanted = {made[i]: sorted([f"t{i}", "all"], key=str.casefold) for i in range(min(count, 3))}
    assert dict(found) == wanted
