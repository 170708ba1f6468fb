"""get_context ranks by the task's content words, never by its stop words (issue 30).

The finding: on the task "Write the tests", an item matched only on "the" scored higher than the
decision about tests and was packed first: a word in every sentence decided what an agent read.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from homeport.store import Store
from homeport.store.decisions import log_decision
from homeport.store.task_context import task_context


@pytest.fixture
def store(tmp_path, copy_store) -> Store:
    s = copy_store(tmp_path / "shop")
    yield s
    s.close()


def _ranked(store: Store, task: str) -> list[str]:
    return [i["text"] for i in task_context(store, task, budget_tokens=2000)["items"] if i["why"] == "match"]


def test_an_item_matched_only_on_a_stop_word_is_not_a_match_and_never_outranks_the_answer(store):
    for summary in (
        "Unit tests run with pytest and xdist in parallel workers",
        "Use SQLite WAL",
        "Cache embeddings by blob id",
        "Prefer ULIDs for ids",
        "Log in JSON lines",
        "Move the logo",
    ):
        log_decision(store, summary)
    ranked = _ranked(store, "Write the tests")
    assert ranked[0].startswith("Unit tests run with pytest"), ranked
    assert not any("Move the logo" in text for text in ranked), ranked


def test_a_task_made_only_of_stop_words_still_finds_the_item_made_of_them(store):
    log_decision(store, "To be or not to be")
    log_decision(store, "Use SQLite WAL")
    packed = task_context(store, "to be or not to be", budget_tokens=2000)["items"]
    # SQLite searches the words themselves; PostgreSQL's english configuration indexes no stop word, so
    # there the item comes among the newest ones instead.
    assert packed[0]["text"] == "To be or not to be" or "To be or not to be" in [i["text"] for i in packed]


def test_content_words_drop_stop_words_in_any_case_and_keep_the_rest_in_order():
    from homeport.store.search import content_words

    assert content_words("Write THE tests, and the Docs") == ["Write", "tests", "Docs"]
    assert content_words("the and of") == []


# A sample of English stop words; the store's own list is larger.
SOME_STOP_WORDS = ("the", "a", "an", "and", "of", "to", "in", "is", "it", "for", "on", "with", "this", "that")


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(SOME_STOP_WORDS), min_size=1, max_size=4))
def test_stop_words_alone_never_make_an_item_a_match_when_the_task_has_a_content_word(store, stop):
    log_decision(store, " ".join(["filler", *stop]))
    task = " ".join(["zebra", *stop])
    assert _ranked(store, task) == [] or all("zebra" in text for text in _ranked(store, task))
