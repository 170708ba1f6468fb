"""The pure checker: how an anchored span compares with a file's text now (homeport.citations.spans)."""

from __future__ import annotations

import ast
import inspect

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from homeport.citations import spans
from homeport.citations.spans import (
    MIN_MOVE_CHARS,
    FileText,
    SpanIndex,
    anchor_span,
    classify,
    normalise,
    parse_lines,
    worst,
)
from homeport.errors import InvalidItemError

# Lines of code-like text; every one distinct so a span's place is never ambiguous in the properties.
LINES = st.lists(
    st.from_regex(r"[a-z_]{3,12} = [a-z0-9_()+*]{3,20}", fullmatch=True), min_size=6, max_size=40, unique=True
)


def text_of(lines: list[str]) -> FileText:
    return FileText.from_bytes(("\n".join(lines) + "\n").encode())


@st.composite
def cited(draw):
    lines = draw(LINES)
    start = draw(st.integers(1, len(lines)))
    end = draw(st.integers(start, min(len(lines), start + 8)))
    return lines, start, end


@given(cited(), st.data())
def test_an_edit_outside_the_span_keeps_it_fresh_or_moved_never_worse(case, data):
    lines, start, end = case
    anchor = anchor_span("a.py", text_of(lines), start, end)
    edited = list(lines)
    # Change, insert or delete lines strictly after the span: it stays fresh at its place.
    after = data.draw(st.integers(end, len(lines)))
    edited[after:] = data.draw(st.lists(st.from_regex(r"[A-Z]{4,9}", fullmatch=True), max_size=5))
    assert classify(anchor, text_of(edited)).status == "fresh"
    # Insert lines before it: it moves by that many lines, in the same file.
    added = data.draw(st.lists(st.from_regex(r"[A-Z]{4,9}", fullmatch=True), min_size=1, max_size=5))
    shifted = [*lines[: start - 1], *added, *lines[start - 1 :]]
    verdict = classify(anchor, text_of(shifted))
    assert (verdict.status, verdict.path, verdict.start, verdict.end) == (
        "moved",
        "a.py",
        start + len(added),
        end + len(added),
    )


@given(cited(), st.data())
def test_any_change_inside_the_span_is_never_fresh(case, data):
    lines, start, end = case
    anchor = anchor_span("a.py", text_of(lines), start, end)
    edited = list(lines)
    at = data.draw(st.integers(start - 1, end - 1))
    new = data.draw(st.from_regex(r"[a-z_]{3,12} = [A-Z0-9]{1,6}", fullmatch=True))
    assume(normalise(new) != normalise(edited[at]))
    edited[at] = new
    assert classify(anchor, text_of(edited)).status in ("changed", "moved")
    assert classify(anchor, text_of(edited)).status != "fresh"


@given(cited())
def test_whitespace_only_edits_keep_a_span_fresh(case):
    lines, start, end = case
    anchor = anchor_span("a.py", text_of(lines), start, end)
    reformatted = [f"    {line.replace(' = ', '=')}  " for line in lines]
    assert classify(anchor, text_of(reformatted)).status == "fresh"


def test_a_span_that_left_its_file_is_found_once_in_another_as_moved():
    body = ["def schedule(job, tries):", "    for attempt in range(tries):", "        job.run(attempt)"]
    anchor = anchor_span("old.py", text_of(["import x", *body]), 2, 4)
    index = SpanIndex([("new.py", text_of(["# moved here", *body])), ("other.py", text_of(["y = 1"]))])
    verdict = classify(anchor, text_of(["import x"]), elsewhere=lambda: index)
    assert (verdict.status, verdict.path, verdict.start, verdict.end) == ("moved", "new.py", 2, 4)
    assert classify(anchor, None, elsewhere=lambda: index).status == "moved"


def test_a_span_found_in_two_other_files_is_not_called_moved():
    body = ["def schedule(job, tries):", "    for attempt in range(tries):"]
    anchor = anchor_span("old.py", text_of(body), 1, 2)
    index = SpanIndex([("a.py", text_of(body)), ("b.py", text_of(body))])
    assert classify(anchor, None, elsewhere=lambda: index).status == "missing"


def test_a_short_span_is_never_looked_for_in_other_files():
    anchor = anchor_span("old.py", text_of(["return None"]), 1, 1)
    assert anchor.chars < MIN_MOVE_CHARS
    index = SpanIndex([("b.py", text_of(["x", "return None"]))])
    assert classify(anchor, None, elsewhere=lambda: index).status == "missing"
    # In its own file, once, it is still placed.
    assert classify(anchor, text_of(["x", "return None"])).status == "moved"
    assert classify(anchor, text_of(["x", "return None", "y", "return None"])).status == "changed"


def test_a_recorded_symbol_decides_changed_or_missing():
    anchor = anchor_span("a.py", text_of(["def f():", "    return 1"]), 1, 2, symbol="f")
    now = text_of(["def f():", "    return 2"])
    assert classify(anchor, now, symbol_lines=lambda: (1, 2)).status == "changed"
    assert classify(anchor, now, symbol_lines=lambda: None).status == "missing"
    # No parser here (the grammars are an extra): whether the definition is gone cannot be said.
    assert classify(anchor, now).status == "unverifiable"
    assert classify(anchor, now.__class__.from_bytes(b"def f():\n    return 1\n")).status == "fresh"


@pytest.mark.parametrize(("spec", "expected"), [("40-58", (40, 58)), ("7", (7, 7)), (" 3 - 4 ", (3, 4))])
def test_lines_are_a_line_or_a_range(spec, expected):
    assert parse_lines(spec, "a.py") == expected


@pytest.mark.parametrize("spec", ["0", "9-3", "a-b", "1-1000", ""])
def test_bad_lines_are_refused_naming_the_file(spec):
    with pytest.raises(InvalidItemError, match=r"a\.py"):
        parse_lines(spec, "a.py")


def test_a_span_past_the_end_or_of_whitespace_only_is_refused():
    with pytest.raises(InvalidItemError, match="past its end"):
        anchor_span("a.py", text_of(["x = 1"]), 1, 3)
    with pytest.raises(InvalidItemError, match="only whitespace"):
        anchor_span("a.py", FileText.from_bytes(b"x = 1\n\n   \n"), 2, 3)


def test_the_worst_status_orders_fresh_moved_unverifiable_changed_missing():
    assert worst(["fresh", "moved"]) == "moved"
    assert worst(["moved", "unverifiable"]) == "unverifiable"
    assert worst(["unverifiable", "changed", "fresh"]) == "changed"
    assert worst(["changed", "missing"]) == "missing"
    assert worst([]) is None


def test_the_checker_does_no_io():
    tree = ast.parse(inspect.getsource(spans))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"__future__", "hashlib", "collections", "dataclasses", "homeport"}
