"""The indexer embeds texts in runs of similar length (little padding) and puts every vector back in place."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

np = pytest.importorskip("numpy", reason="the indexer needs numpy (pip install 'homeport[semantic]')")

from homeport.embedding.indexer import BATCH_CHUNKS, embed_by_length  # noqa: E402


class RecordingEmbedder:
    name, dim = "hash-8", 8

    def __init__(self) -> None:
        self.runs: list[list[str]] = []

    def embed(self, texts: list[str]):
        self.runs.append(list(texts))
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:32], dtype=np.float32) for t in texts]
        return np.nan_to_num(np.array(rows, dtype=np.float32).reshape(len(texts), self.dim))


@given(st.lists(st.text(alphabet="ab ", max_size=400), max_size=80))
def test_every_text_gets_its_own_vector_in_its_place_from_runs_of_similar_length(texts):
    embedder = RecordingEmbedder()
    vectors = embed_by_length(embedder, texts)
    assert vectors.shape == (len(texts), 8)
    for text, vector in zip(texts, vectors, strict=True):
        assert np.array_equal(vector, RecordingEmbedder().embed([text])[0])
    assert sorted(t for run in embedder.runs for t in run) == sorted(texts)
    for run in embedder.runs:
        assert 0 < len(run) <= BATCH_CHUNKS
        assert max(map(len, run)) <= 2 * max(16, min(map(len, run)))


def test_a_title_is_not_run_beside_a_long_body():
    embedder = RecordingEmbedder()
    body, title = "word " * 100, "Use WAL"
    embed_by_length(embedder, [body, title, body + "x", title + "!"])
    assert sorted(map(sorted, embedder.runs)) == [sorted([title, title + "!"]), sorted([body, body + "x"])]
