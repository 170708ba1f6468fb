"""Issue 22, finding 19 on the resolving side: every spelling of a logical key (case, a trailing `.`
or `.git`) is one workspace with one store, the canonical key; a key that is nothing once canonical
is refused; and memory kept under a spelling from before (a store directory, or a PostgreSQL row
named by that spelling) stays reachable, or is refused with a message when two spellings hold some."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client

from homeport.errors import InvalidWorkspaceError
from homeport.store.logical import logical_store_for, logical_store_root
from homeport.workspace import WorkspaceGuard
from homeport.workspace.guards import default_denied
from homeport.workspace.handles import HandleSigner
from homeport.workspace.keys import canonical_key
from homeport.workspace.resolver import CallInputs, ResolverSettings, WorkspaceResolver

pytestmark = pytest.mark.anyio

SPELLINGS = [
    "acme/vault",
    "acme/Vault",
    "ACME/VAULT",
    "acme/vault.",
    "acme/vault.git",
    "Acme/Vault.git.",
    " acme/vault ",
]


def resolver(data: Path) -> WorkspaceResolver:
    guard = WorkspaceGuard(denied=default_denied(Path("/nonexistent-home")))
    settings = ResolverSettings(guard=guard, transport="http", logical_root=lambda k: logical_store_for(data, k))
    return WorkspaceResolver(settings, HandleSigner(b"k" * 32))


@pytest.mark.parametrize("value", SPELLINGS)
def test_every_spelling_of_a_key_resolves_to_the_one_canonical_workspace(tmp_path: Path, value: str) -> None:
    ws = resolver(tmp_path).resolve(CallInputs(argument=value)).workspace
    assert ws.logical_key == "acme/vault"
    assert ws.root == logical_store_root(tmp_path, "acme/vault")


@pytest.mark.parametrize("value", ["acme/.git", "acme/...", ".git", "acme/.GIT."])
def test_a_key_that_is_nothing_once_canonical_is_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(InvalidWorkspaceError, match="segment"):
        resolver(tmp_path).resolve(CallInputs(argument=value))


def test_canonical_keys_stay_as_they_are() -> None:
    for key in ("acme/api", "github.com/acme/api", "a/b.c/d-e_f", "x.gitx", ".github/x"):
        assert canonical_key(key) == key


@given(
    st.from_regex(
        r"[A-Za-z0-9_-]{1,6}(\.[A-Za-z0-9_-]{1,4})?(/[A-Za-z0-9_-]{1,6}){0,3}(\.git|\.|\.GIT)?", fullmatch=True
    )
)
def test_canonical_is_idempotent(value: str) -> None:
    once = canonical_key(value)
    assert canonical_key(once) == once == once.lower()


def _old_store(data: Path, key: str) -> Path:
    """A store directory as a Homeport that did not make keys canonical left it."""
    root = logical_store_root(data, key)
    (root / ".homeport").mkdir(parents=True)
    (root / ".homeport" / "homeport.db").write_bytes(b"")
    return root


def test_a_store_kept_under_an_old_spelling_is_the_workspaces_store(tmp_path: Path) -> None:
    old = _old_store(tmp_path, "acme/Vault")
    for value in SPELLINGS:
        assert resolver(tmp_path).resolve(CallInputs(argument=value)).workspace.root == old


def test_two_old_spellings_with_memory_are_refused_naming_both(tmp_path: Path) -> None:
    _old_store(tmp_path, "acme/Vault")
    _old_store(tmp_path, "acme/vault.git")
    with pytest.raises(InvalidWorkspaceError) as caught:
        resolver(tmp_path).resolve(CallInputs(argument="acme/vault"))
    assert "'acme/Vault'" in caught.value.message and "'acme/vault.git'" in caught.value.message


async def test_over_the_server_an_old_spelling_keeps_its_memory(server_factory, tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = server_factory(transport="http", logical_workspaces=True, data_dir=data, allow_roots=(tmp_path,))
    from homeport.store import StoreCache, decisions

    cache = StoreCache()
    try:
        store = cache.get(logical_store_root(Path(os.path.realpath(data)), "github.com/Acme/API"), create=True)
        decisions.log_decision(store, "kept from before")
    finally:
        cache.close()
    async with Client(server) as c:
        for value in ("github.com/acme/api", "github.com/Acme/API", "github.com/acme/api.git"):
            found = await c.call_tool("get_decisions", {"workspace": value})
            assert not found.is_error, found.content[0].text
            assert found.structured_content["workspace"]["key"] == "github.com/acme/api"
            assert [d["summary"] for d in found.structured_content["decisions"]] == ["kept from before"]


async def test_on_postgresql_a_row_kept_under_an_old_spelling_keeps_its_memory(
    server_factory, tmp_path: Path, store_postgres_url: str
) -> None:
    from homeport.store import decisions
    from homeport.store.postgres import PostgresStores

    stores = PostgresStores(store_postgres_url)
    try:
        decisions.log_decision(stores.get("github.com/Acme/Ledger", create=True), "kept in postgres")
    finally:
        stores.close()
    server = server_factory(
        transport="http", logical_workspaces=True, store_url=store_postgres_url, data_dir=tmp_path / "data"
    )
    async with Client(server) as c:
        for value in ("github.com/acme/ledger", "github.com/Acme/Ledger.git"):
            found = await c.call_tool("get_decisions", {"workspace": value})
            assert not found.is_error, found.content[0].text
            assert [d["summary"] for d in found.structured_content["decisions"]] == ["kept in postgres"]
    stores = PostgresStores(store_postgres_url)
    try:
        assert "github.com/acme/ledger" in stores.registered()  # the row now carries the canonical key
        assert "github.com/Acme/Ledger" not in stores.registered()
    finally:
        stores.close()
