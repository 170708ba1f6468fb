"""The pgvector path of search by meaning, on a real PostgreSQL 16 with the extension (pgserver's build).

Its results must be those of the blob path on the same vectors: the same top-k, the same filters,
the same floor. The corpus and the queries are random unit vectors, so near-ties (where float32
rounding in numpy and in pgvector could order two items differently) practically never occur.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import text

np = pytest.importorskip("numpy", reason="the vector store needs numpy (pip install 'homeport[semantic]')")

from homeport.store import _pgvector, custom_data, decisions, patterns, progress  # noqa: E402
from homeport.store.postgres import PostgresStores  # noqa: E402
from homeport.store.vectors import (  # noqa: E402
    PendingItem,
    VectorCache,
    VectorFilters,
    pending_count,
    pending_items,
    save_vectors,
    vector_search_path,
)

pytestmark = pytest.mark.postgres

DIM = 16
TAGS = ["red", "green", "blue", "rare"]


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


class SeededEmbedder:
    """A vector per text from a hash-seeded generator: a corpus of random unit vectors, two chunks for long texts."""

    name = "seeded-16"
    dim = DIM

    def embed(self, texts: list[str]) -> np.ndarray:
        seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:4], "big") for t in texts]
        return np.concatenate([unit(np.random.default_rng(seed), 1) for seed in seeds])


def fill(store, n: int = 240) -> None:
    rng = np.random.default_rng(7)
    for i in range(n):
        tags = [TAGS[i % 3]] + (["rare"] if i % 29 == 0 else [])
        kind = i % 3
        if kind == 0:
            decisions.log_decision(
                store, f"decision {i}", rationale=" ".join(f"w{rng.integers(1000)}" for _ in range(150)), tags=tags
            )
        elif kind == 1:
            patterns.log_system_pattern(
                store, f"pattern {i}", f"task {i}", tags=tags
            ) if i % 2 else progress.log_progress(store, "TODO", f"task {i}")
        else:
            custom_data.log_custom_data(store, "glossary" if i % 2 else "notes", f"k{i}", f"value {i}")
    embed_all(store)


def embed_all(store) -> None:
    embedder = SeededEmbedder()
    while items := pending_items(store, embedder.name, limit=100):
        save_vectors(store, embedder.name, [(item, embedder.embed(item.chunks)) for item in items])


@pytest.fixture(scope="module")
def two_paths(postgres_stores, pgvector_stores) -> Iterator[tuple]:
    """The same items and vectors in a store on the blob path (PostgreSQL 15) and one on pgvector."""
    key = f"/parity/{uuid.uuid4().hex}"
    blob, vec = postgres_stores.get(key, create=True), pgvector_stores.get(key, create=True)
    for store in (blob, vec):
        fill(store)
    yield blob, vec
    postgres_stores.drop(key)
    pgvector_stores.drop(key)


class Hit(tuple):
    """(type, id, score), equal to another when the item is the same and the scores differ by float32 rounding."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, tuple) and self[:2] == other[:2] and abs(self[2] - other[2]) < 1e-5

    __hash__ = tuple.__hash__


def ranked(store, query, filters=None, limit=10) -> list[Hit]:
    filters = filters or VectorFilters()
    hits = VectorCache().nearest(store, SeededEmbedder.name, query, filters=filters, limit=limit)
    return [Hit((h["type"], h["id"], h["score"])) for h in hits]


def test_each_store_says_which_path_searches_by_meaning(two_paths):
    blob, vec = two_paths
    assert vector_search_path(blob) == "float32 blobs"
    assert vector_search_path(vec).startswith("pgvector 0.")
    version = tuple(int(p) for p in vector_search_path(vec).split()[1].split("."))
    assert version >= (0, 5, 0), "HNSW needs pgvector 0.5.0"
    with vec.read() as conn:
        missing = conn.execute(text("SELECT count(*) FROM item_vectors WHERE embedding IS NULL")).scalar()
        total = conn.execute(text("SELECT count(*) FROM item_vectors")).scalar()
    assert missing == 0 and total > 240  # the long decisions have two chunks


