"""Reciprocal rank fusion: one ranking from word search and search by meaning.

Each list votes 1 / (k + rank) for each of its hits (rank from 1); of two items at the same
ranks, one found by both lists is above one found by either alone. Ranks, not scores, are fused:
bm25 and cosine are on different scales.

k = 5, not the 60 of Cormack et al. (2009): their lists were long web rankings where agreement
deep down counts; here both lists are short and their first places are what matter. On the two
labelled sets (bench/retrieval_quality.py, 2026-11-28) k = 5 gave auto the best hit@10 and MRR of
k in {5, 10, 20, 60} on both, without losing a query that shares words with its answer; with
k = 60 an item that both lists rank near 50th outranked the semantic list's first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["RRF_K", "fuse"]

RRF_K = 5


def fuse(rankings: Mapping[str, Sequence[dict[str, Any]]], *, limit: int, k: int = RRF_K) -> list[dict[str, Any]]:
    """The hits of every ranking, by fused score, best first; each hit says which rankings found it.

    A hit keeps the fields of the first ranking that found it (put word search first: its snippet
    highlights the words), `score` becomes the fused score and `found_by` lists the rankings' names.
    Ties keep the order of first appearance.
    """
    fused: dict[tuple[str, int], dict[str, Any]] = {}
    totals: dict[tuple[str, int], float] = {}
    for name, hits in rankings.items():
        for rank, hit in enumerate(hits, start=1):
            key = (hit["type"], hit["id"])
            if key not in fused:
                fused[key] = {**hit, "found_by": []}
                totals[key] = 0.0
            fused[key]["found_by"].append(name)
            totals[key] += 1.0 / (k + rank)
    order = sorted(fused, key=lambda key: -totals[key])  # stable: ties keep first appearance
    out = []
    for key in order[:limit]:
        hit = fused[key]
        hit["score"] = float(f"{totals[key]:.6g}")
        out.append(hit)
    return out
