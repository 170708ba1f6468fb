"""A workspace's files as citations see them: the cited file as it is on disk now, and the other files
git tracks (for a span that moved to another file).

Reading is cached by git blob id, the content's own name: a file is read and hashed again only when
its stat signature (mtime, ctime, size, inode) changes, and its lines, keys and definitions are
computed once per blob, shared by every workspace of the process. So a warm check of a citation is
a `stat`, a `realpath` (the path must still lead inside the workspace) and a comparison of a few
dozen line keys: bench/citations.py measures it.

Git is read with pygit2 (libgit2 in C). Blob lookups and the index are its whole use here, and it
answers a blob in microseconds from the process, where the `git` command costs a process start
(about 2 ms) per call and dulwich parses the index and inflates objects in Python, about ten times
slower on this repository's index. Other tracked files are read from the index's blobs (what is
staged or committed), so checking never walks the work tree; the cited file itself is read from disk,
because that is the code an agent is looking at.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from homeport.citations import symbols
from homeport.citations.spans import (
    MAX_SPAN_LINES,
    Anchor,
    FileText,
    SpanIndex,
    Verdict,
    anchor_span,
    classify,
    parse_lines,
)
from homeport.errors import InvalidItemError

__all__ = ["MAX_FILE_BYTES", "Blob", "WorkTree", "blob_id", "work_tree"]

MAX_FILE_BYTES = 2 * 1024 * 1024
_BINARY_PROBE = 8000
_BLOBS_KEPT = 4096
_TREES_KEPT = 32


def blob_id(data: bytes) -> str:
    """The git (SHA-1) blob id of some content, as `git hash-object` computes it."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True, slots=True)
class Blob:
    """One content: its id and lines, or why it cannot be checked; its definitions computed on demand."""

    id: str
    text: FileText | None
    unverifiable: str | None
    data: bytes | None  # kept only for files a parser knows, until their definitions are read

    @classmethod
    def of(cls, data: bytes, path: str) -> Blob:
        ident = blob_id(data)
        if len(data) > MAX_FILE_BYTES:
            return cls(ident, None, f"the file is over {MAX_FILE_BYTES // (1024 * 1024)} MiB", None)
        if b"\0" in data[:_BINARY_PROBE]:
            return cls(ident, None, "the file is binary", None)
        keep = data if symbols.language_of(path) else None
        return cls(ident, FileText.from_bytes(data), None, keep)


class _Blobs:
    """Blobs by id, the least recently used dropped past a bound; definitions by (id, language)."""

    def __init__(self, limit: int) -> None:
        self._items: OrderedDict[str, Blob] = OrderedDict()
        self._definitions: OrderedDict[tuple[str, str], dict[str, tuple[int, int]] | None] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def get(self, ident: str) -> Blob | None:
        with self._lock:
            found = self._items.get(ident)
            if found is not None:
                self._items.move_to_end(ident)
            return found

    def put(self, blob: Blob) -> Blob:
        with self._lock:
            self._items[blob.id] = blob
            while len(self._items) > self._limit:
                self._items.popitem(last=False)
        return blob

    def definitions(self, blob: Blob, path: str) -> dict[str, tuple[int, int]] | None:
        language = symbols.language_of(path)
        if language is None or blob.data is None:
            return None
        key = (blob.id, language)
        with self._lock:
            if key in self._definitions:
                return self._definitions[key]
        found = symbols.definitions(path, blob.data)
        with self._lock:
            self._definitions[key] = found
            while len(self._definitions) > self._limit:
                self._definitions.popitem(last=False)
        return found


_BLOBS = _Blobs(_BLOBS_KEPT)