FILTERS = st.builds(
    VectorFilters,
    types=st.one_of(
        st.none(),
        st.lists(st.sampled_from(["decision", "progress", "system_pattern", "custom_data"]), min_size=1, unique=True),
    ),
    tags_any=st.one_of(st.none(), st.lists(st.sampled_from(TAGS), min_size=1, max_size=2, unique=True)),
    category=st.one_of(st.none(), st.sampled_from(["glossary", "notes"])),
)


@given(seed=st.integers(0, 2**32 - 1), filters=FILTERS, limit=st.integers(1, 60))
def test_pgvector_finds_the_same_top_k_as_the_blob_path_for_any_query_and_filters(two_paths, seed, filters, limit):
    blob, vec = two_paths
    query = unit(np.random.default_rng(seed), 1)[0]
    assert ranked(vec, query, filters, limit) == ranked(blob, query, filters, limit)


@pytest.fixture
def index_when_possible(monkeypatch) -> list[str]:
    """The plans of the nearest-chunk queries, run with sequential scans off.

    A few hundred rows: the planner would rightly scan them and never show what the index does. Forbidden
    to, it uses the HNSW index wherever the query can (the partial index's expression and predicate match).
    """
    plans: list[str] = []
    original = _pgvector.Connection.execute

    def execute(conn, statement, *args, **kwargs):
        sql = str(statement)
        if sql.startswith("SELECT v.item_type"):
            original(conn, text("SET LOCAL enable_seqscan = off"))
            plans.append("\n".join(r[0] for r in original(conn, text("EXPLAIN " + sql), *args, **kwargs)))
        return original(conn, statement, *args, **kwargs)

    monkeypatch.setattr(_pgvector.Connection, "execute", execute)
    return plans


def test_an_hnsw_index_is_built_past_the_threshold_and_results_stay_exact(two_paths, monkeypatch, index_when_possible):
    blob, vec = two_paths
    monkeypatch.setattr(_pgvector, "HNSW_MIN_ROWS", 100)
    path = _pgvector.pgvector_for(vec)
    assert path is not None and not path.indexed
    path.short.clear()  # counted against the real threshold while filling
    decisions.log_decision(vec, "one more")  # the index is built by a save
    decisions.log_decision(blob, "one more")
    embed_all(vec)
    embed_all(blob)
    with vec.read() as conn:
        indexes = (
            conn.execute(
                text("SELECT indexdef FROM pg_indexes WHERE schemaname = :s AND indexdef LIKE '%hnsw%'"),
                {"s": vec.schema},
            )
            .scalars()
            .all()
        )
        assert len(indexes) == 1 and "vector_ip_ops" in indexes[0] and "seeded-16" in indexes[0]
    rng = np.random.default_rng(11)
    rare = VectorFilters(tags_any=["rare"])
    rare_hits = 0
    for query in unit(rng, 40):
        # Unfiltered: through the index, ef_search as large as the window (256 of the 330 chunks here).
        assert ranked(vec, query, limit=20) == ranked(blob, query, limit=20)
        # A filter that passes 3 % of the items: an HNSW scan filtered afterwards would find too few.
        assert ranked(vec, query, rare, 20) == ranked(blob, query, rare, 20)
        rare_hits += len(ranked(blob, query, rare, 20))
    assert rare_hits >= 10  # the filtered queries found something to compare
    assert "item_vectors_hnsw_" in index_when_possible[0], index_when_possible[0]
    assert "item_vectors_hnsw_" not in index_when_possible[1], index_when_possible[1]


@pytest.fixture
def own_database(pgvector_postgres_url) -> Iterator[str]:
    """A fresh database on the pgvector server, for tests that create and drop the extension."""
    import psycopg

    name = f"homeport_pgv_{uuid.uuid4().hex[:10]}"
    admin_url = pgvector_postgres_url
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield admin_url.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_store_moves_to_pgvector_when_the_extension_comes_and_back_to_blobs_when_it_goes(own_database, monkeypatch):
    stores = PostgresStores(own_database)
    try:
        store = stores.get("/moving", create=True)
        monkeypatch.setattr(_pgvector, "_extension", lambda store: None)  # as on a server without pgvector
        fill(store, 60)
        assert vector_search_path(store) == "float32 blobs"
        query = unit(np.random.default_rng(5), 1)[0]
        before = ranked(store, query, limit=20)
        assert before
        monkeypatch.undo()
        _pgvector.forget(store)
        # Installed later: the next use creates the extension and fills the column from the blobs; nothing
        # is embedded again and the results are the same.
        assert vector_search_path(store).startswith("pgvector")
        assert pending_count(store, SeededEmbedder.name) == 0
        assert ranked(store, query, limit=20) == before
        # Removed: its columns go with it, and the blobs are still there.
        with stores.engine.connect() as conn:
            conn.exec_driver_sql("DROP EXTENSION vector CASCADE")
            conn.commit()
        _pgvector.forget(store)
        monkeypatch.setattr(_pgvector, "_extension", lambda store: None)
        assert vector_search_path(store) == "float32 blobs"
        assert pending_count(store, SeededEmbedder.name) == 0
        assert ranked(store, query, limit=20) == before
    finally:
        stores.close()


