"""`--store sqlite:///FILE`: one project's memory in a file the user names, never two projects' in one file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from homeport.core.stores import split_store_option
from homeport.errors import ConfigError, StoreHoldsOtherWorkspaceError
from homeport.store.cache import StoreCache
from homeport.store.decisions import get_decisions, log_decision


def test_sqlite_urls_name_a_file_in_sqlalchemys_spelling(tmp_path: Path) -> None:
    cwd = tmp_path / "here"
    assert split_store_option("sqlite:///memory/shop.db", cwd) == (None, cwd / "memory" / "shop.db")
    assert split_store_option("sqlite:////srv/memory/shop.db", cwd) == (None, Path("/srv/memory/shop.db"))
    assert split_store_option("sqlite:///~/shop.db", cwd) == (None, Path.home() / "shop.db")
    assert split_store_option("postgresql://u@h/db", cwd) == ("postgresql://u@h/db", None)
    assert split_store_option(None, cwd) == (None, None)


@pytest.mark.parametrize("bad", ["sqlite://", "sqlite:///", "sqlite:///:memory:", "sqlite://host/x.db", "sqlite:x.db"])
def test_a_sqlite_url_that_names_no_file_is_refused_with_the_spelling_to_use(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ConfigError) as caught:
        split_store_option(bad, tmp_path)
    assert bad in caught.value.message and "sqlite:///" in caught.value.message


def test_the_first_workspace_is_recorded_and_another_is_refused_for_reads_and_writes(tmp_path: Path) -> None:
    file = tmp_path / "memory" / "shop.db"
    shop, blog = tmp_path / "shop", tmp_path / "blog"
    stores = StoreCache(file=file)
    try:
        store = stores.get(shop, create=True)
        assert store is not None and store.path == file
        log_decision(store, summary="Use WAL")
        for create in (False, True):
            with pytest.raises(StoreHoldsOtherWorkspaceError) as caught:
                stores.get(blog, create=create)
            assert str(shop) in caught.value.message and str(blog) in caught.value.message
    finally:
        stores.close()
    assert not (shop / ".homeport").exists() and not (blog / ".homeport").exists()
    # A new process (a new cache) remembers whose file it is.
    again = StoreCache(file=file)
    try:
        with pytest.raises(StoreHoldsOtherWorkspaceError):
            again.get(blog, create=True)
        reopened = again.get(shop, create=False)
        assert reopened is not None
        assert [d["summary"] for d in get_decisions(reopened)] == ["Use WAL"]
    finally:
        again.close()
    with sqlite3.connect(file) as conn:
        assert conn.execute("SELECT key FROM store_workspace").fetchall() == [(str(shop),)]


def test_a_logical_workspace_is_recorded_by_its_key(tmp_path: Path) -> None:
    stores = StoreCache(file=tmp_path / "team.db")
    try:
        assert stores.get(tmp_path / "data", create=True, key="acme/api") is not None
        with pytest.raises(StoreHoldsOtherWorkspaceError):
            stores.get(tmp_path / "data", create=True, key="acme/web")
    finally:
        stores.close()


def test_a_named_file_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.db"
    target.write_bytes(b"")
    link = tmp_path / "shop.db"
    link.symlink_to(target)
    stores = StoreCache(file=link)
    try:
        with pytest.raises(Exception, match="symlink"):
            stores.get(tmp_path / "shop", create=True)
    finally:
        stores.close()
    assert target.read_bytes() == b""


@given(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=8))
def test_whatever_order_workspaces_come_in_only_the_first_is_ever_served(order: list[str]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        stores = StoreCache(file=Path(tmp) / "one.db")
        try:
            for name in order:
                root = Path(tmp) / name
                if name == order[0]:
                    assert stores.get(root, create=True) is not None
                else:
                    with pytest.raises(StoreHoldsOtherWorkspaceError):
                        stores.get(root, create=True)
        finally:
            stores.close()
