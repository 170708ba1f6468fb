"""Replay real histories: cite spans at an old commit, classify them at later ones, compare with git.

    python3 bench/citation_replay.py                      # this repository, click and httpx; writes the report
    python3 bench/citation_replay.py --repo DIR --spans N # any repository (a bare git directory works)

For each repository, the first-parent history of HEAD gives an old commit C0 and later ones
C0+gap (gaps in `--gaps`). Spans are drawn at C0 from the tracked Python files with a fixed seed:
half are whole definitions (functions and classes, at most 60 lines), half are windows of 1-25
lines anywhere. Each span is anchored exactly as `log_decision(cites=...)` anchors it
(`homeport.citations.spans.anchor_span`), and classified at each later commit by the same checker
the server runs on read (`classify`, with every tracked text file of that commit as `elsewhere`).
No symbol is recorded, so statuses come from the code alone.

Ground truth comes from git's own line tracking, computed independently of the checker:
`git blame --line-porcelain -w -M -C --first-parent C0..C1 -- FILE` for the cited file's path at C1
and every Python file added or changed between C0 and C1. A line that git carries unchanged from
C0 is blamed on the boundary C0 with its path and line number there, so each cited line maps to
the places it survives at C1. Then, per span:

    fresh    every line survives in the same file at the same line numbers
    moved    every line survives, adjacent and in order, in one file, somewhere else (that place)
    changed  otherwise, when the file still exists at C1 under the same path
    missing  otherwise (the file is gone from that path)

`-w` makes git ignore whitespace as the checker does. A blank line of a span only has to be blank at
its offset: which of several blank lines git's diff keeps when blank lines are added or removed next
to them is arbitrary (it aligns them either way), so tracking them makes the truth a coin toss (on
this repository's history it called 9 classifications of 3 spans "changed" whose every line is still
there, in order). Where git says a line was rewritten but the whole span's text is unchanged at the
place git carries its other lines to (a change reverted, a line deleted and re-added), the truth is
that place, and the number of such classifications is reported ("identical, git says rewritten"):
the checker promises that the code is as cited, not that its history is.

Reported: status accuracy (checker status equals the truth's, and for moved the same place), moved
precision (of the spans the checker calls moved, those git moves to the same place), fresh when
stale (the checker says fresh, git says changed, moved or missing; must be 0), a confusion table,
and the checker's cost per citation. Nothing of the other repositories is copied into this one.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import re
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pygit2

from homeport.citations.spans import Anchor, FileText, SpanIndex, anchor_span, classify
from homeport.citations.symbols import definitions
from homeport.citations.worktree import MAX_FILE_BYTES

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_REPOS = [
    # (name, git directory, spans, first-parent commits between C0 and HEAD)
    ("homeport (this repository)", Path(__file__).resolve().parents[1], 300, 270),
    ("pallets/click", Path("/work/.mirror/pallets+click/repo"), 350, 1000),
    ("encode/httpx", Path("/work/.mirror/encode+httpx/repo"), 350, 1000),
]
STATUSES = ("fresh", "moved", "changed", "missing")


@dataclass
class Case:
    repo: str
    anchor: Anchor
    c1: str
    truth: str
    truth_place: tuple[str, int] | None
    got: str
    got_place: tuple[str, int] | None
    identical_rewritten: bool


def git(gitdir: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", f"--git-dir={gitdir}", *args], capture_output=True, text=True, errors="replace", check=True
    )
    return done.stdout


class Trees:
    """The text files of commits (path -> FileText), read with pygit2 and kept by blob id."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self._texts: dict[str, FileText | None] = {}
        self._files: dict[str, dict[str, FileText]] = {}

    def text(self, oid: pygit2.Oid) -> FileText | None:
        key = str(oid)
        if key not in self._texts:
            data = self.repo[oid].data
            ok = len(data) <= MAX_FILE_BYTES and b"\0" not in data[:8000]
            self._texts[key] = FileText.from_bytes(data) if ok else None
        return self._texts[key]

    def files(self, commit: str) -> dict[str, FileText]:
        if commit not in self._files:
            out: dict[str, FileText] = {}
            stack = [("", self.repo[commit].tree)]
            while stack:
                prefix, tree = stack.pop()
                for entry in tree:
                    path = prefix + entry.name
                    if entry.type_str == "tree":
                        stack.append((path + "/", entry))
                    elif entry.type_str == "blob" and entry.filemode in (0o100644, 0o100755):
                        text = self.text(entry.id)
                        if text is not None:
                            out[path] = text
            self._files[commit] = out
        return self._files[commit]


