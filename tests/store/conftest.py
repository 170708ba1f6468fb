"""Fixtures of the store tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from homeport.store import Store, store_path_for


@pytest.fixture(scope="session")
def migrated_db(tmp_path_factory) -> Path:
    """One store at the head schema; tests that need many stores copy it."""
    root = tmp_path_factory.mktemp("template")
    Store.open(root, create=True).close()
    return store_path_for(root)


@pytest.fixture(scope="session")
def copy_store(migrated_db: Path):
    """`copy_store(root)`: a store for `root` copied from the template."""

    def copy(root: Path) -> Store:
        store_path_for(root).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(migrated_db, store_path_for(root))
        store = Store.open(root, create=False)
        assert store is not None
        return store

    return copy