def test_a_row_without_its_embedding_makes_its_item_pending_on_the_pgvector_path(pgvector_stores):
    store = pgvector_stores.get(f"/straggler/{uuid.uuid4().hex}", create=True)
    decisions.log_decision(store, "written by an old process")
    embed_all(store)
    assert pending_count(store, SeededEmbedder.name) == 0
    with store.write() as conn:  # what a process on the blob path writes: the blob only
        conn.execute(text("UPDATE item_vectors SET embedding = NULL"))
    assert pending_count(store, SeededEmbedder.name) == 1
    [item] = pending_items(store, SeededEmbedder.name, limit=10)
    assert isinstance(item, PendingItem) and item.text == "written by an old process"
    embed_all(store)
    assert pending_count(store, SeededEmbedder.name) == 0
    assert [
        h["title"]
        for h in VectorCache().nearest(
            store, SeededEmbedder.name, SeededEmbedder().embed(item.chunks)[0], filters=VectorFilters(), limit=5
        )
    ][:1] == ["written by an old process"]


@pytest.mark.anyio
async def test_the_search_tool_says_it_searched_with_pgvector(runtime_factory, projects, pgvector_postgres_url):
    from mcp import Client

    from homeport.embedding.model import unavailable_reason
    from homeport.server import build_server

    if (reason := unavailable_reason(None)) is not None:
        pytest.skip(reason)
    runtime = runtime_factory(store_url=pgvector_postgres_url)
    ws = str(projects["alpha"])
    async with Client(build_server(runtime)) as c:
        r = await c.call_tool(
            "log_decision", {"summary": "Blue-green rollout behind the load balancer", "workspace": ws}
        )
        assert not r.is_error, r.content
        await c.call_tool("log_decision", {"summary": "Avatars are served from the CDN", "workspace": ws})
        assert runtime.semantic.drain(timeout=120)
        query = "where are user profile pictures hosted"  # no word in common with the item it finds
        r = await c.call_tool("search", {"query": query, "mode": "semantic", "workspace": ws})
        assert not r.is_error, r.content
        found = r.structured_content
        assert found["vector_search"].startswith("pgvector ") and found["not_yet_embedded"] == 0
        assert [h["title"] for h in found["results"]] == ["Avatars are served from the CDN"]


def test_a_workspace_dropped_and_created_again_gets_its_embedding_column_again(pgvector_stores):
    key = f"/again/{uuid.uuid4().hex}"
    for _ in range(2):  # `homeport copy` onto an existing workspace drops it and creates it again
        store = pgvector_stores.get(key, create=True)
        decisions.log_decision(store, "kept")
        embed_all(store)
        assert vector_search_path(store).startswith("pgvector") and pending_count(store, SeededEmbedder.name) == 0
        pgvector_stores.drop(key)


def test_the_index_comes_with_the_save_that_crosses_the_threshold(pgvector_stores, monkeypatch):
    monkeypatch.setattr(_pgvector, "HNSW_MIN_ROWS", 5)
    store = pgvector_stores.get(f"/threshold/{uuid.uuid4().hex}", create=True)

    def hnsw_indexes() -> int:
        with store.read() as conn:
            return conn.execute(
                text("SELECT count(*) FROM pg_indexes WHERE schemaname = :s AND indexdef LIKE '%hnsw%'"),
                {"s": store.schema},
            ).scalar()

    for n in range(3):
        decisions.log_decision(store, f"short {n}")
    embed_all(store)
    assert hnsw_indexes() == 0
    for n in range(3):
        decisions.log_decision(store, f"more {n}")
    embed_all(store)
    assert hnsw_indexes() == 1
