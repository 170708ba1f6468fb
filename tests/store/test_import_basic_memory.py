"""Importing a basic-memory project directory: the mapping, idempotence, skips, dry runs, parsing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from homeport.errors import InvalidItemError
from homeport.store import Store
from homeport.store._basic_memory_read import Observation, _observation
from homeport.store.custom_data import get_custom_data
from homeport.store.decisions import get_decisions
from homeport.store.import_basic_memory import import_basic_memory, read_project
from homeport.store.links import get_linked_items
from homeport.store.patterns import get_system_patterns

FIXTURES = Path(__file__).parents[1] / "fixtures" / "basic_memory"
SHOP = FIXTURES / "shop"  # written by basic-memory 0.24.1's own write-note (make_fixture.py)
HAND_WRITTEN = FIXTURES / "hand_written"


@pytest.fixture
def store(tmp_path, copy_store) -> Store:
    s = copy_store(tmp_path / "ws")
    yield s
    s.close()


def _by_summary(store: Store) -> dict[str, dict]:
    return {d["summary"]: d for d in get_decisions(store)}


def test_a_real_project_maps_notes_observations_and_relations(store):
    summary = import_basic_memory(store, read_project(SHOP))
    assert summary["created"] == {
        "product_context": 0,
        "active_context": 0,
        "progress": 0,
        "decision": 4,
        "system_pattern": 2,
        "custom_data": 2,
        "link": 9,
    }
    decisions = _by_summary(store)
    sqlite = decisions["Use SQLite for the store"]  # type decision, in decisions/
    assert sqlite["rationale"] == (
        "We keep project memory in one SQLite file per workspace.\n\n"
        "- [rationale] No server to run for a single developer"
    )
    assert set(sqlite["tags"]) == {"storage", "sqlite", "basic-memory"}
    assert "Drop the MySQL backend" in decisions  # type decision, in notes/
    worker = decisions["Payments run in the Celery worker, never in a request"]  # a [decision] observation
    assert worker["rationale"] == "timeouts" and set(worker["tags"]) == {"payments", "basic-memory"}
    patterns = {p["name"]: p for p in get_system_patterns(store)}
    assert set(patterns) == {"Every external call goes through a service object", "Money is stored as integer cents"}
    assert patterns["Every external call goes through a service object"]["description"] == (
        "Every external call goes through a service object (keeps views thin)\n\n"
        "source: shop/architecture/shop-architecture"
    )
    [ana] = get_custom_data(store, category="people", key="shop/people/ana-ruiz")
    assert ana["value"] == {
        "title": "Ana Ruiz",
        "text": "Ana leads the backend team.",
        "tags": ["team"],
        "observations": [
            {"category": "role", "text": "Backend lead", "tags": ["team"], "context": None},
            {
                "category": "contact",
                "text": "Reachable on the #shop-backend channel",
                "tags": ["shop-backend"],
                "context": None,
            },
        ],
    }
    for relationship, item_type in [("owns", "custom_data"), ("documented_by", "custom_data"), ("decided", "decision")]:
        [linked] = get_linked_items(store, "custom_data", ana["id"], relationship=relationship)
        assert linked["type"] == item_type
    [forward] = summary["skipped"]
    assert forward["where"] == "architecture/Shop Architecture.md:18" and "Payment Gateway" in forward["reason"]


def test_importing_twice_adds_nothing(store):
    first = import_basic_memory(store, read_project(SHOP))
    second = import_basic_memory(store, read_project(SHOP))
    assert sum(second["created"].values()) == 0 and second["updated"] == 0
    assert second["unchanged"] == sum(first["created"].values())
    assert [i["id"] for i in second["items"]] == [i["id"] for i in first["items"]]


def test_a_dry_run_reports_the_same_and_writes_nothing(store):
    dry = import_basic_memory(store, read_project(SHOP), dry_run=True)
    assert dry["dry_run"] and dry["created"]["decision"] == 4
    assert get_decisions(store) == [] and get_system_patterns(store) == []
    real = import_basic_memory(store, read_project(SHOP))
    assert real["created"] == dry["created"] and real["skipped"] == dry["skipped"]


def test_an_edited_note_leaves_the_imported_items_as_they_are(store, tmp_path):
    import_basic_memory(store, read_project(SHOP))
    edited = tmp_path / "shop"
    shutil.copytree(SHOP, edited)
    ana = edited / "people" / "Ana Ruiz.md"
    ana.write_text(ana.read_text().replace("leads the backend team", "moved to data"))
    calls: list[tuple[int, int]] = []
    summary = import_basic_memory(store, read_project(edited), progress=lambda *call: calls.append(call))
    assert calls[-1][0] == calls[-1][1]
    assert sum(summary["created"].values()) == 0
    kept = [s for s in summary["skipped"] if s["where"] == "people/Ana Ruiz.md"]
    assert len(kept) == 1 and "left as it is" in kept[0]["reason"]
    # its relations are not lost to a wrong target: they are skipped as the note was
    assert any("was skipped" in s["reason"] for s in summary["skipped"] if "Ana Ruiz" in s["item"])
    [value] = get_custom_data(store, category="people", key="shop/people/ana-ruiz")
    assert value["value"]["text"] == "Ana leads the backend team."


def test_hand_written_edge_cases_are_read_as_basic_memory_reads_them(store):
    project = read_project(HAND_WRITTEN)
    assert [n.path for n in project.notes] == ["Loose Ideas.md", "decisions/Keep Prices in Cents.md"]
    [bad] = project.skipped
    assert bad["where"] == "broken/Bad Yaml.md" and "not valid YAML" in bad["reason"]
    loose, cents = project.notes
    assert (loose.title, loose.note_type, loose.permalink) == ("Loose Ideas", "note", "loose-ideas")
    assert [o.category for o in loose.observations] == ["idea", "pattern"]  # not the checkbox, not fenced code
    assert "inside fenced code" in loose.text and "- [ ] a task list item" in loose.text
    assert loose.observations[1].tags == ["webhooks", "reliability"]
    assert cents.tags == ["money", "pricing"] and cents.text.startswith("In the decisions folder")

    summary = import_basic_memory(store, project)
    assert summary["created"]["decision"] == 1 and summary["created"]["system_pattern"] == 2
    [note] = get_custom_data(store, category="note", key="loose-ideas")
    decision = _by_summary(store)["Keep Prices in Cents"]
    assert decision["rationale"].endswith("- [risk] Currencies with three decimals need a different scale (KWD, BHD)")
    for relationship, item_type in [
        ("links_to", "custom_data"),
        ("relates_to", "custom_data"),
        ("noted_in", "system_pattern"),
    ]:
        [linked] = get_linked_items(store, "decision", decision["id"], relationship=relationship)
        assert linked["type"] == item_type
    reasons = {s["item"]: s["reason"] for s in summary["skipped"]}
    assert reasons["Keep Prices in Cents relates_to Keep Prices in Cents"] == "a note linked to itself"
    assert "Pricing Overview" in reasons["Keep Prices in Cents part_of Pricing Overview"]
    assert note["value"]["observations"][0]["text"] == "Gift cards as a product type"


def test_an_item_the_store_refuses_is_skipped_and_the_rest_imports(store, tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "Rules.md").write_text(
        f"---\ntitle: Rules\n---\n\n- [pattern] {'long ' * 400}\n- [pattern] Short and fine\n"
    )
    summary = import_basic_memory(store, read_project(tmp_path / "p"))
    assert summary["created"]["system_pattern"] == 1 and summary["created"]["custom_data"] == 1
    [refused] = summary["skipped"]
    assert refused["where"] == "Rules.md:5"


def test_a_source_that_is_not_a_directory_is_refused(tmp_path):
    with pytest.raises(InvalidItemError) as exc:
        read_project(tmp_path / "missing")
    assert exc.value.code == "invalid_item"


_WORD = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 ,.:'-]{0,30}[A-Za-z0-9.]", fullmatch=True)
_TAG = st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True)


@given(
    category=st.from_regex(r"[a-z][a-z -]{0,10}[a-z]", fullmatch=True).filter(lambda c: c != "x"),
    text=_WORD,
    tags=st.lists(_TAG, max_size=3, unique=True),
    context=st.none() | _WORD,
)
def test_an_observation_reads_back_as_it_was_written(category, text, tags, context):
    written = Observation(category, text, tags, context, 1)
    assert _observation(written.as_line(), 1) == written


def test_progress_counts_up_to_the_total_it_announced(store):
    calls: list[tuple[int, int]] = []
    import_basic_memory(store, read_project(SHOP), progress=lambda done, total: calls.append((done, total)))
    assert calls[-1][0] == calls[-1][1] == len(calls)
