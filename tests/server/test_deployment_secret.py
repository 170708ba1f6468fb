"""Where the deployment's secret comes from, and that processes sharing it verify each other's handles.

Order: HOMEPORT_HANDLE_KEY, else the PostgreSQL store's `homeport.secrets`, else `deployment.key`
in the data directory (0600, created once whoever comes first).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from mcp import Client

from homeport.core import ServeSettings, build_runtime
from homeport.core.deployment import KEY_FILE
from homeport.errors import ConfigError
from homeport.files.deployment_secret import read_or_create_secret
from homeport.server import build_server

pytestmark = pytest.mark.anyio


def test_the_key_file_is_created_once_readable_only_by_its_owner(tmp_path):
    path = tmp_path / "data" / KEY_FILE
    first = read_or_create_secret(path)
    assert len(first) >= 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_or_create_secret(path) == first


def test_processes_creating_the_key_file_at_once_all_get_the_same_secret(tmp_path):
    path = tmp_path / "data" / KEY_FILE
    code = (
        "import sys; from pathlib import Path; from homeport.files.deployment_secret import read_or_create_secret;"
        "print('ready', flush=True); sys.stdin.readline(); print(read_or_create_secret(Path(sys.argv[1])).decode())"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    for p in procs:  # every one has imported what it needs
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:  # then all are released together
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert len(set(outs)) == 1 and len(outs[0]) == 64
    assert sorted(os.listdir(path.parent)) == sorted([KEY_FILE, KEY_FILE + ".lock"])  # no temp file left


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660])
def test_a_key_file_others_may_read_is_refused_not_used(tmp_path, mode):
    path = tmp_path / KEY_FILE
    path.write_text("k" * 64)
    path.chmod(mode)
    with pytest.raises(ConfigError, match="chmod 600"):
        read_or_create_secret(path)


def test_a_short_or_symlinked_key_file_is_refused(tmp_path):
    short = tmp_path / "short.key"
    short.write_text("abc\n")
    short.chmod(0o600)
    with pytest.raises(ConfigError, match="shorter than 32"):
        read_or_create_secret(short)
    target = tmp_path / "elsewhere.key"
    target.write_text("k" * 64)
    target.chmod(0o600)
    link = tmp_path / KEY_FILE
    link.symlink_to(target)
    with pytest.raises(ConfigError, match="cannot read the deployment key"):
        read_or_create_secret(link)


def _settings(tmp_path: Path, data: str, **kw) -> ServeSettings:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return ServeSettings(cwd=Path("/"), home=home, data_dir=tmp_path / data, **kw)


def test_a_short_handle_key_stops_the_server_at_start(tmp_path):
    with pytest.raises(ConfigError, match="HOMEPORT_HANDLE_KEY is 5 bytes"):
        build_runtime(_settings(tmp_path, "d", handle_key="short"))


def test_the_handle_key_wins_over_the_key_file_and_the_file_is_never_created(tmp_path):
    runtime = build_runtime(_settings(tmp_path, "d", handle_key="h" * 40))
    try:
        runtime.handles.lookup(runtime.handles.mint("local", tmp_path), "local")
        assert runtime.secret() == b"h" * 40
    finally:
        runtime.close()
    assert not (tmp_path / "d" / KEY_FILE).exists()


async def _handle_from(runtime, project: Path) -> str:
    async with Client(build_server(runtime)) as client:
        result = await client.call_tool("use_workspace", {"workspace": str(project)})
        assert not result.is_error, result.content
        return result.structured_content["handle"]


async def _decisions_with(runtime, handle: str):
    async with Client(build_server(runtime)) as client:
        return await client.call_tool("get_decisions", {"workspace": handle})


async def test_processes_sharing_a_data_directory_verify_each_others_handles(tmp_path, projects):
    minting, other, stranger = (
        build_runtime(_settings(tmp_path, "shared")),
        build_runtime(_settings(tmp_path, "shared")),
        build_runtime(_settings(tmp_path, "elsewhere")),
    )
    try:
        handle = await _handle_from(minting, projects["alpha"])
        assert not (await _decisions_with(other, handle)).is_error
        refused = await _decisions_with(stranger, handle)
        assert refused.is_error and "unknown or expired" in refused.content[0].text
    finally:
        for runtime in (minting, other, stranger):
            runtime.close()


def test_the_sealed_request_state_of_one_http_process_opens_on_another_of_the_deployment_only(tmp_path):
    from mcp.server.request_state import RequestStateBoundary

    def codec(data: str, key: str | None):
        runtime = build_runtime(_settings(tmp_path, data, transport="http", handle_key=key))
        try:
            server = build_server(runtime)
        finally:
            runtime.close()
        [boundary] = [m for m in server._lowlevel_server.middleware if isinstance(m, RequestStateBoundary)]
        return boundary._security.codec

    sealed = codec("a", "k" * 40).seal(b"state")
    assert codec("b", "k" * 40).unseal(sealed) == b"state"
    from mcp.server.request_state import InvalidRequestState

    with pytest.raises(InvalidRequestState):
        codec("c", "j" * 40).unseal(sealed)


@pytest.mark.postgres
def test_servers_on_one_postgresql_store_share_one_secret_created_by_whoever_comes_first(store_postgres_url):
    from homeport.store.deployment_secret import postgres_secret
    from homeport.store.postgres import PostgresStores

    stores = [PostgresStores(store_postgres_url) for _ in range(4)]
    found: list[bytes] = []
    barrier = threading.Barrier(len(stores))

    def fetch(store: PostgresStores) -> None:
        barrier.wait()
        found.append(postgres_secret(store, "race"))

    threads = [threading.Thread(target=fetch, args=(s,)) for s in stores]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert len(found) == 4 and len(set(found)) == 1 and len(found[0]) == 32
        assert postgres_secret(stores[0], "another name") != found[0]
    finally:
        for s in stores:
            s.close()


@pytest.mark.postgres
async def test_on_postgresql_the_store_is_the_deployment_whatever_the_data_directories(
    tmp_path, projects, store_postgres_url
):
    minting = build_runtime(_settings(tmp_path, "one", store_url=store_postgres_url))
    other = build_runtime(_settings(tmp_path, "two", store_url=store_postgres_url))
    try:
        handle = await _handle_from(minting, projects["beta"])
        assert not (await _decisions_with(other, handle)).is_error
    finally:
        minting.close()
        other.close()
    assert not (tmp_path / "one" / KEY_FILE).exists() and not (tmp_path / "two" / KEY_FILE).exists()


def test_a_server_that_never_sees_a_handle_never_reads_or_creates_the_key(tmp_path):
    runtime = build_runtime(_settings(tmp_path, "d", transport="http"))
    try:
        build_server(runtime)
    finally:
        runtime.close()
    assert not (tmp_path / "d").exists()