def draw_spans(
    repo: pygit2.Repository,
    trees: Trees,
    c0: str,
    count: int,
    rng: random.Random,
    symbols: dict[tuple[str, int, int], str],
) -> list[Anchor]:
    """Spans at C0; `symbols` gets the name of each span that is a whole definition, by (path, start, end)."""
    files = {p: t for p, t in trees.files(c0).items() if p.endswith(".py") and len(t.lines) >= 5}
    paths = sorted(files)
    anchors: list[Anchor] = []
    seen: set[tuple[str, int, int]] = set()
    tries = 0
    while len(anchors) < count and tries < count * 50:
        tries += 1
        path = rng.choice(paths)
        text = files[path]
        if rng.random() < 0.5:
            data = "\n".join(text.lines).encode()
            found = definitions(path, data) or {}
            named = [(name, (a, b)) for name, (a, b) in found.items() if b - a < 60]
            if not named:
                continue
            name, (start, end) = rng.choice(named)
            symbols.setdefault((path, start, end), name)
        else:
            start = rng.randint(1, len(text.lines))
            end = min(len(text.lines), start + rng.randint(0, 24))
        if (path, start, end) in seen or not any(text.lines[i].strip() for i in range(start - 1, end)):
            continue
        seen.add((path, start, end))
        anchors.append(anchor_span(path, text, start, end))
    return anchors


def changed_python_files(gitdir: Path, c0: str, c1: str) -> list[str]:
    out = git(gitdir, "diff", "--name-only", "--diff-filter=AMR", c0, c1, "--", "*.py")
    return [line for line in out.splitlines() if line]


def blame_survivals(gitdir: Path, c0: str, c1: str, path: str) -> dict[tuple[str, int], list[int]]:
    """(path at C0, line at C0) -> the lines of `path` at C1 that git carries unchanged from it."""
    try:
        out = git(gitdir, "blame", "--line-porcelain", "-w", "-M", "-C", "--first-parent", f"{c0}..{c1}", "--", path)
    except subprocess.CalledProcessError:
        return {}
    found: dict[tuple[str, int], list[int]] = {}
    sha = orig = final = None
    filename = None
    for line in out.splitlines():
        if line.startswith("\t"):
            if sha == c0 and filename is not None and orig is not None and final is not None:
                found.setdefault((filename, orig), []).append(final)
            sha = orig = final = filename = None
            continue
        parts = line.split(" ")
        if sha is None and len(parts) >= 3 and len(parts[0]) == 40:
            sha, orig, final = parts[0], int(parts[1]), int(parts[2])
        elif line.startswith("filename "):
            filename = line[len("filename ") :]
    return found


