"""Importing the reference memory server's memory.jsonl: the mapping, idempotence, skips, dry runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from homeport.store import Store
from homeport.store.custom_data import get_custom_data, log_custom_data
from homeport.store.decisions import get_decisions, log_decision
from homeport.store.import_memory_jsonl import import_graph, read_graph
from homeport.store.links import get_linked_items
from homeport.store.patterns import get_system_patterns

FIXTURES = Path(__file__).parents[1] / "fixtures" / "memory_jsonl"
SHOP = FIXTURES / "shop.jsonl"  # written by @modelcontextprotocol/server-memory itself (make_fixture.py)


@pytest.fixture
def store(tmp_path, copy_store) -> Store:
    s = copy_store(tmp_path / "ws")
    yield s
    s.close()


def test_the_reference_servers_file_maps_entities_by_type_and_relations_to_links(store):
    summary = import_graph(store, read_graph(SHOP))
    assert summary["created"] == {"decision": 1, "system_pattern": 2, "custom_data": 4, "link": 4}
    assert summary["skipped"] == [] and summary["unchanged"] == 0

    [decision] = get_decisions(store)
    assert decision["summary"] == "Use Stripe for payments" and decision["tags"] == ["memory-jsonl"]
    assert decision["rationale"] == (
        "PayPal disputes took weeks\nWebhooks are verified with the signing secret from the environment"
    )
    assert {p["name"] for p in get_system_patterns(store)} == {
        "Service functions own transactions",
        "Feature flags in the admin",
    }
    ada = get_custom_data(store, category="person", key="Ada")[0]
    assert ada["value"] == ["Maintains the checkout", "On call in December"]  # after the server's own delete
    checkout = get_custom_data(store, category="component", key="Checkout")[0]
    linked = {(i["type"], i["relationship"]) for i in get_linked_items(store, "custom_data", checkout["id"])}
    assert linked == {("custom_data", "maintains"), ("decision", "follows"), ("system_pattern", "implements")}


def test_importing_twice_adds_nothing(store):
    first = import_graph(store, read_graph(SHOP))
    second = import_graph(store, read_graph(SHOP))
    assert sum(second["created"].values()) == 0 and second["updated"] == 0
    assert second["unchanged"] == sum(first["created"].values())
    assert [i["id"] for i in second["items"]] == [i["id"] for i in first["items"]]


def test_new_observations_are_added_to_custom_data_and_edited_items_are_left_alone(store, tmp_path):
    import_graph(store, read_graph(SHOP))
    lines = [json.loads(line) for line in SHOP.read_text().splitlines()]
    for record in lines:
        if record.get("name") == "Ada":
            record["observations"].append("Leads the winter sale")
        if record.get("name") == "Use Stripe for payments":
            record["observations"] = ["Rewritten elsewhere"]
    changed = tmp_path / "memory.jsonl"
    changed.write_text("\n".join(json.dumps(r) for r in lines))
    summary = import_graph(store, read_graph(changed))
    assert summary["updated"] == 1 and sum(summary["created"].values()) == 0
    assert get_custom_data(store, category="person", key="Ada")[0]["value"][-1] == "Leads the winter sale"
    [kept] = summary["skipped"]
    assert kept["item"] == "Use Stripe for payments" and "left as it is" in kept["reason"]
    assert get_decisions(store)[0]["rationale"].startswith("PayPal")


def test_every_line_that_cannot_be_imported_is_skipped_with_its_line_and_reason(store):
    summary = import_graph(store, read_graph(FIXTURES / "edge_cases.jsonl"))
    reasons = {s["line"]: s["reason"] for s in summary["skipped"]}
    assert sorted(reasons) == [3, 5, 6, 7, 8, 9, 10, 11, 12]
    assert "merged" in reasons[3] and "not JSON" in reasons[5] and "not a JSON object" in reasons[6]
    assert "neither entity nor relation" in reasons[7] and "without a name" in reasons[8]
    assert "no entity 'Nobody'" in reasons[10] and "linked to itself" in reasons[12]
    [decision] = get_decisions(store)
    assert decision["rationale"] == "Readers never block the writer\nCheckpoint on close"
    assert get_custom_data(store, category="Entity", key="Glossary")[0]["value"] == []
    assert summary["created"]["link"] == 1 and summary["unchanged"] == 1  # the repeated relation


def test_a_dry_run_reports_the_same_and_writes_nothing(store):
    log_decision(store, "Use Stripe for payments", rationale="other text")
    dry = import_graph(store, read_graph(SHOP), dry_run=True)
    assert get_decisions(store)[0]["rationale"] == "other text" and len(get_decisions(store)) == 1
    assert get_custom_data(store) == []
    real = import_graph(store, read_graph(SHOP))
    assert {k: v for k, v in dry.items() if k not in ("dry_run", "items")} == {
        k: v for k, v in real.items() if k not in ("dry_run", "items")
    }


def test_custom_data_that_is_not_a_list_is_left_alone(store):
    log_custom_data(store, "person", "Ada", "a note typed by hand")
    summary = import_graph(store, read_graph(SHOP))
    assert [s["item"] for s in summary["skipped"]] == ["Ada"]
    assert get_custom_data(store, category="person", key="Ada")[0]["value"] == "a note typed by hand"


_NAME = st.text(alphabet="abcXYZ é", min_size=1, max_size=6).filter(str.strip)
_ENTITY = st.fixed_dictionaries(
    {
        "type": st.just("entity"),
        "name": _NAME,
        "entityType": st.sampled_from(["decision", "Pattern", "person", "project", ""]),
        "observations": st.lists(st.text(alphabet="abc déf\n", max_size=12), max_size=3),
    }
)


def test_any_graph_imported_twice_adds_nothing_the_second_time(tmp_path_factory, copy_store, examples):
    @settings(max_examples=examples(30), deadline=None)
    @given(
        entities=st.lists(_ENTITY, max_size=8),
        relations=st.lists(st.tuples(_NAME, _NAME, st.sampled_from(["uses", "owns"])), max_size=6),
    )
    def imported_twice(entities, relations) -> None:
        root = tmp_path_factory.mktemp("ws")
        source = root / "memory.jsonl"
        records = entities + [{"type": "relation", "from": a, "to": b, "relationType": r} for a, b, r in relations]
        source.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
        store = copy_store(root)
        try:
            import_graph(store, read_graph(source))
            again = import_graph(store, read_graph(source))
        finally:
            store.close()
        assert sum(again["created"].values()) == 0 and again["updated"] == 0

    imported_twice()


def test_progress_counts_every_entity_and_relation_up_to_the_total(store):
    graph = read_graph(SHOP)
    seen: list[tuple[int, int]] = []
    import_graph(store, graph, progress=lambda done, total: seen.append((done, total)))
    total = len(graph.entities) + len(graph.relations)
    assert seen == [(n, total) for n in range(1, total + 1)]
