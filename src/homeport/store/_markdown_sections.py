"""Split an instructions file (CLAUDE.md, AGENTS.md, ...) into sections by heading, and tell rules apart.

Every non-blank line of the file lands in exactly one section: the text before the first heading
is a section named after the file; each ATX heading (`#` to `######`, outside fenced code) starts
one. A heading with no text of its own directly above a deeper heading is not a section: it is
part of the heading path of the sections below it, and its line goes to the first of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["RULE_FILES", "Section", "is_rule", "split_sections"]

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# A heading path with one of these words makes its section a rule (a system pattern).
_RULE_HEADING = re.compile(
    r"\b(rules?|conventions?|guidelines?|standards?|style|patterns?|practices?|principles?|polic(y|ies)|"
    r"do'?s|don'?ts|must|never|always)\b",
    re.IGNORECASE,
)
# So does a body whose list items, at least half of them, start with one of these words.
_RULE_ITEM = re.compile(
    r"^\s*(?:[-*+]|\d+[.)])\s+(?:\*\*|__)?(always|never|must|should|don'?t|do not|avoid|prefer|use|keep|"
    r"make sure|ensure|only)\b",
    re.IGNORECASE,
)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\S")
# Files whose every section is a rule, whatever its heading says.
RULE_FILES = frozenset({".cursorrules"})


@dataclass
class Section:
    """One item of an instructions file: its heading path, the line it starts at, and its text."""

    path: tuple[str, ...]
    line: int
    lines: list[int] = field(default_factory=list)  # every line number it holds, blank ones included
    body: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.body).strip()


def split_sections(text: str) -> list[Section]:
    """The sections of `text`, in file order; a preamble has the empty heading path."""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    current = Section((), 1)
    pending: list[int] = []  # lines of a heading folded into the next section's path
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        heading = None if fence else _HEADING.match(line)
        if heading is None or not heading.group(2).strip():
            fence = _next_fence(fence, line)
            if not current.path and not current.text and line.strip():
                current.line = number  # a preamble starts at its first non-blank line
            current.lines.append(number)
            current.body.append(line)
            continue
        level, title = len(heading.group(1)), heading.group(2).strip()
        if current.path and not current.text and stack and level > stack[-1][0]:
            pending.extend(current.lines)  # a heading with nothing of its own above a deeper one
        elif current.path or current.text:
            sections.append(current)
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        current = Section(tuple(t for _, t in stack), number, [*pending, number])
        pending = []
    if current.path or current.text:
        sections.append(current)
    return sections


def _next_fence(fence: str | None, line: str) -> str | None:
    marker = _FENCE.match(line)
    if marker is None:
        return fence
    run = marker.group(1)
    if fence is None:
        return run
    # A closing fence: the same character, at least as long, nothing after it.
    closes = run[0] == fence[0] and len(run) >= len(fence) and not line.strip()[len(run) :].strip()
    return None if closes else fence


def is_rule(section: Section, file_name: str) -> bool:
    """A rule or convention (a system pattern) rather than other instructions (custom data).

    Decided in this order: every section of `.cursorrules`; a heading in the path that says
    rule, convention, guideline, standard, style, pattern, practice, principle, policy, do/don't,
    must, never or always; at least half of the section's list items starting with always,
    never, must, should, don't, do not, avoid, prefer, use, keep, make sure, ensure or only.
    """
    if file_name in RULE_FILES:
        return True
    if any(_RULE_HEADING.search(title) for title in section.path):
        return True
    items = [line for line in section.body if _LIST_ITEM.match(line)]
    return bool(items) and 2 * sum(1 for line in items if _RULE_ITEM.match(line)) >= len(items)