def truth_of(
    anchor: Anchor,
    survivals: dict[str, dict[tuple[str, int], list[int]]],
    exists: bool,
    texts: dict[str, FileText],
    before: FileText,
) -> tuple[str, tuple[str, int] | None, bool]:
    lines = range(anchor.start, anchor.end + 1)
    # Which blank line git keeps when blank lines are inserted or removed around it is arbitrary (its
    # diff aligns them either way), so a blank line of the span only has to be blank at its offset.
    blank = {k for k, line in enumerate(lines) if not before.lines[line - 1].strip()}
    anchor_k = min(set(range(len(lines))) - blank)
    anchor_line = anchor.start + anchor_k

    def survives(target: str, first: int) -> bool:
        mapping, text = survivals[target], texts.get(target)
        for k, line in enumerate(lines):
            if k in blank:
                if text is None or first + k > len(text.lines) or text.lines[first + k - 1].strip():
                    return False
            elif first + k not in mapping.get((anchor.path, line), []):
                return False
        return True

    # Every file at C1 where the first non-blank line survives, tried the cited path first.
    for target in sorted(survivals, key=lambda p: (p != anchor.path, p)):
        for found in sorted(survivals[target].get((anchor.path, anchor_line), [])):
            first = found - anchor_k
            if first >= 1 and survives(target, first):
                if target == anchor.path and first == anchor.start:
                    return "fresh", None, False
                return "moved", (target, first), False
    # Git says some line was rewritten. Where the lines it does carry agree on one place (each at the
    # same offset from the span's first line), and the whole span's text is there unchanged, the code is
    # as cited and only its history differs: truth is that place (reported as "identical, git says
    # rewritten"). The place comes from git's tracking of the other lines, the check from the text.
    votes: Counter[tuple[str, int]] = Counter()
    for target, mapping in survivals.items():
        for k, line in enumerate(lines):
            for found in mapping.get((anchor.path, line), []):
                votes[(target, found - k)] += 1
    for (target, first), count in votes.most_common(1):
        text = texts.get(target)
        if count * 2 >= len(lines) and text is not None and text.has_span_at(first, anchor.keys):
            same = (target, first) == (anchor.path, anchor.start)
            return ("fresh", None, True) if same else ("moved", (target, first), True)
    return ("changed" if exists else "missing"), None, False


def replay(
    name: str, gitdir: Path, spans: int, gaps: list[int], back: int, seed: int, head: str
) -> tuple[list[Case], float, list[str]]:
    repo = pygit2.Repository(str(gitdir))
    history = git(gitdir, "rev-list", "--first-parent", head).split()[::-1]  # oldest first
    c0_index = max(0, len(history) - 1 - back)
    c0 = history[c0_index]
    trees = Trees(repo)
    rng = random.Random(seed)
    symbols: dict[tuple[str, int, int], str] = {}
    anchors = draw_spans(repo, trees, c0, spans, rng, symbols)
    cases: list[Case] = []
    spent = 0.0
    checks = 0
    commits = [c0]
    for gap in gaps:
        c1 = history[min(len(history) - 1, c0_index + gap)]
        commits.append(c1)
        files = trees.files(c1)
        cited = {a.path for a in anchors}
        targets = sorted((cited & set(files)) | set(changed_python_files(gitdir, c0, c1)))
        survivals = {path: blame_survivals(gitdir, c0, c1, path) for path in targets}
        index = SpanIndex(files.items())
        for anchor in anchors:
            own = files.get(anchor.path)
            started = time.perf_counter()
            verdict = classify(anchor, own, elsewhere=lambda index=index: index)
            spent += time.perf_counter() - started
            checks += 1
            before = trees.files(c0)[anchor.path]
            truth, place, identical = truth_of(anchor, survivals, anchor.path in files, files, before)
            got_place = (verdict.path, verdict.start) if verdict.status == "moved" else None
            assert verdict.path is None or verdict.start is not None
            cases.append(Case(name, anchor, c1, truth, place, verdict.status, got_place, identical))  # type: ignore[arg-type]
            symbol = symbols.get((anchor.path, anchor.start, anchor.end))
            if symbol is not None:
                cases.append(with_symbol(name, anchor, symbol, own, index, c1, truth, place, identical))
        print(f"  {name} C0+{gap}: {len(anchors)} spans, {len(targets)} files blamed", file=sys.stderr)
    return cases, spent / max(checks, 1), commits


