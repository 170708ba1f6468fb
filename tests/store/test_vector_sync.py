"""Vectors stay in step with the items: after any writes, updates, deletes and late saves of texts read
before them, draining the indexer leaves exactly one set of vectors per live item, of its current text.

The embedder here is a deterministic hash (any model fits behind `Embedder`), so these properties run
without the semantic extra; what they check is the store and the indexer, not the model.
"""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sqlalchemy import text as sql

np = pytest.importorskip("numpy", reason="the vector store needs numpy (pip install 'homeport[semantic]')")

from homeport.embedding.indexer import VectorIndexer  # noqa: E402
from homeport.errors import ItemNotFoundError  # noqa: E402
from homeport.store import contexts, custom_data, decisions, progress  # noqa: E402
from homeport.store.chunking import item_chunks  # noqa: E402
from homeport.store.vectors import PendingItem, pending_count, pending_items, save_vectors  # noqa: E402


class HashEmbedder:
    """The same text always gives the same unit vector; different texts practically never the same one."""

    name = "hash-8"
    dim = 8

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: list[str]):
        self.calls += 1
        rows = []
        for text in texts:
            raw = np.frombuffer(hashlib.sha256(text.encode()).digest()[:16], dtype=np.uint16).astype(np.float32)
            rows.append(raw / np.linalg.norm(raw))
        return np.array(rows, dtype=np.float32).reshape(len(texts), self.dim)


WORDS = st.sampled_from(["wal", "index", "cache", "deploy", "token", "queue", "schema", "vector", "rank"])
TEXT = st.lists(WORDS, min_size=1, max_size=200).map(" ".join)  # up to two chunks
KEYS = st.sampled_from(["a", "b", "c"])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("decision"), TEXT),
        st.tuples(st.just("delete_decision"), st.integers(0, 5)),
        st.tuples(st.just("progress"), TEXT),
        st.tuples(st.just("update_progress"), st.integers(0, 5), TEXT),
        st.tuples(st.just("delete_progress"), st.integers(0, 5)),
        st.tuples(st.just("data"), KEYS, TEXT),
        st.tuples(st.just("delete_data"), KEYS),
        st.tuples(st.just("context"), TEXT),
        # Embedding is interleaved with the writes, and texts read before a write are saved after it
        # (what the background thread does when a write lands while it embeds): listed twice, so that
        # most examples have them.
        *[st.tuples(st.just("embed_some"), st.integers(1, 3))] * 2,
        *[st.tuples(st.just("read_for_later"), st.integers(1, 5))] * 2,
        *[st.tuples(st.just("save_what_was_read"), st.just(0))] * 2,
    ),
    max_size=20,
)


def embedded(embedder: HashEmbedder, items: list[PendingItem]):
    return [(item, embedder.embed(item.chunks)) for item in items]


def run(store, embedder: HashEmbedder, ops) -> None:
    decision_ids: list[int] = []
    progress_ids: list[int] = []
    stash: list = []
    for op, *args in ops:
        if op == "decision":
            decision_ids.append(decisions.log_decision(store, args[0][:200], rationale=args[0])["id"])
        elif op == "delete_decision" and decision_ids:
            decisions.delete_decision(store, decision_ids.pop(args[0] % len(decision_ids)))
        elif op == "progress":
            progress_ids.append(progress.log_progress(store, "TODO", args[0])["id"])
        elif op == "update_progress" and progress_ids:
            progress.update_progress(store, progress_ids[args[0] % len(progress_ids)], description=args[1])
        elif op == "delete_progress" and progress_ids:
            progress.delete_progress(store, progress_ids.pop(args[0] % len(progress_ids)))
        elif op == "data":
            custom_data.log_custom_data(store, "notes", args[0], args[1])
        elif op == "delete_data":
            with contextlib.suppress(ItemNotFoundError):
                custom_data.delete_custom_data(store, "notes", args[0])
        elif op == "context":
            contexts.update_context(store, "active", content={"notes": args[0]})
        elif op == "embed_some":
            save_vectors(store, embedder.name, embedded(embedder, pending_items(store, embedder.name, limit=args[0])))
        elif op == "read_for_later":
            stash = embedded(embedder, pending_items(store, embedder.name, limit=args[0]))
        elif op == "save_what_was_read":
            save_vectors(store, embedder.name, stash)  # texts that may have changed or gone since


