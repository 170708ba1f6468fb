"""Tidy changesets on SQLite and PostgreSQL: propose, amend, apply all or nothing, revert exactly, hide."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from homeport.errors import ChangesetConflictError, ChangesetGuardError, InvalidItemError, ItemNotFoundError
from homeport.store import custom_data, decisions, lifecycle, links, patterns, progress, provenance, search, tidy
from homeport.store.item_history import get_item_history
from homeport.store.task_context import task_context
from homeport.store.transfer import _collect

ADA = provenance.Writer("ada", "claude-code", "2.1", "apply_changeset")


@pytest.fixture
def store(tmp_path: Path, copy_store):
    s = copy_store(tmp_path)
    yield s
    s.close()


def memory_of(store) -> dict:
    """What the memory holds now: an export without its history (versions and writers grow with every write,
    and a changeset records itself), which proposing must leave alone and reverting must give back."""
    return {k: v for k, v in _collect(store).items() if k not in ("item_versions", "item_writers", "changesets")}


def filler(store, n: int = 40) -> None:
    """Unrelated decisions (random made-up words), so a small changeset stays under the 5 % guard."""
    rng = random.Random(n)
    vocab = [a + b for a in ("ka", "lo", "mi", "nu", "pe", "ri", "so", "tu", "va", "ze") for b in SYLLABLES]
    for _ in range(n):
        decisions.log_decision(store, " ".join(rng.sample(vocab, 6)))


SYLLABLES = ("bar", "cen", "dol", "fis", "gum", "hap", "jot", "kel", "lun", "mox", "nib", "pod", "qua", "rux")


def dup_pair(store) -> tuple[dict, dict]:
    a = decisions.log_decision(store, "Use SQLite in WAL mode for the local store", tags=["store"])
    b = decisions.log_decision(store, "Use SQLite with WAL mode for the local store", tags=["sqlite"])
    return a, b


def entries_of(cs: dict, kind: str) -> list[dict]:
    return [e for e in cs["entries"] if e["kind"] == kind]


def test_a_duplicate_pair_is_proposed_as_one_merge_with_its_evidence_and_nothing_changes(store):
    filler(store)
    a, b = dup_pair(store)
    before = memory_of(store)
    cs = tidy.propose_cleanup(store)
    [entry] = entries_of(cs, "duplicate")
    assert entry["operations"] == [
        {"op": "merge", "item": {"type": "decision", "id": a["id"]}, "into": {"type": "decision", "id": b["id"]}}
    ]
    [pair] = entry["evidence"]["pairs"]
    assert pair["word_overlap"] >= 0.6 and pair["character_overlap"] >= 0.55
    assert "same thing" in entry["reason"] and entry["accepted"] is True
    assert cs["status"] == "proposed" and memory_of(store) == before


def test_near_misses_that_differ_in_a_number_or_a_negation_are_contradictions_never_merges(store):
    filler(store)
    decisions.log_decision(store, "Use PostgreSQL 15 for the team server")
    decisions.log_decision(store, "Use PostgreSQL 16 for the team server")
    decisions.log_decision(store, "Cache workspace resolutions between calls")
    decisions.log_decision(store, "Never cache workspace resolutions between calls")
    cs = tidy.propose_cleanup(store)
    assert not entries_of(cs, "duplicate")
    found = entries_of(cs, "contradiction")
    assert len(found) == 2 and all(e["operations"] == [] and e["accepted"] is False for e in found)
    assert {k for e in found for k in e["evidence"]} >= {"numbers_differ", "negation_differs"}


def test_apply_archives_the_merged_item_moves_its_links_and_tags_and_revert_restores_them_exactly(store):
    filler(store)
    a, b = dup_pair(store)
    p = patterns.log_system_pattern(store, "Store per workspace", "one SQLite file per project")
    links.link_items(store, "decision", a["id"], "system_pattern", p["id"], "implements")
    before = memory_of(store)
    cs = tidy.propose_cleanup(store, kinds=["duplicate"])
    with provenance.writing_as(ADA):
        applied = tidy.apply_changeset(store, cs["id"])
    assert applied["status"] == "applied" and applied["applied_by"] == "ada"
    with store.read() as conn:
        assert ("decision", a["id"]) in lifecycle.hidden_keys(conn)
    after = memory_of(store)
    assert [d["id"] for d in after["decisions"]] == [d["id"] for d in before["decisions"]]  # nothing deleted
    edges = {(x["source_id"], x["target_type"], x["target_id"], x["relationship"]) for x in after["links"]}
    assert (b["id"], "system_pattern", p["id"], "implements") in edges
    assert (a["id"], "decision", b["id"], "merged_into") in edges
    assert {t.casefold() for t in next(d for d in after["decisions"] if d["id"] == b["id"])["tags"]} == {
        "sqlite",
        "store",
    }
    assert get_item_history(store, "decision", a["id"])[0]["fields"]["summary"] == a["summary"]  # readable
    tidy.revert_changeset(store, cs["id"])
    assert memory_of(store) == before
    with store.read() as conn:
        assert not lifecycle.hidden_keys(conn)


def test_apply_is_refused_whole_when_an_item_changed_since_the_proposal(store):
    filler(store)
    _a, b = dup_pair(store)
    p = progress.log_progress(
        store,
        "TODO",
        "old",
    )
    decisions.log_decision(store, "Old login flow")
    cs = tidy.propose_cleanup(store, kinds=["duplicate"])
    decisions.update_decision(store, b["id"], rationale="changed meanwhile")
    before = memory_of(store)
    with pytest.raises(ChangesetConflictError, match=f"decision {b['id']} changed since it was proposed"):
        tidy.apply_changeset(store, cs["id"])
    assert memory_of(store) == before and tidy.get_changeset(store, cs["id"])["status"] == "proposed"
    assert p["id"]


def test_the_guard_refuses_pinned_items_and_big_changesets_unless_forced(store):
    a, _b = dup_pair(store)  # 2 of 2 items: 100 %
    cs = tidy.propose_cleanup(store)
    with pytest.raises(ChangesetGuardError, match="touches 2 of 2 items, more than 5%"):
        tidy.apply_changeset(store, cs["id"])
    filler(store, 60)
    lifecycle.set_item_lifecycle(store, "decision", a["id"], pinned=True)
    cs = tidy.propose_cleanup(store, kinds=["duplicate"])
    with pytest.raises(ChangesetGuardError, match=f"pinned decision {a['id']}"):
        tidy.apply_changeset(store, cs["id"])
    assert tidy.apply_changeset(store, cs["id"], force=True)["status"] == "applied"


def test_amend_rejects_accepts_and_adds_operations_and_a_contradiction_needs_a_decided_operation(store):
    filler(store)
    dup_pair(store)
    old = decisions.log_decision(store, "Cache workspace resolutions between calls")
    new = decisions.log_decision(store, "Never cache workspace resolutions between calls")
    cs = tidy.propose_cleanup(store)
    contra = entries_of(cs, "contradiction")[0]["id"]
    dup = entries_of(cs, "duplicate")[0]["id"]
    with pytest.raises(InvalidItemError, match="no operation to accept"):
        tidy.amend_changeset(store, cs["id"], accept=[contra])
    with pytest.raises(InvalidItemError, match="has no entry 99"):
        tidy.amend_changeset(store, cs["id"], reject=[99])
    with pytest.raises(ItemNotFoundError, match="decision 9999 does not exist"):
        tidy.amend_changeset(store, cs["id"], add=[{"op": "archive", "item": "decision:9999"}])
    amended = tidy.amend_changeset(
        store,
        cs["id"],
        reject=[dup],
        add=[{"op": "supersede", "item": f"decision:{old['id']}", "by": {"type": "decision", "id": new["id"]}}],
        reason="we stopped caching in review",
    )
    manual = entries_of(amended, "manual")[0]
    assert manual["reason"] == "we stopped caching in review" and manual["accepted"]
    assert amended["counts"]["accepted"] == 1
    tidy.apply_changeset(store, cs["id"])
    with store.read() as conn:
        assert lifecycle.hidden_keys(conn) == {("decision", old["id"])}
    with pytest.raises(InvalidItemError, match="is applied; only a proposed changeset can be amended"):
        tidy.amend_changeset(store, cs["id"], reject=[dup])


def test_superseded_links_and_stale_progress_are_proposed(store):
    filler(store)
    old = decisions.log_decision(store, "Tokens in a JSON file")
    new = decisions.log_decision(store, "Tokens in the OS keyring")
    links.link_items(store, "decision", old["id"], "decision", new["id"], "superseded_by")
    stale = progress.log_progress(store, "IN_PROGRESS", "Port the importer to the new reader")
    progress.log_progress(store, "TODO", "Write the release notes")
    with store.write() as conn:
        long_ago = (datetime.now(UTC) - timedelta(days=200)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        conn.execute(progress_table().update().where(progress_table().c.id == stale["id"]).values(updated_at=long_ago))
    cs = tidy.propose_cleanup(store)
    [sup] = entries_of(cs, "superseded")
    assert sup["operations"] == [
        {"op": "supersede", "item": {"type": "decision", "id": old["id"]}, "by": {"type": "decision", "id": new["id"]}}
    ]
    [st] = entries_of(cs, "stale")
    assert st["operations"] == [{"op": "archive", "item": {"type": "progress", "id": stale["id"]}}]
    assert st["evidence"]["updated_at"] == long_ago


def progress_table():
    from homeport.store.schema import progress as table

    return table


def test_hidden_items_leave_search_and_get_context_with_a_count_and_expire_by_valid_until(store):
    filler(store)
    a, b = dup_pair(store)
    term = custom_data.log_custom_data(store, "ProjectGlossary", "WAL", "write-ahead log of SQLite")
    assert {h["id"] for h in search.search(store, "SQLite WAL") if h["type"] == "decision"} == {a["id"], b["id"]}
    cs = tidy.propose_cleanup(store, kinds=["duplicate"])
    tidy.apply_changeset(store, cs["id"])
    ctx = task_context(store, "Use SQLite WAL mode for the local store")
    assert ("decision", a["id"]) not in {(i["type"], i["id"]) for i in ctx["items"]}
    assert ctx["hidden_expired"] == 1
    past = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    lifecycle.set_item_lifecycle(store, "custom_data", term["id"], valid_until=past)
    with store.read() as conn:
        assert lifecycle.hidden_keys(conn) == {("decision", a["id"]), ("custom_data", term["id"])}
    lifecycle.set_item_lifecycle(store, "custom_data", term["id"], valid_until="")
    with store.read() as conn:
        assert lifecycle.hidden_keys(conn) == {("decision", a["id"])}


def test_revert_is_refused_while_a_later_changeset_holds_the_items_and_works_in_reverse_order(store):
    filler(store)
    _a, b = dup_pair(store)
    first = tidy.propose_cleanup(store, kinds=["duplicate"])
    tidy.apply_changeset(store, first["id"])
    second = tidy.propose_cleanup(store, kinds=[])
    second = tidy.amend_changeset(store, second["id"], add=[{"op": "archive", "item": f"decision:{b['id']}"}])
    tidy.apply_changeset(store, second["id"])
    with pytest.raises(ChangesetConflictError, match=f"revert changeset {second['id']} first"):
        tidy.revert_changeset(store, first["id"])
    tidy.revert_changeset(store, second["id"])
    tidy.revert_changeset(store, first["id"])
    with store.read() as conn:
        assert not lifecycle.hidden_keys(conn)
    with pytest.raises(InvalidItemError, match="is reverted; only an applied changeset"):
        tidy.revert_changeset(store, first["id"])


def test_an_import_that_replaces_the_memory_forgets_the_replaced_items_states_and_changesets(store, tmp_path):
    from homeport.store.transfer import export_memory, import_memory

    filler(store)
    a, _b = dup_pair(store)
    export_memory(store, tmp_path, output_dir="before")
    cs = tidy.propose_cleanup(store, kinds=["duplicate"])
    tidy.apply_changeset(store, cs["id"])
    import_memory(store, tmp_path, input_dir="before", mode="replace")
    with store.read() as conn:
        assert lifecycle.hidden_keys(conn) == set()  # the imported decision with a's id is not archived
    assert tidy.list_changesets(store) == []
    assert a["id"] in {d["id"] for d in decisions.get_decisions(store, limit=100)}


def test_meaning_is_the_second_signal_once_both_items_are_embedded(store):
    import math
    import struct

    from homeport.store.schema import item_vectors

    filler(store)
    a = decisions.log_decision(store, "Stock decrements lock rows")
    b = decisions.log_decision(store, "Rows are locked with SELECT FOR UPDATE when stock decrements run at checkout")
    assert not entries_of(tidy.propose_cleanup(store, kinds=["duplicate"]), "duplicate")  # words alone: no
    near = (0.9, math.sqrt(1 - 0.9**2))  # unit vectors with a cosine of 0.9
    with store.write() as conn:
        for item, vector in ((a, (1.0, 0.0)), (b, near)):
            blob = struct.pack("<4f", *vector, 0.0, 0.0)
            conn.execute(
                item_vectors.insert().values(item_type="decision", item_id=item["id"], chunk=0, model="m", vector=blob)
            )
    [entry] = entries_of(tidy.propose_cleanup(store, kinds=["duplicate"]), "duplicate")
    [pair] = entry["evidence"]["pairs"]
    assert pair["meaning"] == 0.9 and "meaning" in entry["reason"]
    assert entry["operations"][0]["item"]["id"] in (a["id"], b["id"])