def with_symbol(
    repo: str,
    anchor: Anchor,
    symbol: str,
    own: FileText | None,
    index: SpanIndex,
    c1: str,
    truth: str,
    place: tuple[str, int] | None,
    identical: bool,
) -> Case:
    """The same span cited by its definition's name: the checker then says `missing` when the definition is
    gone from the file. Truth: git's status, except that a span git calls changed is missing when no line
    of the file defines the name any more (`def NAME` / `class NAME`, read with a regular expression,
    not with the checker's parser)."""
    anchored = dataclasses.replace(anchor, symbol=symbol)
    data = "\n".join(own.lines).encode() if own is not None else b""
    verdict = classify(
        anchored,
        own,
        elsewhere=lambda: index,
        symbol_lines=(lambda: (definitions(anchor.path, data) or {}).get(symbol)) if own is not None else None,
    )
    last = re.escape(symbol.rsplit(".", 1)[-1])
    defines = re.compile(rf"^\s*(async\s+)?(def|class)\s+{last}\b")
    if truth == "changed" and own is not None and not any(defines.match(line) for line in own.lines):
        truth = "missing"
    got_place = (verdict.path, verdict.start) if verdict.status == "moved" else None
    return Case(repo + " [symbol]", anchored, c1, truth, place, verdict.status, got_place, identical)  # type: ignore[arg-type]


def summarise(cases: list[Case]) -> dict[str, float | int]:
    right = sum(c.got == c.truth and (c.got != "moved" or c.got_place == c.truth_place) for c in cases)
    moved = [c for c in cases if c.got == "moved"]
    moved_right = sum(c.truth == "moved" and c.got_place == c.truth_place for c in moved)
    return {
        "classified": len(cases),
        "accuracy": right / len(cases) if cases else float("nan"),
        "moved": len(moved),
        "moved_precision": moved_right / len(moved) if moved else float("nan"),
        "fresh_when_stale": sum(c.got == "fresh" and c.truth != "fresh" for c in cases),
        "identical_rewritten": sum(c.identical_rewritten for c in cases),
    }


