"""Spans of code that memory items cite, and how a citation compares with the code now. Pure: no I/O.

A citation is anchored when it is written: the cited file's lines `start..end`, each line normalised
(every whitespace character removed, the way `git diff -w` compares lines, so a re-indent or a
formatter's spacing keeps a citation fresh), a 64-bit key per normalised line (what `classify`
compares, and how the span is found somewhere else) and a SHA-256 over the normalised span (kept
with the anchor, so a store can be audited without the file). On read, `classify` compares an
anchor with the code as it is now:

    fresh         the span's normalised lines are at start..end of the same file
    moved         the same lines, adjacent and in order, elsewhere in that file (the occurrence nearest
                  the old place), else found exactly once in another tracked file: the new place is given
    changed       the file is still there (and the cited symbol, if one was recorded), the span is not
    missing       the file is gone, or the symbol the citation recorded is gone from it
    unverifiable  decided by the caller before this module is asked: no git work tree, a binary or a
                  too large file, a path that now leads outside the workspace

A span shorter than `MIN_MOVE_CHARS` normalised characters (`pass`, `}`, `return None`) occurs all over
a code base, so finding it in another file says nothing: such a span is `moved` only within its own
file, and only when it occurs there once. `moved` must be trusted (an agent follows it without
looking); a short span that cannot be placed is reported `changed`, which sends the agent to look.

The item carries the worst status of its citations (`worst`), in the order of `STATUSES`; `changed`
and `missing` are `STALE`: search and get_context rank such items below the others, labelled.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from homeport.errors import InvalidItemError

__all__ = [
    "MAX_SPAN_LINES",
    "MIN_MOVE_CHARS",
    "STALE",
    "STATUSES",
    "Anchor",
    "FileText",
    "SpanIndex",
    "Verdict",
    "anchor_span",
    "classify",
    "normalise",
    "parse_lines",
    "worst",
]

STATUSES = ("fresh", "moved", "unverifiable", "changed", "missing")  # best first
STALE = frozenset({"changed", "missing"})
MAX_SPAN_LINES = 400
MIN_MOVE_CHARS = 24
QUOTE_CHARS = 160
_RANK = {status: i for i, status in enumerate(STATUSES)}


def normalise(line: str) -> str:
    """A line with every whitespace character removed (as `git diff -w` compares lines)."""
    return "".join(line.split())


def _line_key(norm: str) -> str:
    return hashlib.blake2b(norm.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _span_hash(norms: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(norms).encode("utf-8", "surrogatepass")).hexdigest()


def worst(statuses: Iterable[str]) -> str | None:
    """The worst of some statuses (None for none)."""
    found = list(statuses)
    return max(found, key=_RANK.__getitem__) if found else None


def parse_lines(spec: str, path: str) -> tuple[int, int]:
    """`"40-58"` or `"40"` as (start, end), 1-based and inclusive.

    Raises:
        InvalidItemError: not a line or a range, a range backwards, or over MAX_SPAN_LINES lines.
    """
    text = spec.strip()
    first, sep, last = text.partition("-")
    try:
        start = int(first)
        end = int(last) if sep else start
    except ValueError:
        raise InvalidItemError(
            f"citation of {path}: lines {spec!r} is not a line number or a range like '40-58'"
        ) from None
    if start < 1 or end < start:
        raise InvalidItemError(f"citation of {path}: lines {spec!r} must be N or N-M with 1 <= N <= M")
    if end - start + 1 > MAX_SPAN_LINES:
        raise InvalidItemError(
            f"citation of {path}: lines {spec!r} span {end - start + 1} lines, over {MAX_SPAN_LINES}; "
            "cite the part that matters"
        )
    return start, end


@dataclass(frozen=True, slots=True)
class FileText:
    """A text file's lines as git numbers them (split on LF), with each line's normalised key."""

    lines: tuple[str, ...]
    keys: tuple[str, ...]
    _where: dict[str, list[int]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_bytes(cls, data: bytes) -> FileText:
        text = data.decode("utf-8", errors="replace")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        keys = tuple(_line_key(normalise(line)) for line in lines)
        return cls(tuple(line.removesuffix("\r") for line in lines), keys)

    def has_span_at(self, start: int, keys: Sequence[str]) -> bool:
        return tuple(keys) == self.keys[start - 1 : start - 1 + len(keys)] and start >= 1

    def occurrences(self, keys: Sequence[str]) -> list[int]:
        """Every 1-based line where `keys` start, adjacent and in order."""
        if not keys:
            return []
        where = self._where
        if not where:
            for i, key in enumerate(self.keys):
                where.setdefault(key, []).append(i)
        # Look up by the span's rarest line, then check the whole span at each candidate.
        pivot = min(range(len(keys)), key=lambda j: len(where.get(keys[j], ())))
        found = []
        for i in where.get(keys[pivot], ()):
            start = i - pivot
            if start >= 0 and self.keys[start : start + len(keys)] == tuple(keys):
                found.append(start + 1)
        return found


@dataclass(frozen=True, slots=True)
class Anchor:
    """What is stored for one citation when it is written."""

    path: str
    start: int
    end: int
    keys: tuple[str, ...]  # each line's normalised key
    span_hash: str  # SHA-256 of the normalised lines joined by LF
    chars: int  # normalised characters in the span: under MIN_MOVE_CHARS it is never looked for elsewhere
    quote: str
    symbol: str | None = None
    blob: str | None = None  # the file's git blob id when it was cited

    @property
    def movable(self) -> bool:
        return self.chars >= MIN_MOVE_CHARS


def anchor_span(
    path: str, text: FileText, start: int, end: int, *, symbol: str | None = None, blob: str | None = None
) -> Anchor:
    """The anchor of lines start..end of `text` (the file at `path` now).

    Raises:
        InvalidItemError: the lines are past the end of the file, or hold only whitespace.
    """
    if end > len(text.lines):
        raise InvalidItemError(
            f"citation of {path}: lines {start}-{end} are past its end (it has {len(text.lines)} lines)"
        )
    lines = text.lines[start - 1 : end]
    norms = [normalise(line) for line in lines]
    if not any(norms):
        raise InvalidItemError(f"citation of {path}: lines {start}-{end} hold only whitespace; cite code")
    quote = next(line.strip() for line in lines if line.strip())
    if len(quote) > QUOTE_CHARS:
        quote = quote[: QUOTE_CHARS - 1] + "…"
    return Anchor(
        path=path,
        start=start,
        end=end,
        keys=text.keys[start - 1 : end],
        span_hash=_span_hash(norms),
        chars=sum(map(len, norms)),
        quote=quote,
        symbol=symbol,
        blob=blob,
    )


@dataclass(frozen=True, slots=True)
class Verdict:
    """A citation's status now, and where its span is when that differs from where it was cited."""

    status: str
    path: str | None = None
    start: int | None = None
    end: int | None = None
    reason: str | None = None

    def public(self) -> dict[str, object]:
        out: dict[str, object] = {"status": self.status}
        if self.path is not None:
            out["now"] = {"path": self.path, "lines": f"{self.start}-{self.end}"}
        if self.reason is not None:
            out["reason"] = self.reason
        return out


