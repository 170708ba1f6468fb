"""Unified search at the edges: ranking, snippets, every filter, and queries FTS5 cannot parse."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from homeport.errors import InvalidItemError, ValueTooLargeError
from homeport.store import Store, contexts, custom_data, decisions, patterns, progress, search
from homeport.store.fields import MAX_QUERY_CHARS, MAX_SNIPPET_CHARS
from homeport.store.search import SEARCHABLE_TYPES, plain_words


@pytest.fixture
def store(tmp_path: Path, copy_store):
    s = copy_store(tmp_path)
    yield s
    s.close()


def hits(store, query, **kw) -> list[tuple[str, int]]:
    return [(h["type"], h["id"]) for h in search.search(store, query, **kw)]


# --- ranking and snippets --------------------------------------------------------------------------------------


def test_a_word_in_the_title_ranks_above_the_same_word_only_in_the_body(store):
    body_only = decisions.log_decision(store, "Tune the database", rationale="the checkpoint runs too often")
    in_title = decisions.log_decision(store, "Checkpoint every minute", rationale="less work per run")
    out = search.search(store, "checkpoint")
    assert [(h["type"], h["id"]) for h in out] == [("decision", in_title["id"]), ("decision", body_only["id"])]
    assert out[0]["score"] > out[1]["score"] > 0


def test_a_tag_match_ranks_between_title_and_body(store):
    body = progress.log_progress(store, "TODO", "nothing here\nbut the word storage in the body")
    tag = decisions.log_decision(store, "Unrelated words", tags=["storage"])
    title = patterns.log_system_pattern(store, "Storage layer", "one module per item type")
    assert hits(store, "storage") == [
        ("system_pattern", title["id"]),
        ("decision", tag["id"]),
        ("progress", body["id"]),
    ]


def test_results_name_type_id_title_and_a_highlighted_snippet(store):
    d = decisions.log_decision(store, "Use SQLite WAL mode", rationale="readers never block writers")
    [hit] = search.search(store, "readers")
    assert hit["type"] == "decision" and hit["id"] == d["id"] and hit["title"] == "Use SQLite WAL mode"
    assert search.mark(hit, "[", "]") == "[readers] never block writers"
    assert hit["updated_at"] == d["updated_at"]
    [hit] = search.search(store, "WAL")
    assert search.mark(hit, "[", "]") == "Use SQLite [WAL] mode"


def test_prefix_queries_and_stemming_highlight_the_matched_words(store):
    decisions.log_decision(store, "Checkpoints are tuned", rationale="checkpointing matters")
    assert "[Checkpoints]" in search.mark(search.search(store, "checkpoint")[0], "[", "]")
    assert "[Checkpoints]" in search.mark(search.search(store, "checkp*")[0], "[", "]")
    # Porter stems the indexed words, so a prefix longer than the stem matches nothing.
    assert search.search(store, "checkpointi*") == []


def test_a_long_body_gives_a_short_snippet_around_the_match(store):
    words = " ".join(f"filler{i}" for i in range(200))
    decisions.log_decision(store, "Long", rationale=f"{words} needle {words}")
    snippet = search.mark(search.search(store, "needle")[0], "[", "]")
    assert "[needle]" in snippet and snippet.count("…") == 2 and len(snippet.split()) <= 16


# --- filters ---------------------------------------------------------------------------------------------------


@pytest.fixture
def one_of_each(store):
    ids = {
        "decision": decisions.log_decision(store, "cache decision", tags=["Perf"])["id"],
        "progress": progress.log_progress(store, "TODO", "cache task")["id"],
        "system_pattern": patterns.log_system_pattern(store, "cache pattern", "read-through", tags=["perf"])["id"],
        "custom_data": custom_data.log_custom_data(store, "ProjectGlossary", "cache", "a fast copy")["id"],
    }
    custom_data.log_custom_data(store, "notes", "cache", "another cache note")
    contexts.update_context(store, "product", content={"goal": "a cache for everything"})
    contexts.update_context(store, "active", content={"focus": "cache invalidation"})
    return ids


def test_types_limit_results_to_the_named_item_types(store, one_of_each):
    assert {t for t, _ in hits(store, "cache")} == set(SEARCHABLE_TYPES)
    assert hits(store, "cache", types=["progress"]) == [("progress", one_of_each["progress"])]
    assert {t for t, _ in hits(store, "cache", types=["product_context", "active_context"])} == {
        "product_context",
        "active_context",
    }
    assert hits(store, "invalidation", types=["active_context"]) == [("active_context", 1)]


def test_unknown_types_are_named_with_the_known_ones(store):
    with pytest.raises(InvalidItemError, match=r"unknown item type.*ticket.*use any of decision"):
        search.search(store, "x", types=["decision", "ticket"])


def test_tags_any_keeps_items_with_any_of_the_tags_case_insensitively(store, one_of_each):
    assert set(hits(store, "cache", tags_any=[" PERF "])) == {
        ("decision", one_of_each["decision"]),
        ("system_pattern", one_of_each["system_pattern"]),
    }
    assert hits(store, "cache", tags_any=["perf"], types=["decision"]) == [("decision", one_of_each["decision"])]
    assert hits(store, "cache", tags_any=["nothing", "PERF"], types=["system_pattern"]) == [
        ("system_pattern", one_of_each["system_pattern"])
    ]
    assert hits(store, "cache", tags_any=["nothing"]) == []
    assert len(hits(store, "cache", tags_any=["", "  "])) == 7  # no real tag: no filter


def test_category_limits_results_to_the_glossary(store, one_of_each):
    assert hits(store, "cache", category="ProjectGlossary") == [("custom_data", one_of_each["custom_data"])]
    assert hits(store, "cache", category=" ProjectGlossary ") == [("custom_data", one_of_each["custom_data"])]
    assert [h["title"] for h in search.search(store, "cache", category="notes")] == ["notes: cache"]
    assert hits(store, "cache", category="Nothing") == []


def test_category_never_returns_items_other_than_custom_data(store):
    progress.log_progress(store, "ProjectGlossary", "cache task")
    progress.log_progress(store, "TODO", "cache task")
    assert hits(store, "cache", category="ProjectGlossary") == []
    assert hits(store, "cache", category="TODO") == []


def dated(store: Store, summary: str, stamp: str) -> int:
    with store.write() as conn:
        return decisions.insert_decision(conn, summary, created_at=stamp)["id"]


def test_since_keeps_items_changed_at_or_after_it(store):
    old = dated(store, "cache old", "2026-01-01T00:00:00.000000Z")
    mid = dated(store, "cache mid", "2026-03-01T12:00:00.000000Z")
    new = dated(store, "cache new", "2026-06-01T00:00:00.000000Z")
    assert {i for _, i in hits(store, "cache", since="2026-03-01T12:00:00.000000Z")} == {mid, new}
    assert {i for _, i in hits(store, "cache", since="2026-02-01T00:00:00Z")} == {mid, new}
    assert {i for _, i in hits(store, "cache", since="2026-01-01")} == {old, mid, new}
    assert hits(store, "cache", since="2027-01-01T00:00:00Z") == []


def test_since_with_a_utc_offset_means_the_same_instant(store):
    d = decisions.log_decision(store, "cache fresh")
    an_hour_ago_east = (datetime.now(UTC) - timedelta(hours=1)).astimezone(timezone(timedelta(hours=5)))
    assert hits(store, "cache", since=an_hour_ago_east.isoformat()) == [("decision", d["id"])]
    an_hour_ahead_west = (datetime.now(UTC) + timedelta(hours=1)).astimezone(timezone(timedelta(hours=-8)))
    assert hits(store, "cache", since=an_hour_ahead_west.isoformat()) == []


def test_an_unparsable_since_is_refused_by_name(store):
    decisions.log_decision(store, "cache")
    with pytest.raises(InvalidItemError, match="since 'yesterday' is not an ISO 8601 time"):
        search.search(store, "cache", since="yesterday")


def test_limit_caps_the_number_of_results(store):
    for i in range(30):
        progress.log_progress(store, "TODO", f"cache item {i}")
    assert len(search.search(store, "cache")) == 20
    assert len(search.search(store, "cache", limit=5)) == 5
    assert len(search.search(store, "cache", limit=0)) == 1
    assert len(search.search(store, "cache", limit=1000)) == 30


def test_custom_data_values_of_any_json_shape_are_searchable(store):
    item = custom_data.log_custom_data(store, "ProjectGlossary", "WAL", {"meaning": ["write-ahead", "log"], "n": 3})
    assert hits(store, "ahead") == [("custom_data", item["id"])]
    assert hits(store, "WAL") == [("custom_data", item["id"])]


def test_a_workspace_without_store_finds_nothing_but_still_checks_the_query():
    assert search.search(None, "anything") == []
    with pytest.raises(InvalidItemError, match="search query is empty"):
        search.search(None, " ")


# --- queries FTS5 cannot parse ---------------------------------------------------------------------------------

EDGE_QUERIES = [
    '"unbalanced',
    'wal"',
    '"',
    '""',
    "AND",
    "OR",
    "NOT",
    "NEAR",
    "wal AND",
    "OR wal",
    "NOT wal",
    "wal NOT",
    "wal AND AND wal",
    "NEAR(",
    "NEAR(wal",
    "NEAR(wal mode, x)",
    "*",
    "wal*",
    "**",
    "col:wal",
    "title:wal",
    "tags:wal",
    ":wal",
    "-wal",
    "- wal",
    "^wal",
    "^",
    "()",
    "(",
    ")",
    "(wal",
    "wal)",
    "((wal))",
    "{wal}",
    "{",
    "wal + mode",
    "+",
    "'",
    "'; DROP TABLE decisions; --",
    "\\",
    "wal\x00mode",
    "\t\n wal \r",
    "%wal%",
    "wal?",
    "a:b:c",
    "{title body}: wal",
    "-title:wal",
]


# Valid FTS5 that asks for something narrower (a column, the first token, not the title): no hit expected.
NARROWING = {"tags:wal", "^wal", "-title:wal"}


@pytest.mark.parametrize("query", EDGE_QUERIES)
def test_queries_fts5_cannot_parse_never_fail(store, query):
    d = decisions.log_decision(store, "SQLite WAL mode", rationale="readers never block")
    out = search.search(store, query)
    assert isinstance(out, list)
    if "wal" in plain_words(query).lower() and query not in NARROWING:
        assert ("decision", d["id"]) in [(h["type"], h["id"]) for h in out]


def test_a_long_query_is_searched_and_one_over_the_cap_is_refused_naming_it(store):
    d = decisions.log_decision(store, "needle in a haystack")
    words = " ".join(f"word{i}" for i in range(120))
    assert len(words) < MAX_QUERY_CHARS
    assert hits(store, f"{words} needle") == []  # every word must match
    assert hits(store, f'{words} needle "') == [("decision", d["id"])]  # plain words: any of them
    assert hits(store, "x" * MAX_QUERY_CHARS) == []
    assert hits(store, "(" * 400 + "needle" + ")" * 400) == [("decision", d["id"])]
    with pytest.raises(ValueTooLargeError, match=f"{MAX_QUERY_CHARS:,}") as info:
        search.search(store, "x" * (MAX_QUERY_CHARS + 1))
    assert info.value.code == "value_too_large"


def test_a_snippet_of_one_huge_word_is_clipped(store):
    decisions.log_decision(store, "haystack", rationale="y" * 40_000 + " needle " + "z" * 40_000)
    [hit] = search.search(store, "needle")
    assert len(hit["snippet"]) <= MAX_SNIPPET_CHARS


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("café", True),
        ("cafe", True),
        ("CAFÉ", True),
        ("日本語", True),
        ("日本", False),
        ("naïve", True),
        ("🚀", False),
        ("🚀 café", True),
        ("Ωmega", False),
        ("é", False),
    ],
)
def test_unicode_queries_match_whole_words_without_diacritics(store, query, expected):
    d = decisions.log_decision(store, "Café naive", rationale="日本語 🚀 launch")
    assert (hits(store, query) == [("decision", d["id"])]) is expected


@pytest.mark.parametrize("query", ["", " ", "\n\t"])
def test_an_empty_query_is_refused_with_a_clear_message(store, query):
    with pytest.raises(InvalidItemError, match="search query is empty; pass words to look for"):
        search.search(store, query)


@pytest.fixture(scope="module")
def populated(tmp_path_factory, copy_store):
    s = copy_store(tmp_path_factory.mktemp("populated"))
    decisions.log_decision(s, "SQLite WAL mode", rationale="readers never block writers", tags=["db"])
    progress.log_progress(s, "TODO", "benchmark the NEAR operator")
    custom_data.log_custom_data(s, "ProjectGlossary", "FTS", "full-text search, 日本語")
    yield s
    s.close()


FTS_PIECES = st.sampled_from(
    [
        '"',
        "'",
        "(",
        ")",
        "*",
        ":",
        "^",
        "-",
        "+",
        "AND",
        "OR",
        "NOT",
        "NEAR",
        "NEAR(",
        "{",
        "}",
        ",",
        "wal",
        "title:",
        "日本語",
        "🚀",
        "\x00",
        " ",
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.text(min_size=1) | st.lists(FTS_PIECES | st.text(max_size=3), min_size=1, max_size=12).map("".join))
def test_any_non_blank_query_returns_a_list_and_never_raises(populated, query):
    if not query.strip():
        with pytest.raises(InvalidItemError):
            search.search(populated, query)
        return
    out = search.search(populated, query, limit=5)
    assert isinstance(out, list) and len(out) <= 5
    for hit in out:
        assert hit["type"] in SEARCHABLE_TYPES and isinstance(hit["id"], int)