def confusion(cases: list[Case]) -> str:
    counts = Counter((c.truth, c.got) for c in cases)
    rows = ["| truth \\ checker | " + " | ".join(STATUSES) + " |", "|---|" + "---:|" * len(STATUSES)]
    for truth in STATUSES:
        rows.append(f"| {truth} | " + " | ".join(str(counts[(truth, got)]) for got in STATUSES) + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, action="append", help="a git directory (repeatable); default: three")
    parser.add_argument("--spans", type=int, default=None, help="spans per repository (default: 350, 350, 300)")
    parser.add_argument("--gaps", default="25,100,250,800", help="later commits, in first-parent commits after C0")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument(
        "--head",
        type=lambda text: dict(part.split("=", 1) for part in text.split(",")),
        default={"homeport (this repository)": "68c1c29"},
        help="NAME=COMMIT,...: replay up to that commit instead of HEAD (this repository grows every day)",
    )
    parser.add_argument("--report", type=Path, default=RESULTS / "2026-11-28-citation-replay.md")
    parser.add_argument("--no-report", action="store_true")
    args = parser.parse_args()
    gaps = [int(g) for g in args.gaps.split(",")]
    repos = (
        [(str(p), p, args.spans or 350, max(gaps) + 10) for p in args.repo]
        if args.repo
        else [(n, p, args.spans or s, b) for n, p, s, b in DEFAULT_REPOS]
    )
    everything: list[Case] = []
    by_symbol: list[Case] = []
    lines = []
    symbol_lines = []
    used: list[str] = []
    for name, path, spans, back in repos:
        gitdir = _gitdir(path)
        head = args.head.get(name, "HEAD")
        cases, cost, commits = replay(name, gitdir, spans, gaps, back, args.seed, head)
        named = [c for c in cases if c.repo.endswith("[symbol]")]
        cases = [c for c in cases if not c.repo.endswith("[symbol]")]
        by_symbol.extend(named)
        n = summarise(named)
        symbol_lines.append(
            f"| {name} | {len({(c.anchor.path, c.anchor.start, c.anchor.end) for c in named})} | {n['classified']} | "
            f"{n['accuracy']:.1%} | {n['moved']} | {n['moved_precision']:.1%} | {n['fresh_when_stale']} | "
            f"{sum(c.got == 'missing' for c in named)} / {sum(c.truth == 'missing' for c in named)} |"
        )
        used.append(f"- {name}: C0 `{commits[0][:12]}`, later " + ", ".join(f"`{c[:12]}`" for c in commits[1:]))
        everything.extend(cases)
        s = summarise(cases)
        lines.append(
            f"| {name} | {len({(c.anchor.path, c.anchor.start, c.anchor.end) for c in cases})} | {s['classified']} | "
            f"{s['accuracy']:.1%} | {s['moved']} | {s['moved_precision']:.1%} | {s['fresh_when_stale']} | "
            f"{s['identical_rewritten']} | {cost * 1e6:.0f} µs |"
        )
    total = summarise(everything)
    report = "\n".join(
        [
            "# Citations replayed on real histories (issue 23)",
            "",
            "Command: `python3 bench/citation_replay.py` (seed 23, gaps " + args.gaps + " first-parent commits).",
            "",
            "| repository | spans cited at C0 | classifications | status accuracy | moved | moved precision | "
            "fresh when stale | identical, git says rewritten | checker per citation |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
            *lines,
            f"| **all** | | {total['classified']} | **{total['accuracy']:.1%}** | {total['moved']} | "
            f"**{total['moved_precision']:.1%}** | **{total['fresh_when_stale']}** | "
            f"{total['identical_rewritten']} | |",
            "",
            "The spans that are whole definitions, cited again by their name (`symbol`): the checker then",
            "says `missing` when the definition is gone from the file, and git's `changed` becomes `missing`",
            "in the truth when no line of the file defines the name any more (a regular expression on",
            "`def NAME` / `class NAME`, not the checker's parser):",
            "",
            "| repository | definitions | classifications | status accuracy | moved | moved precision | "
            "fresh when stale | missing: checker / truth |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
            *symbol_lines,
            f"| **all** | | {summarise(by_symbol)['classified']} | **{summarise(by_symbol)['accuracy']:.1%}** | "
            f"{summarise(by_symbol)['moved']} | **{summarise(by_symbol)['moved_precision']:.1%}** | "
            f"**{summarise(by_symbol)['fresh_when_stale']}** | |",
            "",
            "Commits (C0, then C0 + each gap; the same spans at each):",
            "",
            *used,
            "",
            "Truth (rows) against the checker (columns), all repositories:",
            "",
            confusion(everything),
            "",
            "Reading it: status accuracy counts a `moved` as right only at git's place. The checker's",
            "misses are short spans (a line of a few characters found several times in its file: `changed`",
            "where git knows which copy it was), a duplicated span whose nearest copy is not the one git",
            "followed, and a span that moved into a renamed file where it also occurs elsewhere (`missing`).",
            "The checker per citation is the first check of each span at each commit (cold: each file's line",
            "map is built once, then shared); warm checks are measured by `bench/citations.py`.",
            "",
        ]
    )
    print(report)
    right = lambda c: c.got == c.truth and (c.got != "moved" or c.got_place == c.truth_place)  # noqa: E731
    mistakes = [c for c in everything + by_symbol if not right(c)]
    for c in mistakes[:40]:
        print(
            f"  {c.repo} {c.c1[:8]} {c.anchor.path}:{c.anchor.start}-{c.anchor.end} ({c.anchor.chars} chars): "
            f"truth {c.truth} {c.truth_place}, checker {c.got} {c.got_place}",
            file=sys.stderr,
        )
    if not args.no_report:
        args.report.write_text(report)


def _gitdir(path: Path) -> Path:
    return Path(git(path, "rev-parse", "--absolute-git-dir").strip()) if (path / "HEAD").exists() else path / ".git"


if __name__ == "__main__":
    main()