def assert_vectors_are_the_current_versions(store, embedder: HashEmbedder) -> None:
    with store.read() as conn:
        items = {
            (t, int(i)): item_chunks(title, body or "", tags or "")
            for t, i, title, body, tags in conn.execute(
                sql("SELECT item_type, item_id, title, body, tags FROM search_index")
            )
        }
        rows = conn.execute(sql("SELECT item_type, item_id, chunk, model, vector FROM item_vectors")).all()
    stored: dict[tuple[str, int], dict[int, bytes]] = {}
    for t, i, chunk, model, vector in rows:
        assert model == embedder.name
        assert chunk not in stored.setdefault((t, int(i)), {}), "two vectors for one chunk"
        stored[(t, int(i))][chunk] = bytes(vector)  # PostgreSQL's bytea may come back as a memoryview
    assert set(stored) == set(items), "vectors of deleted items, or live items without vectors"
    for key, chunks in items.items():
        assert sorted(stored[key]) == list(range(len(chunks))), key
        expected = embedder.embed(chunks)
        got = np.array([np.frombuffer(stored[key][n], dtype="<f4") for n in range(len(chunks))])
        assert np.array_equal(got, expected), f"{key} has vectors of an old text"
    assert pending_count(store, embedder.name) == 0


# The two races, always tried: a text saved after its item changed, and after its item was deleted.
RACES = [
    [("context", "old plan"), ("read_for_later", 5), ("context", "new plan"), ("save_what_was_read", 0)],
    [("decision", "gone soon"), ("embed_some", 3), ("delete_decision", 0)],
    [("data", "a", "x"), ("read_for_later", 5), ("delete_data", "a"), ("save_what_was_read", 0)],
]
# PostgreSQL with a schema per workspace builds a schema for every example (about a second of the server's
# time each), and its vector SQL is the blob path `postgres-shared` runs at full depth: a quarter of the
# profile's examples there (25 in CI, 250 under HOMEPORT_HYPOTHESIS=deep), every race always.
SCHEMA_PER_EXAMPLE = {"postgres"}


