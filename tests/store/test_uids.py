"""Item uids: a ULID per item beside its short id, the same in every store an export is imported into."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime

from sqlalchemy import select
from ulid import ULID

from homeport.store import Store, custom_data, decisions, patterns, progress
from homeport.store.migrate import downgrade, upgrade
from homeport.store.schema import item_uids
from homeport.store.transfer import export_memory, import_memory


def _uids(store: Store) -> dict[tuple[str, int], str]:
    with store.read() as conn:
        return {(t, i): u for t, i, u in conn.execute(select(item_uids))}


def _one_of_each(store: Store) -> dict[str, int]:
    return {
        "decision": decisions.log_decision(store, "Use ULIDs", tags=["ids"])["id"],
        "progress": progress.log_progress(store, "TODO", "give every item a uid")["id"],
        "system_pattern": patterns.log_system_pattern(store, "Identity", "uid beside id")["id"],
        "custom_data": custom_data.log_custom_data(store, "ProjectGlossary", "ULID", "sortable id")["id"],
    }


def test_every_new_item_gets_its_own_ulid_and_loses_it_when_deleted(tmp_path, copy_store):
    store = copy_store(tmp_path / "ws")
    before = datetime.now(UTC).replace(microsecond=0)
    ids = _one_of_each(store)
    uids = _uids(store)
    assert set(uids) == {(t, i) for t, i in ids.items()}
    assert len(set(uids.values())) == 4
    for uid in uids.values():
        assert len(uid) == 26 and ULID.from_str(uid).datetime >= before
    custom_data.log_custom_data(store, "ProjectGlossary", "ULID", "replaced")  # an update keeps the uid
    assert _uids(store) == uids
    decisions.delete_decision(store, ids["decision"])
    assert ("decision", ids["decision"]) not in _uids(store)
    store.close()


def test_an_export_carries_the_uids_and_an_import_elsewhere_keeps_them(tmp_path, copy_store):
    a, b = copy_store(tmp_path / "a"), copy_store(tmp_path / "b")
    patterns.log_system_pattern(b, "Local first", "b had a pattern before")  # so the imported one gets id 2 here
    ids = _one_of_each(a)
    uids_a = _uids(a)
    export_memory(a, tmp_path / "a")
    exported = json.loads((tmp_path / "a" / ".homeport" / "export" / "decisions.json").read_text())
    assert exported[0]["uid"] == uids_a[("decision", ids["decision"])]
    shutil.copytree(tmp_path / "a" / ".homeport" / "export", tmp_path / "b" / ".homeport" / "export")
    import_memory(b, tmp_path / "b")
    uids_b = _uids(b)
    assert set(uids_a.values()) <= set(uids_b.values())
    pattern_b = next(p for p in patterns.get_system_patterns(b) if p["name"] == "Identity")
    assert pattern_b["id"] != ids["system_pattern"]  # another short id here, the same identity
    assert uids_b[("system_pattern", pattern_b["id"])] == uids_a[("system_pattern", ids["system_pattern"])]
    import_memory(b, tmp_path / "b")  # merging the same export again moves nothing
    assert _uids(b) == uids_b
    a.close()
    b.close()


def test_the_migration_gives_existing_items_a_uid_from_their_creation_time(tmp_path):
    store = Store.open(tmp_path, create=True)
    ids = _one_of_each(store)
    downgrade(store.engine, "0003")  # a store from before uids, with items
    upgrade(store.engine)
    uids = _uids(store)
    assert set(uids) == set(ids.items())
    created = decisions.get_decisions(store)[0]["created_at"]
    stamp = datetime.fromisoformat(created.replace("Z", "+00:00"))
    assert ULID.from_str(uids[("decision", ids["decision"])]).datetime == stamp.replace(
        microsecond=stamp.microsecond // 1000 * 1000
    )
    store.close()
