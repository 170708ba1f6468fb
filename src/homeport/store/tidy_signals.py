"""Whether two items say the same thing, or disagree on one subject: pure functions, no model, no I/O.

A tidy proposal (`homeport.store.tidy`) merges two items only when two independent signals agree,
because one signal alone merges near-misses: "Use PostgreSQL 15" and "Use PostgreSQL 16" share
almost every word. The signals:

- **words**: Jaccard overlap of the content words (stop words dropped, a plural's `s` folded);
- **characters**: Jaccard overlap of the 4-character shingles of the text (catches rewordings that
  share spelling: "deploys"/"deployment", word order);
- **meaning**, when the semantic extra has embedded both items: the cosine of their vectors
  (`tidy.py` passes it in; without it the two lexical signals must both agree, at stricter bounds);
- **citations**: identical non-empty citation sets count as a second signal when an item type has them.

Two items whose texts share a subject but differ in a number, a negation or an antonym pair
("use"/"avoid") are never duplicates: they are a *contradiction* to surface, which a person or agent
resolves. The thresholds were tuned on the labelled corpus in `bench/tidy/` (`bench/tidy_quality.py`).

    sig = signals("Use SQLite in WAL mode", "Use SQLite with WAL mode")
    verdict(sig)  # "duplicate"
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

__all__ = [
    "Signals",
    "Verdict",
    "candidate_pairs",
    "clusters",
    "content_tokens",
    "shingles",
    "signals",
    "verdict",
]

Verdict = Literal["duplicate", "contradiction", "related", "different"]

# Duplicates: both lexical signals at these bounds (or words plus meaning / citations at the looser ones).
WORDS_DUPLICATE = 0.6
CHARS_DUPLICATE = 0.55
WORDS_WITH_SECOND_SIGNAL = 0.45
MEANING_DUPLICATE = 0.86
# Same subject: enough shared words that a disagreement is a contradiction, not two topics.
WORDS_SAME_SUBJECT = 0.4

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_STOP_TEXT = """a an the and or of to in on for with by at from as is are was were be been being it its this that these
    those we our us they their them i you your he she his her will would should shall can could may might must
    do does did done so than then there here into over under about after before when while which who whom what
    all any each every some such only also just more most other same very own too via per"""
_STOP = frozenset(_STOP_TEXT.split())
_NEGATION_TEXT = "not no never none nothing without dont don't doesnt isnt cannot cant wont nor"
_NEGATIONS = frozenset(_NEGATION_TEXT.split())
# One side of each pair says the opposite of the other about the same subject.
_OPPOSITES = (
    ("use", "avoid"),
    ("use", "drop"),
    ("enable", "disable"),
    ("enabled", "disabled"),
    ("allow", "forbid"),
    ("allow", "deny"),
    ("allowed", "forbidden"),
    ("keep", "remove"),
    ("keep", "drop"),
    ("add", "remove"),
    ("sync", "async"),
    ("synchronous", "asynchronous"),
    ("always", "never"),
    ("required", "optional"),
    ("include", "exclude"),
    ("accept", "reject"),
    ("start", "stop"),
    ("on", "off"),
    ("before", "after"),
    ("synchronously", "asynchronously"),
    ("increase", "decrease"),
    ("public", "private"),
    ("mutable", "immutable"),
)
_NEGATING_PREFIXES = ("a", "un", "in", "im", "ir", "il", "non", "dis", "de", "anti")
# Words that say how an item is done or kept, not what: one side having one of these alone is no difference.
_GENERIC_TEXT = """use using used run runs ran go goes going get gets got have has had keep kept live lives stay
make made take takes put set sets need needs must done do handle handled managed manage happen happens via within
always also now new current currently"""
_GENERIC = frozenset(_GENERIC_TEXT.split())
_OPPOSITE_OF: dict[str, set[str]] = defaultdict(set)
for _a, _b in _OPPOSITES:
    _OPPOSITE_OF[_a].add(_b)
    _OPPOSITE_OF[_b].add(_a)


@dataclass(frozen=True)
class Signals:
    """What two texts share and where they disagree."""

    words: float  # Jaccard of content words
    chars: float  # Jaccard of 4-character shingles
    meaning: float | None  # cosine of the embeddings, when both have one
    same_citations: bool  # identical non-empty citation sets
    numbers_differ: bool  # they name different numbers (or one names a number, the other none)
    negation_differs: bool  # one negates, the other does not
    opposites: tuple[str, str] | None  # an antonym pair, one word on each side
    substituted: tuple[tuple[str, ...], tuple[str, ...]] | None = None  # distinctive words only one side has

    @property
    def disagree(self) -> bool:
        return self.numbers_differ or self.negation_differs or self.opposites is not None

    @property
    def differ(self) -> bool:
        """They disagree, or each names something the other does not ("session cache" / "job queue")."""
        return self.disagree or self.substituted is not None

    def evidence(self) -> dict[str, object]:
        """The signals as a proposal entry shows them."""
        out: dict[str, object] = {"word_overlap": round(self.words, 3), "character_overlap": round(self.chars, 3)}
        if self.meaning is not None:
            out["meaning"] = round(self.meaning, 3)
        if self.same_citations:
            out["same_citations"] = True
        if self.numbers_differ:
            out["numbers_differ"] = True
        if self.negation_differs:
            out["negation_differs"] = True
        if self.opposites is not None:
            out["opposites"] = list(self.opposites)
        if self.substituted is not None:
            out["only_one_side"] = [list(self.substituted[0]), list(self.substituted[1])]
        return out


def _fold(word: str) -> str:
    word = word.lower()
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def content_tokens(text: str) -> set[str]:
    """The content words of `text`, lower case, plural `s` folded, stop words, negations and letters dropped."""
    return {
        _fold(w) for w in _WORD.findall(text) if len(w) > 1 and w.lower() not in _STOP and w.lower() not in _NEGATIONS
    }


def _variants(a: str, b: str) -> bool:
    """Two spellings of one word: "render"/"rendered", "show"/"shown", "include"/"including"."""
    if a[:3] != b[:3]:
        return False
    short = min(len(a), len(b))
    common = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), short)
    return short >= 3 and common >= max(3, short - 1)


def _unify(a: set[str], b: set[str]) -> tuple[set[str], set[str]]:
    """`a` and `b` with each word of `b` that is a variant of a word of `a` spelled as in `a`."""
    only_b = b - a
    if not only_b:
        return a, b
    by_start: dict[str, list[str]] = defaultdict(list)
    for word in sorted(a - b):
        by_start[word[:3]].append(word)
    renamed = set(b & a)
    for word in only_b:
        match = next((w for w in by_start.get(word[:3], ()) if _variants(w, word)), None)
        renamed.add(match or word)
    return a, renamed


def shingles(text: str, size: int = 4) -> set[str]:
    """The `size`-character windows of `text`, lower case with runs of non-letters as one space."""
    flat = " ".join(_WORD.findall(text.lower()))
    if len(flat) <= size:
        return {flat} if flat else set()
    return {flat[i : i + size] for i in range(len(flat) - size + 1)}


def _bag_shingles(words: set[str]) -> set[str]:
    """Shingles of content words in sorted order: the same words in another order match."""
    return shingles(" ".join(sorted(words)))


def _jaccard(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


# "one" is left out: far more often "a" than a count ("one repository per aggregate").
_NUMBER_WORD_TEXT = """two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen
seventeen eighteen nineteen twenty"""
_NUMBER_WORDS = {w: str(n) for n, w in enumerate(_NUMBER_WORD_TEXT.split(), start=2)} | {
    "thirty": "30",
    "forty": "40",
    "fifty": "50",
    "sixty": "60",
    "hundred": "100",
    "thousand": "1000",
}


def _numbers(text: str) -> set[str]:
    """The numbers `text` names, in digits or in words ("five" is 5)."""
    spelled = {_NUMBER_WORDS[w] for w in re.findall(r"[a-z]+", text.lower()) if w in _NUMBER_WORDS}
    return set(_NUMBER.findall(text)) | spelled


def _negations(text: str) -> frozenset[str]:
    """The negating words of `text` ("not", "never", "n't", ...): "without" on both sides is no difference,
    "not ... without" against "without" is."""
    lowered = text.lower().replace("\u2019", "'")
    found = {w for w in re.findall(r"[a-z']+", lowered) if w in _NEGATIONS}
    return frozenset(found | ({"n't"} if "n't" in lowered else set()))


def _opposites(a: set[str], b: set[str]) -> tuple[str, str] | None:
    """A word only one side says whose opposite the other side says ("enable"/"disable", "mutable"/"immutable")."""
    for one, other in ((a, b), (b, a)):
        for word in sorted(one - other):
            for opposite in sorted(_OPPOSITE_OF.get(word, ())):
                if opposite in other:
                    return (word, opposite) if one is a else (opposite, word)
            for prefix in _NEGATING_PREFIXES:
                if word.startswith(prefix) and word[len(prefix) :] in other and len(word) - len(prefix) > 3:
                    return (word, word[len(prefix) :]) if one is a else (word[len(prefix) :], word)
    return None


def _substituted(a: set[str], b: set[str]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The distinctive words each side has and the other lacks, when both sides have some."""
    only_a = tuple(sorted(w for w in a - b if w not in _GENERIC))
    only_b = tuple(sorted(w for w in b - a if w not in _GENERIC))
    return (only_a, only_b) if only_a and only_b else None


