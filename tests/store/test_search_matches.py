"""Search hits say where they matched as data: `matches`, spans of `snippet` (issue 30).

The finding: highlights were written into the snippet as `[`...`]`, the same characters as real
content, so a JSON array in an item (`[1, 2]`) read like a match and an agent could not tell a
highlight from the text.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from homeport.store import Store, search
from homeport.store.decisions import log_decision


@pytest.fixture
def store(tmp_path, copy_store) -> Store:
    s = copy_store(tmp_path / "shop")
    yield s
    s.close()


def test_brackets_in_the_text_are_text_and_the_match_is_a_span(store):
    log_decision(store, "Give up on the carrier after [1, 2] retries")
    (hit,) = search.search(store, "carrier")
    assert "[1, 2]" in hit["snippet"]
    spans = hit["matches"]
    assert [hit["snippet"][a:b] for a, b in spans] == ["carrier"]
    assert search.mark(hit).endswith("the «carrier» after [1, 2] retries")  # PostgreSQL starts the fragment later


def test_every_span_is_a_matched_word_and_the_snippet_holds_no_marker(store):
    log_decision(store, "Readers never block writers", rationale="WAL lets readers go on while a writer commits")
    for hit in search.search(store, "readers OR writer"):
        assert hit["matches"], hit
        for a, b in hit["matches"]:
            assert hit["snippet"][a:b].casefold().startswith(("reader", "writer")), hit
        assert "\ue000" not in hit["snippet"] and "\ue001" not in hit["snippet"]


# Punctuation (brackets too), symbols, digits and spaces: no letter that could make a second match.
_TEXT = st.text(st.characters(categories=("P", "S", "N", "Zs")), min_size=1, max_size=60)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=_TEXT, after=_TEXT)
def test_whatever_surrounds_a_match_its_span_points_at_it(store, before, after):
    log_decision(store, f"{before} zanzibar {after}")
    hits = search.search(store, "zanzibar")
    assert hits
    for hit in hits:
        assert all(hit["snippet"][a:b].casefold() == "zanzibar" for a, b in hit["matches"]), hit
        assert min((a for a, _ in hit["matches"]), default=0) >= 0
        assert max((b for _, b in hit["matches"]), default=0) <= len(hit["snippet"])
