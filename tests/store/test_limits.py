"""Size caps, cycle-safe progress walks, compact context history and concurrent context writers."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
from sqlalchemy import text

from homeport.errors import InvalidItemError, ValueTooLargeError
from homeport.store import Store, batch, contexts, custom_data, decisions, links, patterns, progress
from homeport.store.fields import MAX_JSON_BYTES, MAX_TEXT_CHARS, MAX_TITLE_CHARS


@pytest.fixture
def store(tmp_path, copy_store) -> Store:
    s = copy_store(tmp_path)
    yield s
    s.close()


OVER_TEXT = "x" * (MAX_TEXT_CHARS + 1)
OVER_JSON = {"blob": "x" * MAX_JSON_BYTES}


@pytest.mark.parametrize(
    ("write", "limit"),
    [
        (lambda s: decisions.log_decision(s, "x" * (MAX_TITLE_CHARS + 1)), f"{MAX_TITLE_CHARS:,}"),
        (lambda s: decisions.log_decision(s, "ok", rationale=OVER_TEXT), f"{MAX_TEXT_CHARS:,}"),
        (lambda s: decisions.log_decision(s, "ok", implementation_details=OVER_TEXT), f"{MAX_TEXT_CHARS:,}"),
        (lambda s: progress.log_progress(s, "TODO", OVER_TEXT), f"{MAX_TEXT_CHARS:,}"),
        (lambda s: progress.log_progress(s, "S" * 65, "ok"), "64"),
        (lambda s: patterns.log_system_pattern(s, "n", OVER_TEXT), f"{MAX_TEXT_CHARS:,}"),
        (lambda s: patterns.log_system_pattern(s, "n" * 301, "ok"), "300"),
        (lambda s: custom_data.log_custom_data(s, "c", "k", OVER_JSON), f"{MAX_JSON_BYTES:,}"),
        (lambda s: custom_data.log_custom_data(s, "c" * 201, "k", 1), "200"),
        (lambda s: contexts.update_context(s, "active", content=OVER_JSON), f"{MAX_JSON_BYTES:,}"),
        (
            lambda s: batch.batch_log_items(
                s, "decision", [{"summary": "ok"}, {"summary": "ok", "rationale": OVER_TEXT}]
            ),
            f"item 1: decision rationale is {MAX_TEXT_CHARS + 1:,} characters",
        ),
    ],
)
def test_an_oversized_value_is_refused_naming_the_limit_and_nothing_is_written(store, write, limit):
    with pytest.raises(ValueTooLargeError if "item 1" not in limit else InvalidItemError, match=limit) as info:
        write(store)
    assert info.value.code in ("value_too_large", "invalid_item")
    assert decisions.get_decisions(store) == [] and progress.get_progress(store) == []
    assert contexts.get_context(store, "active")["version"] == 0


def test_a_link_description_over_the_cap_is_refused(store):
    a, b = decisions.log_decision(store, "a"), decisions.log_decision(store, "b")
    with pytest.raises(ValueTooLargeError):
        links.link_items(store, "decision", a["id"], "decision", b["id"], "relates_to", description=OVER_TEXT)


# --- progress parents ---------------------------------------------------------------------------------------------


def damaged_loop(store: Store) -> list[int]:
    """Three entries whose parents loop (1 -> 2 -> 3 -> 1), as a hand-edited or older store may hold."""
    ids = [progress.log_progress(store, "TODO", f"t{i}")["id"] for i in range(3)]
    with store.write() as conn:
        for child, parent in zip(ids, ids[1:] + ids[:1], strict=True):
            conn.execute(text("UPDATE progress SET parent_id = :p WHERE id = :c"), {"p": parent, "c": child})
    return ids


@pytest.mark.timeout(10)
def test_every_walk_over_parents_ends_on_a_damaged_store_with_a_loop(store):
    ids = damaged_loop(store)
    outside = progress.log_progress(store, "TODO", "outside")
    tree = progress.get_progress_tree(store)
    shown: list[int] = []

    def walk(nodes):
        for n in nodes:
            shown.append(n["id"])
            walk(n["children"])

    walk(tree)
    assert sorted(shown) == sorted([*ids, outside["id"]])  # every entry once, none lost to the loop
    assert progress.get_progress_tree(store, root_id=ids[0])  # a root inside the loop ends too
    with pytest.raises(InvalidItemError, match="own ancestor"):
        progress.update_progress(store, outside["id"], parent_id=outside["id"])
    progress.update_progress(store, outside["id"], parent_id=ids[0])  # the walk above ids[0] ends
    removed = progress.delete_progress(store, ids[0], cascade=True)
    assert sorted(d["id"] for d in removed["deleted"]) == sorted([*ids, outside["id"]])
    assert progress.get_progress(store) == []


def test_a_parent_that_would_close_a_loop_is_refused(store):
    top = progress.log_progress(store, "TODO", "top")
    child = progress.log_progress(store, "TODO", "child", parent_id=top["id"])
    with pytest.raises(InvalidItemError, match="own ancestor"):
        progress.update_progress(store, top["id"], parent_id=child["id"])
    with store.read() as conn:
        assert progress.find_cycle(conn) is None


# --- contexts -----------------------------------------------------------------------------------------------------


def test_rewriting_the_same_context_adds_no_version(store):
    first = contexts.update_context(store, "active", content={"focus": "search", "n": 1})
    for _ in range(5):
        again = contexts.update_context(store, "active", content={"n": 1, "focus": "search"})
        assert again["version"] == first["version"] and again["unchanged"]
    assert contexts.update_context(store, "active", patch={"n": 1})["unchanged"]
    assert len(contexts.get_history(store, "active", limit=100)) == 1
    # 1.0 and true are other JSON values than 1: they are changes, not rewrites.
    assert contexts.update_context(store, "active", patch={"n": 1.0})["version"] == 2
    assert contexts.update_context(store, "active", patch={"n": True})["version"] == 3


def test_an_empty_replacement_is_refused_unless_explicit(store):
    contexts.update_context(store, "product", content={"goal": "memory"})
    with pytest.raises(InvalidItemError, match="allow_empty") as info:
        contexts.update_context(store, "product", content={})
    assert info.value.code == "invalid_item"
    assert contexts.get_context(store, "product")["content"] == {"goal": "memory"}
    assert contexts.update_context(store, "product", content={}, allow_empty=True)["content"] == {}


def _open_in_worker(root: str, url: str | None) -> Store:
    """The store of `root` opened again in another process: its SQLite file, or its schema in the database at `url`."""
    if url is None:
        store = Store.open(Path(root), create=False)
    else:
        from homeport.store.postgres import PostgresStores

        store = PostgresStores(url).get(root, create=False)
    assert store is not None
    return store


def _patch_many(root: str, url: str | None, writer: int, count: int, start: multiprocessing.synchronize.Event) -> None:
    store = _open_in_worker(root, url)
    start.wait(30)
    for i in range(count):
        contexts.update_context(store, "active", patch={f"w{writer}-{i}": i})
    store.close()


@pytest.mark.timeout(120)
def test_patches_from_two_processes_at_once_are_all_kept(store):
    contexts.update_context(store, "active", content={"base": True})
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    count = 40
    workers = [
        ctx.Process(target=_patch_many, args=(str(store.root), getattr(store, "url", None), w, count, start))
        for w in range(2)
    ]
    for w in workers:
        w.start()
    start.set()
    for w in workers:
        w.join(100)
        assert w.exitcode == 0
    document = contexts.get_context(store, "active")
    assert len(document["content"]) == 1 + 2 * count  # no read-modify-write lost another writer's key
    assert document["version"] == 1 + 2 * count
    versions = [v["version"] for v in contexts.get_history(store, "active", limit=1000)]
    assert sorted(versions) == list(range(1, 2 * count + 2))