class SpanIndex:
    """Where each normalised line occurs across many files (the tracked files of one tree)."""

    def __init__(self, files: Iterable[tuple[str, FileText]]) -> None:
        self._files = dict(files)
        self._where: dict[str, list[tuple[str, int]]] = {}
        for path, text in self._files.items():
            for i, key in enumerate(text.keys):
                self._where.setdefault(key, []).append((path, i))

    def __len__(self) -> int:
        return len(self._files)

    def find(self, keys: Sequence[str], *, besides: str) -> list[tuple[str, int]]:
        """Every (path, 1-based start) of `keys` in a file other than `besides` with the same extension
        (code moves between files of its language; a Python span quoted in the docs has not moved), sorted."""
        if not keys:
            return []
        suffix = _suffix(besides)
        pivot = min(range(len(keys)), key=lambda j: len(self._where.get(keys[j], ())))
        found = []
        for path, i in self._where.get(keys[pivot], ()):
            start = i - pivot
            if (
                path != besides
                and start >= 0
                and _suffix(path) == suffix
                and self._files[path].keys[start : start + len(keys)] == tuple(keys)
            ):
                found.append((path, start + 1))
        return sorted(found)


def _suffix(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


def classify(
    anchor: Anchor,
    own: FileText | None,
    *,
    elsewhere: Callable[[], SpanIndex | None] | None = None,
    symbol_lines: Callable[[], tuple[int, int] | None] | None = None,
) -> Verdict:
    """The status of `anchor` against its file now (`own`, None when the file is gone).

    `elsewhere` gives the other tracked files (called only when the span is not in its own file; None
    outside a git work tree); `symbol_lines` the recorded symbol's lines now (None: gone), and is None
    itself when no parser knows the file's language: a span with a recorded symbol that is not found
    is then `unverifiable` (changed or missing depends on the definition, which cannot be looked for).
    """
    n = len(anchor.keys)
    if own is not None:
        if own.has_span_at(anchor.start, anchor.keys):
            return Verdict("fresh")
        hits = own.occurrences(anchor.keys)
        if hits and (anchor.movable or len(hits) == 1):
            best = min(hits, key=lambda line: (abs(line - anchor.start), line))
            return Verdict("moved", anchor.path, best, best + n - 1)
        if hits:  # a short span found several times in its file: which one it was is a guess
            return Verdict("changed", reason=f"the lines occur {len(hits)} times in the file")
    if anchor.movable and elsewhere is not None:
        index = elsewhere()
        found = index.find(anchor.keys, besides=anchor.path) if index is not None else []
        if len(found) == 1:
            path, line = found[0]
            return Verdict("moved", path, line, line + n - 1)
    if own is None:
        return Verdict("missing", reason="the file is gone")
    if anchor.symbol is not None and symbol_lines is None:
        # Changed or missing turns on whether the definition is still there, which no parser here can say.
        return Verdict("unverifiable", reason=f"no parser for this file's language here to look for {anchor.symbol}")
    if anchor.symbol is not None and symbol_lines is not None:
        lines = symbol_lines()
        if lines is None:
            return Verdict("missing", reason=f"{anchor.symbol} is gone from the file")
        return Verdict("changed", anchor.path, lines[0], lines[1], reason=f"{anchor.symbol} differs")
    return Verdict("changed", reason="the cited lines differ")
