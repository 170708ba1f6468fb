"""Bearer tokens: minted once, stored hashed, verified, listed without secrets, revoked."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from homeport.errors import ConfigError
from homeport.files import tokens as tokens_module
from homeport.files.tokens import TokenStore


@pytest.fixture
def store(tmp_path: Path) -> TokenStore:
    return TokenStore(tmp_path / "state" / "tokens.json")


def test_an_added_token_verifies_as_its_agent(store: TokenStore) -> None:
    token = store.add("ada")
    assert token.startswith("hp_")
    assert len(token) > 40
    assert store.verify(token) == "ada"


def test_unknown_malformed_and_near_miss_tokens_verify_as_nobody(store: TokenStore) -> None:
    token = store.add("ada")
    assert store.verify(token[:-1]) is None
    assert store.verify(token + "x") is None
    assert store.verify("") is None
    assert store.verify(token.removeprefix("hp_")) is None
    assert store.verify(None) is None  # type: ignore[arg-type]
    assert TokenStore(store.path.with_name("absent.json")).verify(token) is None


def test_each_add_mints_a_different_token(store: TokenStore) -> None:
    first, second = store.add("ada"), store.add("ada")
    assert first != second
    assert store.verify(first) == store.verify(second) == "ada"


def test_the_file_never_contains_the_plaintext_token(store: TokenStore) -> None:
    tokens = [store.add("ada"), store.add("bob")]
    text = store.path.read_text(encoding="utf-8")
    for token in tokens:
        assert token not in text
        assert token.removeprefix("hp_") not in text


def test_the_token_file_is_readable_by_its_owner_only(store: TokenStore) -> None:
    store.add("ada")
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    store.add("bob")
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600


def test_list_shows_ids_agents_and_times_but_no_secret(store: TokenStore) -> None:
    token = store.add("ada")
    store.add("bob")
    listed = store.list()
    assert [e["agent_id"] for e in listed] == ["ada", "bob"]
    for entry in listed:
        assert set(entry) == {"token_id", "agent_id", "created_at"}
        assert entry["token_id"].startswith("tok_")
        assert entry["created_at"].endswith("Z")
        assert token not in json.dumps(entry)


def test_a_revoked_token_stops_verifying_and_others_keep_working(store: TokenStore) -> None:
    first, second = store.add("ada"), store.add("ada")
    first_id = store.list()[0]["token_id"]
    store.revoke(first_id)
    assert store.verify(first) is None
    assert store.verify(second) == "ada"
    assert first_id not in [e["token_id"] for e in store.list()]


def test_revoking_an_unknown_token_id_is_an_error_naming_it(store: TokenStore) -> None:
    store.add("ada")
    with pytest.raises(ConfigError, match="tok_nope"):
        store.revoke("tok_nope")


def test_an_invalid_agent_id_is_refused(store: TokenStore) -> None:
    with pytest.raises(ConfigError, match=r"agent id '\.\./x'"):
        store.add("../x")
    assert not store.path.exists()


def test_a_malformed_token_file_is_an_error_naming_the_path(store: TokenStore) -> None:
    store.path.parent.mkdir(parents=True)
    store.path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="malformed") as info:
        store.verify("hp_whatever")
    assert str(store.path) in info.value.message


def test_writes_leave_no_temp_files_behind(store: TokenStore) -> None:
    store.add("ada")
    store.add("bob")
    store.revoke(store.list()[0]["token_id"])
    assert sorted(p.name for p in store.path.parent.iterdir()) == ["tokens.json", "tokens.json.lock"]


def test_exports_are_pinned() -> None:
    assert sorted(tokens_module.__all__) == ["TOKEN_PREFIX", "TokenStore"]


def test_a_token_for_the_local_users_name_is_refused_and_nothing_is_written(store: TokenStore) -> None:
    """`local` names the local user when no token is required; the server refuses any token whose agent is
    `local` on every request, so minting one would only hand out a token that never works."""
    from homeport.server.request import LOCAL_PRINCIPAL

    with pytest.raises(ConfigError) as caught:
        store.add(LOCAL_PRINCIPAL)
    assert "'local'" in caught.value.message and "another name" in caught.value.message
    assert not store.path.exists() or store.list() == []


def test_the_shell_refuses_to_mint_a_token_for_local(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from homeport.cli import cli

    result = CliRunner().invoke(cli, ["tokens", "add", "local", "--data-dir", str(tmp_path)])
    assert result.exit_code == 1 and "'local'" in result.stderr and "hp_" not in result.stdout
    assert not (tmp_path / "tokens.json").exists()