def test_after_any_writes_and_draining_the_vectors_are_exactly_the_current_versions_of_live_items(
    vector_store, request
):
    examples = settings().max_examples
    if request.node.callspec.params["vector_store"] in SCHEMA_PER_EXAMPLE:
        examples = max(examples // 4, 10)

    @settings(max_examples=examples)
    @given(ops=OPS)
    def vectors_follow_the_items(ops) -> None:
        embedder = HashEmbedder()
        with tempfile.TemporaryDirectory() as tmp:
            store = vector_store(Path(tmp))
            indexer = VectorIndexer(lambda: embedder)
            try:
                run(store, embedder, ops)
                indexer.notice(store)
                assert indexer.drain(timeout=60)
                assert_vectors_are_the_current_versions(store, embedder)
            finally:
                indexer.close()
                store.close()

    for race in RACES:
        vectors_follow_the_items = example(ops=race)(vectors_follow_the_items)
    vectors_follow_the_items()


def test_a_save_of_a_text_read_before_an_update_is_dropped_and_the_new_text_is_pending(vector_store, tmp_path):
    embedder = HashEmbedder()
    store = vector_store(tmp_path)
    p = progress.log_progress(store, "TODO", "write the old plan")
    read = embedded(embedder, pending_items(store, embedder.name, limit=10))
    progress.update_progress(store, p["id"], description="write the new plan")
    assert save_vectors(store, embedder.name, read) == 0
    assert [i.text for i in pending_items(store, embedder.name, limit=10)] == [
        "write the new plan\nwrite the new plan\nTODO"
    ]
    store.close()


def test_an_update_deletes_the_vectors_in_the_same_write_and_the_item_is_pending_again(vector_store, tmp_path):
    embedder = HashEmbedder()
    store = vector_store(tmp_path)
    custom_data.log_custom_data(store, "notes", "k", "first")
    save_vectors(store, embedder.name, embedded(embedder, pending_items(store, embedder.name, limit=10)))
    assert pending_count(store, embedder.name) == 0
    custom_data.log_custom_data(store, "notes", "k", "second")
    assert pending_count(store, embedder.name) == 1
    with store.read() as conn:
        assert conn.execute(sql("SELECT count(*) FROM item_vectors")).scalar() == 0
    store.close()


def test_a_long_item_is_embedded_in_chunks_not_truncated(vector_store, tmp_path):
    embedder = HashEmbedder()
    store = vector_store(tmp_path)
    words = [f"w{n}" for n in range(1000)]
    decisions.log_decision(store, "long", rationale=" ".join(words))
    indexer = VectorIndexer(lambda: embedder)
    indexer.notice(store)
    assert indexer.drain(timeout=30)
    indexer.close()
    with store.read() as conn:
        chunks = conn.execute(sql("SELECT count(*) FROM item_vectors")).scalar()
    # Every chunk of the text, and the title alone.
    assert chunks == len(item_chunks("long", " ".join(words))) > 8
    store.close()


def test_the_indexer_stops_for_good_when_the_model_cannot_load_and_says_why(vector_store, tmp_path):
    from homeport.errors import SemanticSearchUnavailableError

    def broken():
        raise SemanticSearchUnavailableError("no model here")

    store = vector_store(tmp_path)
    decisions.log_decision(store, "waits")
    indexer = VectorIndexer(broken)
    indexer.notice(store)
    assert indexer.drain(timeout=30)
    assert indexer.failure == "no model here"
    assert pending_count(store, "hash-8") == 1  # nothing lost: still pending for a process that has the model
    indexer.close()
    store.close()


def test_a_store_from_before_vectors_upgrades_with_every_item_pending(tmp_path):
    from homeport.store import Store, store_path_for
    from homeport.store.migrate import upgrade

    store_path_for(tmp_path).parent.mkdir()
    old = Store(tmp_path)
    upgrade(old.engine, "0002")
    with old.engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO decisions (id, summary, created_at, updated_at) VALUES (1, 'kept', '2026-01-01', '2026-01-01')"
        )
        conn.exec_driver_sql(
            "INSERT INTO search_index (rowid, item_type, item_id, title, body, tags) "
            "VALUES (9, 'decision', 1, 'kept', '', '')"
        )
    old.close()
    store = Store.open(tmp_path, create=False)
    assert store is not None
    assert [(i.item_type, i.item_id, i.text) for i in pending_items(store, "hash-8", limit=10)] == [
        ("decision", 1, "kept")
    ]
    assert pending_count(store, "hash-8") == 1
    store.close()


def test_nearest_finds_the_item_of_a_vector_and_nothing_below_the_similarity_floor(vector_store, tmp_path):
    from homeport.store.vectors import MIN_SIMILARITY, VectorCache, VectorFilters

    embedder = HashEmbedder()
    store = vector_store(tmp_path)
    ids = [decisions.log_decision(store, f"decision {n}", tags=[f"t{n}"])["id"] for n in range(3)]
    items = pending_items(store, embedder.name, limit=10)
    save_vectors(store, embedder.name, embedded(embedder, items))
    cache = VectorCache()
    target = embedder.embed(next(i.chunks for i in items if i.item_id == ids[1]))[0]
    hits = cache.nearest(store, embedder.name, target, filters=VectorFilters(), limit=10)
    assert hits[0]["id"] == ids[1] and hits[0]["score"] == pytest.approx(1.0, abs=1e-5)
    assert all(h["score"] >= MIN_SIMILARITY for h in hits)
    assert cache.nearest(store, embedder.name, -target, filters=VectorFilters(), limit=10) == []
    # The filters of word search apply (each a clause of the SQL that fetches the hits).
    for filters, found in [
        (VectorFilters(types=["progress"]), []),
        (VectorFilters(types=["decision", "progress"], tags_any=["T1"]), [ids[1]]),
        (VectorFilters(tags_any=["t0", "t1"], since="2000-01-01"), [ids[1], ids[0]]),
        (VectorFilters(tags_any=["t0"]), [ids[0]]),
        (VectorFilters(since="2999-01-01"), []),
        (VectorFilters(category="nope"), []),
    ]:
        assert [h["id"] for h in cache.nearest(store, embedder.name, target, filters=filters, limit=10)] == found
    # A delete reaches the copy in memory on the next search.
    decisions.delete_decision(store, ids[1])
    assert ids[1] not in [
        h["id"] for h in cache.nearest(store, embedder.name, target, filters=VectorFilters(), limit=10)
    ]
    store.close()
