"""The per-workspace store: schema, migrations, items, search, the open-store cache."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from homeport.errors import InvalidItemError, ItemNotFoundError, StoreTooNewError
from homeport.store import (
    SCHEMA_REVISION,
    Store,
    StoreCache,
    contexts,
    custom_data,
    decisions,
    progress,
    search,
    store_path_for,
)
from homeport.store.contexts import DELETE_MARKER, apply_patch
from homeport.store.migrate import downgrade, head_revision, upgrade


@pytest.fixture
def store(tmp_path: Path, copy_store):
    s = copy_store(tmp_path)
    yield s
    s.close()


def test_schema_revision_constant_is_the_migrations_head():
    assert head_revision() == SCHEMA_REVISION


def test_migrations_run_from_an_empty_database_and_back(tmp_path):
    s = Store.open(tmp_path, create=True)
    tables = {r[0] for r in sqlite3.connect(s.path).execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {
        "decisions",
        "progress",
        "custom_data",
        "contexts",
        "context_history",
        "item_tags",
        "search_index",
    } <= tables
    downgrade(s.engine, "base")
    upgrade(s.engine)
    assert decisions.log_decision(s, "still works")["id"] == 1
    s.close()


def test_store_uses_wal_and_foreign_keys(store, sqlite_only):
    with store.read() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def test_opening_for_reads_never_creates_a_store(tmp_path):
    assert Store.open(tmp_path, create=False) is None
    assert not (tmp_path / ".homeport").exists()
    assert decisions.get_decisions(None) == []
    assert contexts.get_context(None, "active") == {"content": {}, "version": 0, "updated_at": None}


def test_store_directory_ignores_its_database_in_git(tmp_path):
    Store.open(tmp_path, create=True).close()
    assert "*.db" in (tmp_path / ".homeport" / ".gitignore").read_text()


def test_decision_tags_are_trimmed_deduplicated_and_matched_case_insensitively(store):
    d = decisions.log_decision(store, " Use WAL ", rationale="r", tags=[" DB", "db", "Perf", ""])
    decisions.log_decision(store, "Other", tags=["perf"])
    assert d["summary"] == "Use WAL" and d["tags"] == ["DB", "Perf"]
    assert [x["id"] for x in decisions.get_decisions(store, tags_any=["db"])] == [d["id"]]
    assert [x["summary"] for x in decisions.get_decisions(store, tags_all=["PERF", "db"])] == ["Use WAL"]
    assert [x["summary"] for x in decisions.get_decisions(store, tags_any=["perf"])] == ["Other", "Use WAL"]


def test_empty_decision_summary_is_rejected(store):
    with pytest.raises(InvalidItemError, match="summary is empty"):
        decisions.log_decision(store, "   ")


def test_context_patch_merges_and_deletes_and_keeps_history(store):
    contexts.update_context(store, "product", content={"goal": "g", "stack": ["py"]})
    out = contexts.update_context(store, "product", patch={"goal": DELETE_MARKER, "team": 3})
    assert out == {"content": {"stack": ["py"], "team": 3}, "version": 2, "updated_at": out["updated_at"]}
    with store.read() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM context_history WHERE kind='product'").scalar() == 2
    assert contexts.get_context(store, "active")["version"] == 0


def test_context_update_needs_exactly_one_of_content_or_patch(store):
    with pytest.raises(InvalidItemError, match="exactly one"):
        contexts.update_context(store, "active")
    with pytest.raises(InvalidItemError, match="exactly one"):
        contexts.update_context(store, "active", content={}, patch={})


json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=5)


@given(
    st.dictionaries(st.text(max_size=4), json_scalars),
    st.dictionaries(st.text(max_size=4), json_scalars | st.just(DELETE_MARKER)),
)
def test_patch_sets_every_key_and_deletes_only_marked_ones(doc, patch):
    merged = apply_patch(doc, patch)
    for key, value in patch.items():
        if value == DELETE_MARKER:
            assert key not in merged
        else:
            assert merged[key] == value
    for key in doc.keys() - patch.keys():
        assert merged[key] == doc[key]


def test_progress_parent_must_exist_and_cycles_are_refused(store):
    parent = progress.log_progress(store, "TODO", "parent")
    child = progress.log_progress(store, "TODO", "child", parent_id=parent["id"])
    with pytest.raises(ItemNotFoundError, match="parent_id 99"):
        progress.log_progress(store, "TODO", "x", parent_id=99)
    with pytest.raises(InvalidItemError, match="own ancestor"):
        progress.update_progress(store, parent["id"], parent_id=child["id"])
    assert progress.update_progress(store, child["id"], status="DONE")["status"] == "DONE"
    assert [p["id"] for p in progress.get_progress(store, parent_id=parent["id"])] == [child["id"]]
    assert [p["id"] for p in progress.get_progress(store, status="DONE")] == [child["id"]]


def test_custom_data_is_replaced_by_category_and_key(store):
    first = custom_data.log_custom_data(store, "ProjectGlossary", "WAL", "write-ahead log")
    second = custom_data.log_custom_data(store, "ProjectGlossary", "WAL", {"meaning": "write-ahead log"})
    assert first["id"] == second["id"] and second["created_at"] == first["created_at"]
    assert custom_data.get_custom_data(store, category="ProjectGlossary")[0]["value"] == {"meaning": "write-ahead log"}


def test_search_ranks_and_names_type_and_id(store):
    d = decisions.log_decision(store, "Use SQLite WAL mode", rationale="readers never block writers")
    p = progress.log_progress(store, "TODO", "benchmark WAL checkpoints")
    custom_data.log_custom_data(store, "notes", "unrelated", "nothing to see")
    hits = search.search(store, "WAL")
    assert {(h["type"], h["id"]) for h in hits} == {("decision", d["id"]), ("progress", p["id"])}
    assert "[WAL]" in search.mark(hits[0], "[", "]")
    assert search.search(store, "wal", types=["progress"])[0]["id"] == p["id"]


@pytest.mark.parametrize("query", ['"unbalanced', "AND", "wal OR", "NEAR(", "*", "col:wal", "(wal"])
def test_search_syntax_errors_fall_back_to_plain_words(store, query):
    decisions.log_decision(store, "WAL decision")
    hits = search.search(store, query)
    assert isinstance(hits, list)
    if "wal" in query.lower():
        assert hits and hits[0]["type"] == "decision"


def test_search_index_follows_updates(store):
    p = progress.log_progress(store, "TODO", "alpha task")
    progress.update_progress(store, p["id"], description="omega task")
    assert search.search(store, "alpha") == []
    assert search.search(store, "omega")[0]["id"] == p["id"]


def test_search_rejects_unknown_types_by_name(store):
    with pytest.raises(InvalidItemError, match="nonsense"):
        search.search(store, "x", types=["nonsense"])


def test_cache_is_bounded_and_closes_the_least_recently_used(tmp_path):
    cache = StoreCache(capacity=2)
    roots = []
    for i in range(3):
        (tmp_path / str(i)).mkdir()
        roots.append(tmp_path / str(i))
    first = cache.get(roots[0], create=True)
    cache.get(roots[1], create=True)
    cache.get(roots[0], create=False)  # touch: roots[1] becomes the oldest
    cache.get(roots[2], create=True)
    assert len(cache) == 2
    assert cache.get(roots[0], create=False) is first
    cache.close()


def test_cache_returns_none_for_reads_of_a_workspace_without_store(tmp_path):
    cache = StoreCache()
    assert cache.get(tmp_path, create=False) is None
    assert not store_path_for(tmp_path).exists()


def test_concurrent_threads_open_one_store_and_all_writes_land(tmp_path):
    cache = StoreCache()
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(25):
                decisions.log_decision(cache.get(tmp_path, create=True), f"t{n}-{i}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert len(decisions.get_decisions(cache.get(tmp_path, create=False), limit=1000)) == 200
    cache.close()


def _schema(path: Path) -> set[tuple[str, str, str]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").fetchall()
        columns = set()
        for _type, name, _tbl in rows:
            if _type == "table":
                for col in conn.execute(f"PRAGMA table_info('{name}')"):
                    columns.add((name, col[1], f"{col[2]}|{col[3]}|{col[5]}"))
        return {tuple(r) for r in rows} | columns
    finally:
        conn.close()


def test_a_fresh_store_has_exactly_the_schema_the_migrations_build(tmp_path):
    (tmp_path / "fresh").mkdir()
    (tmp_path / "migrated" / ".homeport").mkdir(parents=True)
    Store.open(tmp_path / "fresh", create=True).close()
    migrated = Store(tmp_path / "migrated")
    upgrade(migrated.engine)
    migrated.close()
    fresh_schema = _schema(store_path_for(tmp_path / "fresh"))
    assert fresh_schema == _schema(store_path_for(tmp_path / "migrated"))
    assert ("table", "alembic_version", "alembic_version") in fresh_schema


def test_many_fresh_workspaces_opened_at_once_from_threads_all_get_a_complete_schema(tmp_path):
    roots = []
    for i in range(12):
        (tmp_path / f"w{i}").mkdir()
        roots.append(tmp_path / f"w{i}")
    cache = StoreCache(capacity=64)
    errors: list[BaseException] = []

    def first_write(root: Path) -> None:
        try:
            decisions.log_decision(cache.get(root, create=True), f"in {root.name}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=first_write, args=(r,)) for r in roots]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    for root in roots:
        assert [d["summary"] for d in decisions.get_decisions(cache.get(root, create=False))] == [f"in {root.name}"]
    cache.close()


def test_an_old_store_is_migrated_to_head_on_open(tmp_path):
    (tmp_path / ".homeport").mkdir()
    old = Store(tmp_path)
    upgrade(old.engine, "0001")
    with old.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == "0001"
    old.close()
    s = Store.open(tmp_path, create=False)
    with s.read() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == SCHEMA_REVISION
    s.close()


def test_a_damaged_store_file_is_reported_as_a_store_error_with_advice(tmp_path):
    from homeport.errors import StoreError

    (tmp_path / ".homeport").mkdir()
    store_path_for(tmp_path).write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="move the damaged"):
        Store.open(tmp_path, create=True)


def test_results_have_plain_str_keys_so_serializing_them_stays_cheap(store):
    decisions.log_decision(store, "d", tags=["t"])
    progress.log_progress(store, "TODO", "p")
    custom_data.log_custom_data(store, "c", "k", 1)
    rows = [*decisions.get_decisions(store), *progress.get_progress(store), *custom_data.get_custom_data(store)]
    assert rows and all(type(k) is str for row in rows for k in row)


def test_a_tag_holding_the_list_separator_is_refused_by_name(store):
    with pytest.raises(InvalidItemError, match="U\\+001F"):
        decisions.log_decision(store, "d", tags=["a\x1fb"])


def test_search_ranks_the_newest_matches_when_a_word_is_everywhere(store, monkeypatch):
    monkeypatch.setattr(search, "RANK_WINDOW", 3)
    old = decisions.log_decision(store, "common common common common")  # best bm25, but older than the window
    newer = [
        decisions.log_decision(store, f"common item {i} with more words to lower its score")["id"] for i in range(5)
    ]
    hits = search.search(store, "common", limit=10)
    assert {h["id"] for h in hits} == set(newer[-3:])
    assert old["id"] not in {h["id"] for h in hits}
    assert search.search(store, "common", types=["progress"]) == []


def _open_files_under(directory: Path) -> int:
    """Files this process holds open below `directory` (other tests' stores do not count)."""
    fd_dir = Path("/proc/self/fd")
    if not fd_dir.exists():
        pytest.skip("no /proc/self/fd on this system")
    count = 0
    for fd in fd_dir.iterdir():
        try:
            count += os.readlink(fd).startswith(str(directory))
        except OSError:
            continue
    return count


def test_evicted_stores_are_closed_and_no_store_file_stays_open_after_close(tmp_path):
    cache = StoreCache(capacity=2)
    for i in range(12):
        (tmp_path / f"w{i}").mkdir()
        decisions.log_decision(cache.get(tmp_path / f"w{i}", create=True), "x")
    cache.close()
    assert _open_files_under(tmp_path) == 0


def test_a_sqlite_store_of_a_newer_homeport_is_refused_too(tmp_path):
    Store.open(tmp_path, create=True).close()
    with sqlite3.connect(store_path_for(tmp_path)) as raw:
        raw.execute("UPDATE alembic_version SET version_num = '9999'")
    with pytest.raises(StoreTooNewError, match=r"revision 9999, newer than this Homeport knows \(its newest is "):
        Store.open(tmp_path, create=True)