def signals(
    a: str,
    b: str,
    *,
    meaning: float | None = None,
    citations: tuple[Sequence[str], Sequence[str]] | None = None,
) -> Signals:
    """The signals between texts `a` and `b` (`meaning`: their cosine, when known)."""
    words_a, words_b = _unify(content_tokens(a), content_tokens(b))
    raw_a = {w.lower() for w in _WORD.findall(a)}
    raw_b = {w.lower() for w in _WORD.findall(b)}
    nums_a, nums_b = _numbers(a), _numbers(b)
    same_citations = bool(citations and citations[0] and set(citations[0]) == set(citations[1]))
    return Signals(
        words=_jaccard(words_a, words_b),
        chars=max(_jaccard(shingles(a), shingles(b)), _jaccard(_bag_shingles(words_a), _bag_shingles(words_b))),
        meaning=meaning,
        same_citations=same_citations,
        numbers_differ=nums_a != nums_b,
        negation_differs=_negations(a) != _negations(b),
        opposites=_opposites(raw_a, raw_b),
        substituted=_substituted(words_a, words_b),
    )


def verdict(sig: Signals) -> Verdict:
    """duplicate (two agreeing signals, nothing said by one side only), contradiction (same subject,
    disagreeing), related (same subject), different."""
    if sig.words >= WORDS_SAME_SUBJECT and sig.disagree:
        return "contradiction"
    if sig.differ:
        return "related" if sig.words >= WORDS_SAME_SUBJECT else "different"
    lexical = sig.words >= WORDS_DUPLICATE and sig.chars >= CHARS_DUPLICATE
    second = (sig.meaning is not None and sig.meaning >= MEANING_DUPLICATE) or sig.same_citations
    if lexical or (sig.words >= WORDS_WITH_SECOND_SIGNAL and second):
        return "duplicate"
    if sig.words >= WORDS_SAME_SUBJECT:
        return "related"
    return "different"


def candidate_pairs(texts: Sequence[str], *, min_shared: int = 2, max_postings: int = 60) -> list[tuple[int, int]]:
    """Index pairs of `texts` worth scoring: sharing at least `min_shared` content words.

    A word held by more than `max_postings` texts says little about a pair and would make this
    quadratic, so it is skipped. Pairs come sorted, each once with the smaller index first.
    """
    postings: dict[str, list[int]] = defaultdict(list)
    sizes: list[int] = []
    for index, text in enumerate(texts):
        tokens = content_tokens(text)
        sizes.append(len(tokens))
        for token in tokens:
            postings[token].append(index)
    shared: Counter[tuple[int, int]] = Counter()
    for held in postings.values():
        if len(held) > max_postings:
            continue
        shared.update(combinations(held, 2))
    return sorted(p for p, n in shared.items() if n >= min(min_shared, sizes[p[0]], sizes[p[1]]))


def clusters(pairs: Iterable[tuple[int, int]]) -> list[list[int]]:
    """Connected groups of the pairs (union-find), each sorted, in order of their smallest member."""
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = defaultdict(list)
    for x in parent:
        groups[root(x)].append(x)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: g[0])
