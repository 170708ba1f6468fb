"""A token file that cannot be trusted fails closed: a clear ConfigError at start, 401 (never a 500) later."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from homeport.core import ServeSettings, build_runtime
from homeport.errors import ConfigError
from homeport.files.tokens import TokenStore
from homeport.server import build_server
from homeport.server.auth import TokenStoreVerifier

pytestmark = pytest.mark.anyio

# Each one broke `json.loads` or the shape checks in a different way before they were all mapped.
CORRUPT = {
    "not json": b"{not json",
    "not utf-8": b'{"version": 1, "tokens": [\xff]}',
    "nested too deep": b"[" * 100_000,
    "wrong version": b'{"version": 2, "tokens": []}',
    "tokens not a list": b'{"version": 1, "tokens": {}}',
    "entry not an object": b'{"version": 1, "tokens": [1]}',
    "top level a list": b"[]",
    "empty": b"",
}


def _corrupt(tmp_path: Path, content: bytes) -> TokenStore:
    store = TokenStore(tmp_path / "tokens.json")
    store.path.write_bytes(content)
    return store


@pytest.mark.parametrize("content", CORRUPT.values(), ids=CORRUPT.keys())
def test_check_refuses_a_corrupt_token_file_naming_it(tmp_path: Path, content: bytes) -> None:
    store = _corrupt(tmp_path, content)
    with pytest.raises(ConfigError) as info:
        store.check()
    assert info.value.code == "config_error"
    assert str(store.path) in info.value.message


def test_check_refuses_an_unreadable_token_file_naming_it(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    store.path.mkdir()  # unreadable as a file, even for root
    with pytest.raises(ConfigError) as info:
        store.check()
    assert info.value.code == "config_error" and str(store.path) in info.value.message


def test_check_accepts_a_missing_or_valid_file(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    store.check()
    store.add("ada")
    store.check()


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode)))
def test_any_file_content_verifies_or_raises_config_error_and_nothing_else(tmp_path: Path, content: bytes) -> None:
    store = _corrupt(tmp_path, content)
    try:
        assert store.verify("hp_whatever") is None
    except ConfigError as exc:
        assert str(store.path) in exc.message


@pytest.mark.parametrize("content", CORRUPT.values(), ids=CORRUPT.keys())
async def test_the_verifier_answers_nobody_without_a_traceback_when_the_file_breaks(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    token = store.add("ada")
    verifier = TokenStoreVerifier(store)
    assert (await verifier.verify_token(token)) is not None
    store.path.write_bytes(content)
    with caplog.at_level(logging.ERROR):
        assert (await verifier.verify_token(token)) is None  # 401, never a 500
    assert str(store.path) in caplog.text
    assert all(record.exc_info is None for record in caplog.records)


def test_a_server_with_auth_refuses_to_start_on_a_corrupt_token_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "tokens.json").write_text("{not json", encoding="utf-8")
    settings = ServeSettings(transport="http", auth=True, data_dir=data, cwd=Path("/"), home=tmp_path)
    runtime = build_runtime(settings)
    try:
        with pytest.raises(ConfigError, match=r"tokens\.json"):
            build_server(runtime)
    finally:
        runtime.close()
