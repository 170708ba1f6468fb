"""Real git repositories for the sync tests: a bare remote and clones of it, each with its own store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from homeport.store import Store

from ._repos import git


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "-q", str(bare), str(seed))
    (seed / "README.md").write_text("project\n")
    git(seed, "add", "README.md")
    git(seed, "commit", "-qm", "start")
    git(seed, "push", "-q", "origin", "HEAD:main")
    return bare


@pytest.fixture
def clone(tmp_path: Path, remote: Path) -> Iterator[Callable[[str], tuple[Path, Store]]]:
    """`clone(name)`: a fresh clone of the remote with a SQLite store of its own."""
    stores: list[Store] = []

    def make(name: str) -> tuple[Path, Store]:
        path = tmp_path / name
        git(tmp_path, "clone", "-q", str(remote), str(path))
        store = Store.open(path, create=True)
        assert store is not None
        stores.append(store)
        return path, store

    yield make
    for store in stores:
        store.close()
