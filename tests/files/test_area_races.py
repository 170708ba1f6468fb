"""File-area operations stay inside their area even when a directory or file is swapped for a symlink
at any moment during the call.

The swap is made deterministic: every OS call the operation makes is counted, and the test runs the
operation once per position, swapping just before that call. Whatever the position, the call either
fails with `FileAreaError` or touches only the area, and nothing outside changes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from homeport.errors import FileAreaError
from homeport.files.areas import area_root, delete_file, file_info, list_folder_entries, read_file, write_file

ORG, AGENT = "acme", "ada"
SECRET = "secret"
_COUNTED = ("open", "lstat", "stat", "scandir", "readlink", "mkdir", "replace", "unlink", "rmdir", "listdir")
_REAL = {name: getattr(os, name) for name in _COUNTED}
_real_symlink, _real_rename = os.symlink, os.rename


def _build(tmp: Path) -> tuple[Path, Path]:
    data = tmp / "data"
    root = area_root(data, ORG, AGENT, "private")
    (root / "inside").mkdir(parents=True)
    (root / "inside" / "file.txt").write_text("in", encoding="utf-8")
    outside = tmp / "outside"
    (outside / "private" / "inside").mkdir(parents=True)
    for d in (outside, outside / "private" / "inside"):
        (d / "file.txt").write_text(SECRET, encoding="utf-8")
        (d / "secret.txt").write_text(SECRET, encoding="utf-8")
    return data, outside


def _snapshot(path: Path) -> dict[str, Any]:
    return {
        p.relative_to(path).as_posix(): (p.read_bytes() if p.is_file() and not p.is_symlink() else None)
        for p in sorted(path.rglob("*"))
    }


def _swap(target: Path, link_to: Path) -> None:
    """Move `target` aside and put a symlink to `link_to` in its place (what an attacker with disk access does)."""
    _real_rename(target, target.with_name(target.name + ".moved"))
    _real_symlink(link_to, target)


@contextlib.contextmanager
def _swap_before_call(position: int, swap: Callable[[], None]) -> Iterator[list[int]]:
    count = [0]

    def wrap(name: str) -> Callable[..., Any]:
        real = _REAL[name]

        def counted(*args: Any, **kwargs: Any) -> Any:
            if count[0] == position:
                swap()
            count[0] += 1
            return real(*args, **kwargs)

        return counted

    patches = {name: wrap(name) for name in _COUNTED}
    for name, fn in patches.items():
        setattr(os, name, fn)
    try:
        yield count
    finally:
        for name, fn in _REAL.items():
            setattr(os, name, fn)


OPERATIONS: dict[str, Callable[[Path], Any]] = {
    "read": lambda data: read_file(data, ORG, AGENT, "private", "inside/file.txt"),
    "info": lambda data: file_info(data, ORG, AGENT, "private", "inside/file.txt"),
    "list": lambda data: list_folder_entries(data, ORG, AGENT, "private", "inside", recursive=True),
    "list-all": lambda data: list_folder_entries(data, ORG, AGENT, "private", "", recursive=True),
    "write": lambda data: write_file(data, ORG, AGENT, "private", "inside/file.txt", "new"),
    "write-new": lambda data: write_file(data, ORG, AGENT, "private", "inside/new.txt", "new"),
    "delete": lambda data: delete_file(data, ORG, AGENT, "private", "inside/file.txt"),
}


def _swaps(data: Path, outside: Path) -> dict[str, Callable[[], None]]:
    root = area_root(data, ORG, AGENT, "private")
    return {
        "folder": lambda: _swap(root / "inside", outside),
        "file": lambda: _swap(root / "inside" / "file.txt", outside / "secret.txt"),
        "area": lambda: _swap(root.parent, outside),  # workspaces/ada -> a tree shaped like the area
    }


def _check(result: Any) -> None:
    """Nothing read from outside shows up in a result."""
    text = repr(result)
    assert SECRET not in text and hashlib.sha256(SECRET.encode()).hexdigest() not in text
    assert "secret.txt" not in text


@pytest.mark.parametrize("swap_kind", ["folder", "file", "area"])
@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_a_symlink_swapped_in_at_any_moment_never_leads_out_of_the_area(
    tmp_path: Path, operation: str, swap_kind: str
) -> None:
    data, outside = _build(tmp_path / "count")
    with _swap_before_call(-1, lambda: None) as count:
        OPERATIONS[operation](data)
    calls = count[0]
    assert calls > 0
    for position in range(calls + 1):
        base = tmp_path / f"run{position}"
        data, outside = _build(base)
        before = _snapshot(outside)
        with _swap_before_call(position, _swaps(data, outside)[swap_kind]):
            try:
                result = OPERATIONS[operation](data)
            except FileAreaError:
                result = None
        _check(result)
        after = {k: v for k, v in _snapshot(outside).items()}
        assert after == before, f"{operation} changed {outside} when {swap_kind} was swapped before call {position}"
