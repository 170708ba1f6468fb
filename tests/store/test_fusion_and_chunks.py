"""Reciprocal rank fusion and chunking: pure functions, checked by example and by property."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from homeport.store.chunking import CHUNK_WORDS, chunk_text, item_chunks, item_text
from homeport.store.fusion import RRF_K, fuse


def hit(item_type: str, item_id: int, snippet: str = "") -> dict:
    return {"type": item_type, "id": item_id, "title": f"{item_type} {item_id}", "snippet": snippet, "score": 1.0}


def test_an_item_found_by_both_rankings_beats_items_found_by_one():
    words = [hit("decision", 1), hit("decision", 2)]
    meaning = [hit("progress", 9), hit("decision", 2)]
    fused = fuse({"words": words, "semantic": meaning}, limit=10)
    assert [(h["type"], h["id"]) for h in fused] == [("decision", 2), ("decision", 1), ("progress", 9)]
    assert fused[0]["found_by"] == ["words", "semantic"]
    assert fused[0]["score"] == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 2), rel=1e-5)


def test_a_hit_keeps_the_fields_of_the_first_ranking_that_found_it():
    fused = fuse({"words": [hit("decision", 1, "[wal] mode")], "semantic": [hit("decision", 1, "plain")]}, limit=5)
    assert fused[0]["snippet"] == "[wal] mode"


def test_the_limit_cuts_the_fused_list():
    fused = fuse({"words": [hit("decision", n) for n in range(1, 8)]}, limit=3)
    assert [h["id"] for h in fused] == [1, 2, 3]


RANKING = st.lists(st.tuples(st.sampled_from(["decision", "progress"]), st.integers(1, 20)), unique=True, max_size=20)


@given(words=RANKING, meaning=RANKING, limit=st.integers(1, 50))
def test_fusion_keeps_every_item_once_and_orders_by_fused_score(words, meaning, limit):
    fused = fuse({"words": [hit(*k) for k in words], "semantic": [hit(*k) for k in meaning]}, limit=limit)
    keys = [(h["type"], h["id"]) for h in fused]
    assert len(keys) == len(set(keys)) == min(limit, len(set(words) | set(meaning)))
    scores = [h["score"] for h in fused]
    assert scores == sorted(scores, reverse=True)
    for h in fused:
        key = (h["type"], h["id"])
        assert h["found_by"] == [n for n, r in (("words", words), ("semantic", meaning)) if key in r]


@given(words=st.lists(st.text(alphabet="abcxyz", min_size=1, max_size=6), max_size=700))
def test_chunks_cover_every_word_in_order_and_stay_within_the_size(words):
    chunks = chunk_text(" ".join(words))
    assert all(len(c.split()) <= CHUNK_WORDS for c in chunks)
    assert len(chunks) >= 1
    # Every word is in a chunk, and the chunks read back the text when their overlaps are dropped.
    step = CHUNK_WORDS - 24
    rebuilt = [w for c in chunks[:-1] for w in c.split()[:step]] + (chunks[-1].split() if chunks else [])
    assert rebuilt[: len(words)] == words and len(rebuilt) == len(words)


def test_a_short_text_is_one_chunk_and_an_empty_one_too():
    assert chunk_text("one two three") == ["one two three"]
    assert chunk_text("") == [""]


def test_a_bad_overlap_is_refused():
    with pytest.raises(ValueError, match="overlap"):
        chunk_text("a b", size=4, overlap=4)


def test_the_embedded_text_holds_the_title_the_body_and_the_tags():
    assert item_text("Use WAL", "readers never block", "db perf") == "Use WAL\nreaders never block\ntags: db perf"
    assert item_text("Only a title", "") == "Only a title"


def test_the_semantic_first_place_beats_an_item_both_rankings_put_far_down():
    # RRF_K = 5: agreement deep in two short lists does not outrank a first place (it did with k = 60).
    words = [*(hit("decision", n) for n in range(1, 30)), hit("progress", 7)]
    meaning = [*(hit("decision", n) for n in range(101, 130)), hit("progress", 7)]
    fused = fuse({"words": words, "semantic": meaning}, limit=3)
    assert [(h["type"], h["id"]) for h in fused[:2]] == [("decision", 1), ("decision", 101)]
    assert ("progress", 7) not in [(h["type"], h["id"]) for h in fused]


@given(
    words=RANKING,
    meaning=RANKING,
    a=st.integers(1, 20),
    b=st.integers(1, 20),
)
def test_of_two_items_at_the_same_ranks_one_found_by_both_lists_is_first(words, meaning, a, b):
    # x is found by both rankings at ranks a and b; y only by words at rank a (and z only by meaning at b).
    x, y, z = ("decision", 101), ("decision", 102), ("decision", 103)
    w = [k for k in words if k not in (x, y, z)][: a - 1]
    m = [k for k in meaning if k not in (x, y, z) and k not in w][: b - 1]
    w, m = [*w, x, y], [*m, x, z]
    fused = fuse({"words": [hit(*k) for k in w], "semantic": [hit(*k) for k in m]}, limit=100)
    place = {(h["type"], h["id"]): n for n, h in enumerate(fused)}
    assert place[x] < place[y] and place[x] < place[z]


def test_an_item_with_a_body_has_its_title_as_one_more_chunk_and_a_title_only_item_does_not():
    assert item_chunks("Use WAL", "readers never block", "db") == ["Use WAL readers never block tags: db", "Use WAL"]
    assert item_chunks("Only a title", "") == ["Only a title"]
    long_body = " ".join(f"w{n}" for n in range(300))
    chunks = item_chunks("Long one", long_body)
    assert chunks[-1] == "Long one" and chunks[:-1] == chunk_text(item_text("Long one", long_body))