class WorkTree:
    """One workspace directory: the paths it may cite, its files now, its git repository if any."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))
        self._stats: dict[str, tuple[tuple[int, ...], Blob]] = {}
        self._lock = threading.Lock()
        self._repo: Any = None
        self._prefix = ""  # the workspace root inside the repository's work tree ("" or "sub/dir/")
        self._index_sig: tuple[int, ...] | None = None
        self._index: SpanIndex | None = None
        self._open_repository()

    @property
    def in_git(self) -> bool:
        return self._repo is not None

    def _open_repository(self) -> None:
        try:
            import pygit2
        except ImportError:  # pragma: no cover - a dependency; kept so a broken install degrades to unverifiable
            return
        try:
            found = pygit2.discover_repository(str(self.root))
            repo = pygit2.Repository(found) if found else None
        except (pygit2.GitError, KeyError, ValueError, OSError):
            return
        if repo is None or repo.is_bare or not repo.workdir:
            return
        workdir = Path(os.path.realpath(repo.workdir))
        try:
            inside = self.root.relative_to(workdir).as_posix()
        except ValueError:
            return
        self._repo = repo
        self._prefix = "" if inside == "." else inside + "/"

    # -- paths ------------------------------------------------------------------------------------

    def relative(self, path: str) -> str:
        """`path` as the workspace-relative POSIX path a citation stores.

        Raises:
            InvalidItemError: absolute, with `..`, empty, or leading outside the workspace through a symlink;
                the message names the path.
        """
        if not path or "\0" in path:
            raise InvalidItemError(f"citation path {path!r} is empty or holds a NUL byte")
        pure = PurePosixPath(path.replace("\\", "/"))
        if pure.is_absolute() or path.startswith("~"):
            raise InvalidItemError(
                f"citation path {path!r} is absolute; give it relative to the workspace root {self.root}"
            )
        if ".." in pure.parts:
            raise InvalidItemError(f"citation path {path!r} climbs with '..'; give it relative to {self.root}")
        clean = pure.as_posix()
        if clean in ("", ".") or pure.parts[0] in (".git", ".homeport"):
            raise InvalidItemError(f"citation path {path!r} names no project file")
        if not self._inside(clean):
            raise InvalidItemError(
                f"citation path {path!r} leads outside the workspace {self.root} (through a symlink); "
                "cite files inside it"
            )
        return clean

    def _inside(self, rel: str) -> bool:
        real = os.path.realpath(self.root / rel)
        return real == str(self.root) or real.startswith(str(self.root) + os.sep)

    # -- reading ----------------------------------------------------------------------------------

    def blob(self, rel: str) -> Blob | None:
        """The file's content now (None: no such file), read again only when its stat signature changed."""
        full = self.root / rel
        try:
            st = os.stat(full)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        sig = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        cached = self._stats.get(rel)
        if cached is not None and cached[0] == sig:
            return cached[1]
        if st.st_size > MAX_FILE_BYTES:
            blob = Blob(f"size:{st.st_size}", None, f"the file is over {MAX_FILE_BYTES // (1024 * 1024)} MiB", None)
        else:
            try:
                data = full.read_bytes()
            except OSError:
                return None
            blob = _BLOBS.get(blob_id(data)) or _BLOBS.put(Blob.of(data, rel))
        with self._lock:
            self._stats[rel] = (sig, blob)
        return blob

    def tracked(self) -> SpanIndex | None:
        """The files git's index tracks below the workspace root, by their staged blobs; None outside git."""
        repo = self._repo
        if repo is None:
            return None
        try:
            st = os.stat(os.path.join(repo.path, "index"))
            sig: tuple[int, ...] = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            sig = ()
        with self._lock:
            if self._index is not None and sig == self._index_sig:
                return self._index
            import pygit2

            try:
                return self._read_index(repo, sig)
            except (pygit2.GitError, OSError, ValueError, KeyError):
                return None  # the repository was removed or damaged since: no other file can be searched

    def _read_index(self, repo: Any, sig: tuple[int, ...]) -> SpanIndex:
        """Read the index's tracked files below the workspace root (the caller holds the lock)."""
        index = repo.index
        index.read(True)
        files = []
        for entry in index:
            if not entry.path.startswith(self._prefix) or entry.mode not in (0o100644, 0o100755):
                continue
            ident = str(entry.id)
            blob = _BLOBS.get(ident)
            if blob is None:
                obj = repo.get(entry.id)
                if obj is None:
                    continue
                blob = _BLOBS.put(Blob.of(obj.data, entry.path))
            if blob.text is not None:
                files.append((entry.path[len(self._prefix) :], blob.text))
        self._index, self._index_sig = SpanIndex(files), sig
        return self._index

    # -- citing and checking ----------------------------------------------------------------------

    def anchor(self, path: str, *, lines: str | None = None, symbol: str | None = None) -> Anchor:
        """Anchor a citation of `path` by lines or by symbol as the file is now.

        Raises:
            InvalidItemError: a path outside the workspace or not a file, a binary or too large file, bad
                lines, a symbol not in the file or in a language no installed parser reads.
        """
        rel = self.relative(path)
        if (lines is None) == (symbol is None):
            raise InvalidItemError(
                f"citation of {rel}: give exactly one of lines ('40-58') or symbol ('Retry.schedule')"
            )
        blob = self.blob(rel)
        if blob is None:
            raise InvalidItemError(f"citation path {rel!r} is not a file in the workspace {self.root}")
        if blob.text is None:
            raise InvalidItemError(f"citation of {rel}: {blob.unverifiable}; cite a text file")
        found = _BLOBS.definitions(blob, rel)
        if symbol is not None:
            if found is None:
                raise InvalidItemError(
                    f"citation of {rel}: no installed parser reads this language, so symbol {symbol!r} cannot be "
                    "found; cite lines instead (or install homeport[citations])"
                )
            if symbol not in found:
                known = ", ".join(list(found)[:12]) or "none"
                raise InvalidItemError(f"citation of {rel}: symbol {symbol!r} is not defined there (found: {known})")
            start, end = found[symbol]
            # A definition longer than a citation may be is cited by its first MAX_SPAN_LINES lines.
            end = min(end, start + MAX_SPAN_LINES - 1)
            return anchor_span(rel, blob.text, start, end, symbol=symbol, blob=blob.id)
        assert lines is not None
        start, end = parse_lines(lines, rel)
        inner = symbols.enclosing(found, start, end) if found else None
        return anchor_span(rel, blob.text, start, end, symbol=inner, blob=blob.id)

    def check(self, anchors: Sequence[Anchor]) -> list[Verdict]:
        """Each anchor's status now, in order."""
        if self._repo is None and os.path.exists(self.root / ".git"):
            self._open_repository()  # `git init` since this process first looked
        if self._repo is None:
            return [Verdict("unverifiable", reason="the workspace is not a git work tree") for _ in anchors]
        return [self._check_one(anchor) for anchor in anchors]

    def _check_one(self, anchor: Anchor) -> Verdict:
        if not self._inside(anchor.path):
            return Verdict("unverifiable", reason="the path leads outside the workspace now")
        blob = self.blob(anchor.path)
        if blob is not None and blob.text is None:
            return Verdict("unverifiable", reason=blob.unverifiable)
        text = blob.text if blob is not None else None

        def symbol_lines() -> tuple[int, int] | None:
            assert blob is not None
            return (_BLOBS.definitions(blob, anchor.path) or {}).get(anchor.symbol or "")

        has_parser = blob is not None and _BLOBS.definitions(blob, anchor.path) is not None if anchor.symbol else False
        return classify(anchor, text, elsewhere=self.tracked, symbol_lines=symbol_lines if has_parser else None)


class _Trees:
    def __init__(self, limit: int) -> None:
        self._items: OrderedDict[Path, WorkTree] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def get(self, root: Path) -> WorkTree:
        with self._lock:
            found = self._items.get(root)
            if found is not None:
                self._items.move_to_end(root)
                return found
        tree = WorkTree(root)
        with self._lock:
            self._items[root] = tree
            while len(self._items) > self._limit:
                self._items.popitem(last=False)
        return tree


_TREES = _Trees(_TREES_KEPT)


def work_tree(root: Path) -> WorkTree:
    """The process's `WorkTree` of a workspace root (kept for the next call; its caches check themselves)."""
    return _TREES.get(root)
