"""The retrieval benchmark's two labelled sets are sound, and bench/retrieval_quality.py runs end to end.

The sets (bench/retrieval/memory.json, queries.json: Quillbill; bench/retrieval/trailmate/: Trailmate)
are what search by meaning is judged on: a query naming a record that does not exist, a
"paraphrase" that shares words with its answer, or an item without its session would quietly
change the figures.
"""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SET = ROOT / "bench" / "retrieval"
MINIMUMS = {"paraphrase": 40, "synonym": 20, "identifier": 20, "lexical": 40, "negative": 20}
TRAILMATE = SET / "trailmate"
TRAILMATE_MINIMUMS = {"paraphrase": 30, "synonym": 15, "identifier": 15, "lexical": 25, "negative": 10}


def _module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def make_memory() -> ModuleType:
    return _module("retrieval_make_memory", SET / "make_memory.py")


@pytest.fixture(scope="module")
def memory() -> dict[str, Any]:
    return json.loads((SET / "memory.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def queries() -> list[dict[str, Any]]:
    return json.loads((SET / "queries.json").read_text(encoding="utf-8"))["queries"]


def test_every_relevant_id_names_a_record_and_every_kind_is_known(memory, queries):
    ids = [item["id"] for item in memory["items"]]
    assert len(ids) == len(set(ids)) >= 300
    for q in queries:
        assert q["kind"] in MINIMUMS, q
        assert set(q["relevant"]) <= set(ids), q
        assert (q["kind"] == "negative") == (q["relevant"] == []), q


def test_each_kind_has_its_minimum_count_and_no_query_text_repeats(queries):
    counts = {kind: sum(q["kind"] == kind for q in queries) for kind in MINIMUMS}
    assert all(counts[kind] >= n for kind, n in MINIMUMS.items()), counts
    texts = [" ".join(q["text"].lower().split()) for q in queries]
    assert len(texts) == len(set(texts))
    assert len({q["id"] for q in queries}) == len(queries)


def test_the_files_are_what_make_memory_writes_and_break_none_of_its_rules(make_memory, memory, queries):
    built_memory, built_queries = make_memory.build()
    assert built_memory == memory, "memory.json is stale: run python3 bench/retrieval/make_memory.py"
    assert built_queries["queries"] == queries, "queries.json is stale: run python3 bench/retrieval/make_memory.py"
    assert make_memory.problems(memory, queries) == []


def test_the_rules_catch_an_unknown_id_and_a_paraphrase_that_shares_words(make_memory, memory, queries):
    broken = copy.deepcopy(queries)
    paraphrase = next(q for q in broken if q["kind"] == "paraphrase")
    answer = next(i for i in memory["items"] if i["id"] == paraphrase["relevant"][0])
    paraphrase["text"] += " " + answer.get("summary", answer.get("name", answer.get("key", "")))
    next(q for q in broken if q["kind"] == "lexical")["relevant"].append("dec-does-not-exist")
    found = make_memory.problems(memory, broken)
    assert any(paraphrase["id"] in p and "shares" in p for p in found), found
    assert any("dec-does-not-exist" in p for p in found), found


@pytest.fixture(scope="module")
def trailmate() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    memory = json.loads((TRAILMATE / "memory.json").read_text(encoding="utf-8"))
    return memory, json.loads((TRAILMATE / "queries.json").read_text(encoding="utf-8"))["queries"]


def test_the_second_set_is_another_project_logged_in_sessions_with_enough_items_and_queries(trailmate):
    memory, queries = trailmate
    ids = [item["id"] for item in memory["items"]]
    assert len(ids) == len(set(ids)) >= 150
    sessions = {s["id"] for s in memory["sessions"]}
    assert {item["session"] for item in memory["items"]} == sessions and len(sessions) >= 20
    assert memory["product_context"]["name"] == "Trailmate"
    assert sum(q["kind"] != "negative" for q in queries) >= 80
    counts = {kind: sum(q["kind"] == kind for q in queries) for kind in TRAILMATE_MINIMUMS}
    assert all(counts[kind] >= n for kind, n in TRAILMATE_MINIMUMS.items()), counts
    for q in queries:
        assert set(q["relevant"]) <= set(ids), q
        assert (q["kind"] == "negative") == (q["relevant"] == []), q


def test_the_second_set_files_are_what_make_memory_writes_and_break_none_of_its_rules(make_memory, trailmate):
    memory, queries = trailmate
    built_memory, built_queries = make_memory.build("trailmate")
    assert built_memory == memory, "trailmate/memory.json is stale: run python3 bench/retrieval/make_memory.py"
    assert built_queries["queries"] == queries, "trailmate/queries.json is stale: run make_memory.py"
    assert make_memory.set_problems("trailmate", memory, queries) == []


def test_the_rules_catch_an_item_without_a_session_and_a_set_below_its_minimums(make_memory, trailmate):
    memory, queries = copy.deepcopy(trailmate)
    del memory["items"][0]["session"]
    found = make_memory.set_problems("trailmate", memory, queries[:40])
    assert any(memory["items"][0]["id"] in p and "session" in p for p in found), found
    assert any("fewer than" in p for p in found), found
    shared = next(q for q in queries if q["kind"] == "paraphrase")
    answer = next(i for i in memory["items"] if i["id"] == shared["relevant"][0])
    shared["text"] += " " + answer["summary"]
    assert any(shared["id"] in p and "shares" in p for p in make_memory.set_problems("trailmate", memory, queries))


def test_session_figures_count_a_session_found_by_any_of_its_items(bench):
    sessions = {"a1": "s1", "a2": "s1", "b1": "s2", "c1": "s3"}
    # a2 (relevant) is missed, but a1 of the same session is at rank 2; b1 is at rank 3.
    found = bench.ranks(["c1", "a1", "b1", None], ["a2", "b1"], sessions)
    assert found["rank"] == 3 and found["item_ranks"] == [None, 3]
    assert found["session_rank"] == 2 and found["session_ranks"] == [2, 3]
    figures = bench.score([{**found}])
    assert figures["hit@1"] == 0 and figures["hit@5"] == 1 and figures["coverage@5"] == 0.5
    assert figures["session hit@5"] == 1 and figures["session coverage@5"] == 1 and figures["session mrr"] == 0.5
    assert figures["mrr"] == pytest.approx(1 / 3)


def test_a_shared_word_query_that_auto_misses_and_words_finds_fails_the_target(bench):
    words = {"queries": [{"id": "q1", "kind": "lexical", "rank": 1}, {"id": "q2", "kind": "paraphrase", "rank": None}]}
    auto = {"queries": [{"id": "q1", "kind": "lexical", "rank": None}, {"id": "q2", "kind": "paraphrase", "rank": 1}]}
    assert bench.lost_queries(words, auto) == ["q1"]
    assert bench.lost_queries(auto, words) == []


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _module("retrieval_quality_bench", ROOT / "bench" / "retrieval_quality.py")


def test_modes_come_from_the_search_tool_schema(bench):
    usable, missing = bench.offered_modes({"properties": {"query": {"type": "string"}}})
    assert usable == {"words": {}} and set(missing) == {"semantic", "auto"}
    schema = {"properties": {"mode": {"enum": ["words", "semantic", "auto"], "default": "auto"}}}
    assert set(bench.offered_modes(schema)[0]) == {"words", "semantic", "auto"}
    by_ref = {
        "properties": {"mode": {"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}]}},
        "$defs": {"Mode": {"enum": ["words", "auto"]}},
    }
    usable, missing = bench.offered_modes(by_ref)
    assert usable == {"words": {"mode": "words"}, "auto": {"mode": "auto"}} and set(missing) == {"semantic"}


def test_a_pending_count_is_found_at_any_depth_outside_the_results(bench):
    assert bench.pending_count({"results": [{"pending": 3}], "workspace": {}}) is None
    assert bench.pending_count({"results": [], "index": {"pending": 2, "not_yet_embedded": 1}}) == 3
    assert bench.pending_count({"results": [], "pending_items": 0}) == 0


def test_the_benchmark_runs_end_to_end_in_words_mode_on_20_records(bench, tmp_path: Path, capsys):
    out = tmp_path / "figures.json"
    argv = ["--set", "quillbill", "--limit", "20", "--modes", "words", "--or-baseline", "--json", str(out)]
    assert bench.main(argv) == 0
    printed = capsys.readouterr().out
    assert "| shared words |" in printed and "| overall |" in printed
    whole = json.loads(out.read_text(encoding="utf-8"))
    assert whole["command"].endswith(" ".join(argv)) and list(whole["sets"]) == ["quillbill"]
    result = whole["sets"]["quillbill"]
    assert result["items"] == 20
    words = result["modes"]["words"]
    assert words["errors"] == 0
    # The first 20 records answer 21 lexical and identifier queries; word search finds 19 of them (the two it
    # misses are questions without a question mark, whose every word must match). A load that stored the wrong
    # records, or ranks matched to the wrong ids, scores near 0 here.
    assert words["groups"]["shared words"]["n"] > 0 and words["groups"]["shared words"]["hit@10"] >= 0.8
    assert words["negatives"]["n"] == result["kinds"]["negative"] > 0
    assert all("note" in result["modes"][m] for m in ("semantic", "auto"))
    # The reference row runs the same queries with their words joined by OR: some word matches every query.
    any_word = result["modes"]["words-or"]
    assert any_word["groups"]["overall"]["n"] == words["groups"]["overall"]["n"]
    assert any_word["negatives"]["empty"] < any_word["negatives"]["n"]


def test_the_benchmark_runs_the_second_set_with_session_figures(bench, tmp_path: Path, capsys):
    out = tmp_path / "figures.json"
    assert bench.main(["--set", "trailmate", "--limit", "30", "--modes", "words", "--json", str(out)]) == 0
    assert "### trailmate: 30 records in" in capsys.readouterr().out
    words = json.loads(out.read_text(encoding="utf-8"))["sets"]["trailmate"]["modes"]["words"]
    overall = words["groups"]["overall"]
    # Word search finds every shared-word query of the first 30 records; a session is found whenever an item is.
    assert words["groups"]["shared words"]["hit@10"] == 1.0
    assert overall["session hit@10"] >= overall["hit@10"] > 0
