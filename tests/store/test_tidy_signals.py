"""The duplicate and contradiction verdicts: two agreeing signals merge, any disagreement never does."""

from __future__ import annotations

import dataclasses

import pytest

from homeport.store.tidy_signals import Signals, candidate_pairs, clusters, signals, verdict

DUPLICATES = [
    ("Use SQLite in WAL mode for the local store", "Use SQLite with WAL mode for the local store"),
    ("Background jobs run on Dramatiq with Redis", "Run background jobs on Dramatiq backed by Redis"),
    ("Prices include VAT in the storefront", "Storefront prices are shown including VAT"),
    ("Invoices are rendered to PDF with WeasyPrint", "Render invoices to PDF using WeasyPrint"),
    ("One repository class per aggregate root", "Each aggregate root gets a repository class"),
]
NEVER_MERGED = [
    ("Use Postgres 15 in production", "Use Postgres 16 in production", "contradiction"),
    ("Heart rate samples are stored every second", "Heart rate samples are stored every five seconds", "contradiction"),
    ("Guest checkout is allowed", "Guest checkout is not allowed", "contradiction"),
    ("Reviews are public without moderation", "Reviews are not public without moderation", "contradiction"),
    ("Enable two-factor login for admins", "Disable two-factor login for admins", "contradiction"),
    ("Product slugs are mutable", "Product slugs are immutable", "contradiction"),
    ("Use REST for the public API", "Avoid REST for the public API; use GraphQL", "contradiction"),
    ("Use Redis for the session cache", "Use Redis for the job queue", "different"),
    ("Product pages are server-rendered", "Checkout pages are server-rendered", "related"),
]


@pytest.mark.parametrize(("a", "b"), DUPLICATES)
def test_rewordings_of_one_decision_are_duplicates_by_two_signals(a, b):
    sig = signals(a, b)
    assert verdict(sig) == "duplicate", sig
    assert verdict(signals(b, a)) == "duplicate"  # symmetric


@pytest.mark.parametrize(("a", "b", "said"), NEVER_MERGED)
def test_near_misses_are_never_duplicates(a, b, said):
    assert verdict(signals(a, b)) == said
    assert verdict(signals(b, a)) == said


def test_meaning_or_identical_citations_is_the_second_signal_when_characters_disagree():
    words_only = Signals(0.5, 0.3, None, False, False, False, None)
    assert verdict(words_only) == "related"
    assert verdict(dataclasses.replace(words_only, meaning=0.9)) == "duplicate"
    assert verdict(dataclasses.replace(words_only, meaning=0.5)) == "related"
    assert verdict(dataclasses.replace(words_only, same_citations=True)) == "duplicate"
    assert verdict(dataclasses.replace(words_only, meaning=0.99, numbers_differ=True)) == "contradiction"


def test_candidates_share_words_and_clusters_join_pairs():
    texts = ["use sqlite wal store", "sqlite wal store mode", "deploy fly machines", "fly deploy region machines"]
    assert candidate_pairs(texts) == [(0, 1), (2, 3)]
    assert clusters([(0, 1), (1, 4), (2, 3)]) == [[0, 1, 4], [2, 3]]
