"""The copy of the vectors in memory: no count while nothing changed, every change seen on the next
search (from this connection, another one, another process), and the two-step ranking of large stores
finding what the exact one finds.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

np = pytest.importorskip("numpy", reason="the vector store needs numpy (pip install 'homeport[semantic]')")

from homeport.store import Store, decisions  # noqa: E402
from homeport.store import vectors as vector_store  # noqa: E402
from homeport.store.vectors import VectorCache, VectorFilters, pending_items, save_vectors  # noqa: E402


class HashEmbedder:
    name = "hash-64"
    dim = 64

    def embed(self, texts: list[str]):
        rows = []
        for text in texts:
            raw = np.frombuffer(hashlib.sha512(text.encode()).digest(), dtype=np.int8).astype(np.float32)
            rows.append(raw / np.linalg.norm(raw))
        return np.array(rows, dtype=np.float32).reshape(len(texts), self.dim)


def embed_pending(store: Store, embedder: HashEmbedder) -> None:
    items = pending_items(store, embedder.name, limit=1000)
    save_vectors(store, embedder.name, [(i, embedder.embed(i.chunks)) for i in items])


def open_store(root: Path) -> Store:
    root.mkdir(exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)
    store = Store.open(root, create=True)
    assert store is not None
    return store


def statements_of(store: Store) -> list[str]:
    """Every statement the store's connections run from now on (sqlite3 trace callbacks)."""
    seen: list[str] = []
    with store.read() as conn:
        conn.connection.driver_connection.set_trace_callback(seen.append)
    return seen


def test_a_search_with_nothing_changed_counts_nothing_and_a_write_is_seen_at_once(tmp_path):
    embedder, cache = HashEmbedder(), VectorCache()
    store = open_store(tmp_path / "p")
    first = decisions.log_decision(store, "use WAL", rationale="readers never block")["id"]
    embed_pending(store, embedder)
    query = embedder.embed(["use WAL"])[0]
    assert cache.nearest(store, embedder.name, query, filters=VectorFilters(), limit=5)[0]["id"] == first
    assert cache.pending(store, embedder.name) == 0
    seen = statements_of(store)
    assert cache.nearest(store, embedder.name, query, filters=VectorFilters(), limit=5)[0]["id"] == first
    assert cache.pending(store, embedder.name) == 0
    assert seen and not [s for s in seen if "count(" in s.lower()], seen
    # A write through the store (the same connections): the next search and count see it.
    decisions.update_decision(store, first, summary="use a rollback journal")
    assert cache.pending(store, embedder.name) == 1
    assert cache.nearest(store, embedder.name, query, filters=VectorFilters(), limit=5) == []
    embed_pending(store, embedder)
    changed = embedder.embed(["use a rollback journal"])[0]
    assert cache.nearest(store, embedder.name, changed, filters=VectorFilters(), limit=5)[0]["id"] == first
    store.close()


def test_a_delete_by_another_process_is_seen_by_the_next_search(tmp_path):
    embedder, cache = HashEmbedder(), VectorCache()
    store = open_store(tmp_path / "p")
    gone = decisions.log_decision(store, "cache avatars on the CDN")["id"]
    embed_pending(store, embedder)
    query = embedder.embed(["cache avatars on the CDN"])[0]
    assert [h["id"] for h in cache.nearest(store, embedder.name, query, filters=VectorFilters(), limit=5)] == [gone]
    other = sqlite3.connect(store.path)  # another process's connection: only the file is shared
    with other:
        other.execute("DELETE FROM item_vectors")
    other.close()
    assert cache.nearest(store, embedder.name, query, filters=VectorFilters(), limit=5) == []
    assert cache.pending(store, embedder.name) == 1
    store.close()


def test_the_two_step_ranking_of_a_large_store_finds_what_the_exact_one_finds(tmp_path, monkeypatch):
    embedder = HashEmbedder()
    store = open_store(tmp_path / "p")
    ids = [
        decisions.log_decision(store, f"decision number {n}", rationale=f"because {n * 7}")["id"] for n in range(120)
    ]
    embed_pending(store, embedder)
    queries = [embedder.embed([f"decision number {n}"])[0] for n in (3, 50, 119)]
    exact = [VectorCache().nearest(store, embedder.name, q, filters=VectorFilters(), limit=5) for q in queries]
    # Past _EXACT_CHUNKS the rows are float16 and the sign bits choose the _RESCORE rows scored exactly.
    monkeypatch.setattr(vector_store, "_EXACT_CHUNKS", 10)
    monkeypatch.setattr(vector_store, "_RESCORE", 40)
    cache = VectorCache()
    two_step = [cache.nearest(store, embedder.name, q, filters=VectorFilters(), limit=5) for q in queries]
    (matrix,) = cache._matrices.values()
    assert matrix.vectors.dtype == np.float16 and len(matrix.ids) > 40
    for n, (want, got) in zip((3, 50, 119), zip(exact, two_step, strict=True), strict=True):
        assert got[0]["id"] == want[0]["id"] == ids[n]
        assert got[0]["score"] == pytest.approx(want[0]["score"], abs=2e-3)
    store.close()


class NearOneDirection:
    """Every text near the all-ones direction (cosine about 0.95), except a tagged one at about 0.55."""

    name = "near-ones"
    dim = 64

    def embed(self, texts: list[str]):
        rows = []
        for text in texts:
            if "tagged" in text:
                raw = np.array([1.0] * 32 + [-0.2] * 32, dtype=np.float32)
            else:
                seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
                raw = 1.0 + 0.3 * np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            rows.append(raw / np.linalg.norm(raw))
        return np.array(rows, dtype=np.float32).reshape(len(texts), self.dim)


def test_a_filter_the_rescored_rows_cannot_satisfy_falls_back_to_scoring_every_row(tmp_path, monkeypatch):
    embedder = NearOneDirection()
    store = open_store(tmp_path / "p")
    for n in range(60):
        decisions.log_decision(store, f"decision number {n}")
    tagged = decisions.log_decision(store, "the tagged one", tags=["rare"])["id"]
    embed_pending(store, embedder)
    monkeypatch.setattr(vector_store, "_EXACT_CHUNKS", 10)
    monkeypatch.setattr(vector_store, "_RESCORE", 20)
    cache = VectorCache()
    query = np.ones(64, dtype=np.float32) / 8
    # The 20 rows nearest by their sign bits are all untagged decisions, all above the floor.
    assert len(cache.nearest(store, embedder.name, query, filters=VectorFilters(), limit=5)) == 5
    hits = cache.nearest(store, embedder.name, query, filters=VectorFilters(tags_any=["rare"]), limit=5)
    assert [h["id"] for h in hits] == [tagged] and 0.5 < hits[0]["score"] < 0.6
    store.close()


def test_sign_bits_pack_every_dimension_and_count_the_differences():
    block = np.array([[1.0, -1.0] * 40, [-1.0, 1.0] * 40], dtype=np.float32)  # 80 dimensions: 2 words
    signs = vector_store._signs(block)
    assert signs.shape == (2, 2) and signs.dtype == np.uint64
    assert vector_store._hamming(signs, signs[0]).tolist() == [0, 80]
