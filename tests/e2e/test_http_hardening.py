"""`homeport serve --http` against what a network does to it: remote clients, unsafe starts,
stalled or malformed requests, a taken port, a broken token file, and a stop while calls run."""

from __future__ import annotations

import contextlib
import json
import re
import select
import signal
import socket
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from ._serving import run_to_exit, serving
from ._support import clean_env, http_client, make_project, ok, store_file, where

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def post(base: str, body: Any, **headers: str) -> httpx2.Response:
    with httpx2.Client(timeout=30) as http:
        return http.post(f"{base}/mcp", content=body, headers={**ACCEPT, "Content-Type": "application/json", **headers})


# ------------------------------------------------------------------------------------------------
# 1. remote use


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_binding_beyond_loopback_without_auth_refuses_to_start_naming_auth_and_the_escape(
    tmp_path: Path, host: str
) -> None:
    done = run_to_exit(["--http", "--host", host, "--port", "0"], cwd=make_project(tmp_path / "p"))
    assert done.returncode == 1, done.stderr
    assert "--auth" in done.stderr and "--insecure-no-auth" in done.stderr
    assert "Traceback" not in done.stderr and "MCP at" not in done.stderr


def test_a_public_url_is_accepted_as_host_and_origin_and_other_hosts_still_get_421(tmp_path: Path) -> None:
    allow = tmp_path / "allow"
    project = make_project(allow / "shop")
    args = ["--allow-root", str(allow), "--insecure-no-auth"]
    args += ["--public-url", "https://mem.example.test", "--public-url", "http://10.1.2.3:9000"]
    with serving(args, cwd=allow, log=tmp_path / "log") as served:
        for host, origin in [
            ("mem.example.test", "https://mem.example.test"),
            ("10.1.2.3:9000", "http://10.1.2.3:9000"),
        ]:
            answer = post(served.base, json.dumps(INIT), Host=host, Origin=origin, **{"X-Workspace-Id": str(project)})
            assert answer.status_code == 200, (host, answer.text)
        assert post(served.base, json.dumps(INIT), Host="evil.example").status_code == 421
        assert post(served.base, json.dumps(INIT), Origin="https://evil.example").status_code == 403
        assert post(served.base, json.dumps(INIT), Host="10.1.2.3:9001").status_code == 421
        assert "https://mem.example.test/mcp" in served.log_text()


# ------------------------------------------------------------------------------------------------
# 2. allowed roots that are whole trees of other directories


@pytest.mark.parametrize("where_", ["cwd /", "--allow-root /", "--allow-root HOME", "--allow-root /etc", "cwd /tmp"])
def test_serving_a_denied_directory_over_http_refuses_to_start_naming_allow_root(tmp_path: Path, where_: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    how, _, value = where_.partition(" ")
    value = str(home) if value == "HOME" else value
    cwd, args = (value, []) if how == "cwd" else (str(tmp_path), ["--allow-root", value])
    done = run_to_exit(["--http", "--port", "0", *args], cwd=cwd, env=clean_env(HOME=str(home)))
    assert done.returncode == 1, done.stderr
    assert "--allow-root" in done.stderr
    assert "Traceback" not in done.stderr and "MCP at" not in done.stderr


# ------------------------------------------------------------------------------------------------
# 3. slow, stalled and malformed requests


def _stall(port: int, data: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(data)
    return sock


def _read_until_closed(sock: socket.socket, within: float) -> bytes:
    sock.settimeout(within)
    chunks = []
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks)


async def test_stalled_requests_time_out_with_408_while_other_clients_keep_getting_answers(tmp_path: Path) -> None:
    allow = tmp_path / "allow"
    project = make_project(allow / "busy")
    # Deadlines of 10 s: long enough for ten answers while every stalled connection is still held open,
    # however busy the machine (with 1 s, a loaded machine's first answer could come after them).
    args = ["--allow-root", str(allow), "--header-timeout", "10", "--body-timeout", "10"]
    with serving(args, cwd=allow, log=tmp_path / "log") as served:
        half_headers = _stall(served.port, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: app")
        half_body = _stall(
            served.port,
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b'Accept: application/json, text/event-stream\r\nContent-Length: 400\r\n\r\n{"jsonrpc":',
        )
        silent = socket.create_connection(("127.0.0.1", served.port), timeout=10)
        stalled = [half_headers, half_body, silent]
        answered = 0
        async with http_client(f"{served.base}/mcp", mode="auto", headers={"X-Workspace-Id": str(project)}) as client:
            while answered < 10:
                assert where(await client.call_tool("log_decision", {"summary": f"during the stall {answered}"}))
                answered += 1
                # Every answer so far came while the stalled connections were still open, unanswered.
                assert select.select(stalled, [], [], 0)[0] == [], f"a stall was answered after {answered} calls"
        for sock in stalled:
            with sock:
                reply = _read_until_closed(sock, within=30)
            assert reply.startswith(b"HTTP/1.1 408 "), reply


def test_a_wrong_content_type_gets_415_naming_json(tmp_path: Path) -> None:
    with serving(["--allow-root", str(tmp_path)], cwd=tmp_path, log=tmp_path / "log") as served:
        answer = post(served.base, json.dumps(INIT), **{"Content-Type": "text/plain"})
    assert answer.status_code == 415
    assert answer.json()["error"]["code"] == -32600
    assert "application/json" in answer.json()["error"]["message"]


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize(
    ("body", "code"),
    [("{bad", -32700), ("[" * 100_000, -32700), ('{"jsonrpc":"2.0","id":1}', None), ("[1,2]", None)],
    ids=["truncated", "deeply-nested", "no-method", "batch"],
)
def test_malformed_json_rpc_gets_a_clean_400_with_a_json_rpc_error(
    tmp_path: Path, era: str, body: str, code: int | None
) -> None:
    with serving(["--allow-root", str(tmp_path)], cwd=tmp_path, log=tmp_path / "log") as served:
        answer = post(served.base, body, **{"MCP-Protocol-Version": era})
        health = httpx2.get(f"{served.base}/healthz", timeout=60)
        log = served.log_text()
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] in ((code,) if code else (-32600, -32602))
    assert health.status_code == 200
    assert "Traceback" not in log


@pytest.mark.parametrize("chunked", [False, True], ids=["declared", "chunked"])
def test_a_body_over_the_limit_gets_413_stating_the_limit(tmp_path: Path, chunked: bool) -> None:
    body = b"[" + b" " * (4 * 1024 * 1024) + b"]"
    with serving(["--allow-root", str(tmp_path)], cwd=tmp_path, log=tmp_path / "log") as served:
        answer = post(served.base, iter([body[:1024], body[1024:]]) if chunked else body)
    assert answer.status_code == 413
    assert "4194304 bytes" in answer.json()["error"]["message"]


# ------------------------------------------------------------------------------------------------
# 4./5. auth: advertised metadata, and the token file


def _mint(data_dir: Path, agent: str = "ada") -> str:
    from homeport.files.tokens import TokenStore

    return TokenStore(data_dir / "tokens.json").add(agent)


def test_under_auth_every_url_the_metadata_advertises_exists(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _mint(data)
    args = ["--allow-root", str(tmp_path / "allow"), "--auth", "--data-dir", str(data)]
    (tmp_path / "allow").mkdir()
    with serving(args, cwd=tmp_path / "allow", log=tmp_path / "log") as served, httpx2.Client(timeout=60) as http:
        refused = http.post(
            f"{served.base}/mcp", content=json.dumps(INIT), headers={**ACCEPT, "Content-Type": "application/json"}
        )
        assert refused.status_code == 401
        challenge = refused.headers["www-authenticate"]
        metadata_url = challenge.split('resource_metadata="', 1)[1].split('"', 1)[0]
        for url in (metadata_url, f"{served.base}/.well-known/oauth-protected-resource"):
            metadata = http.get(url)
            assert metadata.status_code == 200, url
            assert metadata.json()["resource"] == f"{served.base}/mcp"
            for server in metadata.json().get("authorization_servers", []):
                assert http.get(f"{server.rstrip('/')}/.well-known/oauth-authorization-server").status_code == 200


def test_a_corrupt_token_file_refuses_to_start_naming_the_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "tokens.json").write_text("{not json")
    args = ["--http", "--port", "0", "--allow-root", str(tmp_path), "--auth", "--data-dir", str(data)]
    done = run_to_exit(args, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert str(data / "tokens.json") in done.stderr
    assert "Traceback" not in done.stderr and "MCP at" not in done.stderr


def test_a_token_file_that_breaks_while_serving_fails_closed_with_401_and_one_log_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    token = _mint(data)
    allow = tmp_path / "allow"
    project = make_project(allow / "p")
    args = ["--allow-root", str(allow), "--auth", "--data-dir", str(data)]
    headers = {**ACCEPT, "Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    with serving(args, cwd=allow, log=tmp_path / "log") as served, httpx2.Client(timeout=60) as http:
        assert http.post(f"{served.base}/mcp", content=json.dumps(INIT), headers=headers).status_code == 200
        (data / "tokens.json").write_text("{broken")
        statuses = [
            http.post(f"{served.base}/mcp", content=json.dumps(INIT), headers=headers).status_code for _ in "abc"
        ]
        _mint_over(data, token)
        healed = http.post(f"{served.base}/mcp", content=json.dumps(INIT), headers=headers)
        # Verified again: past the 401, to the 403 for a workspace its agent (in no directory) may not use.
        chosen = http.post(
            f"{served.base}/mcp", content=json.dumps(INIT), headers={**headers, "X-Workspace-Id": str(project)}
        )
        log = served.log_text()
    assert statuses == [401, 401, 401]
    assert healed.status_code == 200
    assert chosen.status_code == 403
    assert log.count("refusing every bearer token") == 1
    assert "Traceback" not in log
    # A log that is not a terminal gets plain lines a person can grep: level, logger, the whole message.
    line = next(line for line in log.splitlines() if "refusing every bearer token" in line)
    assert re.search(r"ERROR homeport\.auth: refusing every bearer token: .*tokens\.json", line), line


def _mint_over(data: Path, token: str) -> None:
    """Write back a valid file that knows `token` (the test minted it, so it knows its digest)."""
    import hashlib

    entry = {
        "token_id": "tok_0",
        "agent_id": "ada",
        "sha256": hashlib.sha256(token.encode()).hexdigest(),
        "created_at": "2026-01-01T00:00:00Z",
    }
    (data / "tokens.json").write_text(json.dumps({"version": 1, "tokens": [entry]}))


# ------------------------------------------------------------------------------------------------
# 8. the port


def test_a_taken_port_is_named_with_how_to_pick_another_and_no_banner_or_traceback(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_to_exit(["--http", "--port", str(port), "--allow-root", str(tmp_path)], cwd=tmp_path)
    assert done.returncode == 1
    assert f"port {port}" in done.stderr and "--port" in done.stderr
    assert "Traceback" not in done.stderr and "MCP at" not in done.stderr


def test_port_zero_prints_the_port_it_got(tmp_path: Path) -> None:
    with serving(["--port", "0", "--allow-root", str(tmp_path)], cwd=tmp_path, log=tmp_path / "log") as served:
        assert served.port != 0
        assert httpx2.get(f"{served.base}/healthz", timeout=60).json()["status"] == "ok"


# ------------------------------------------------------------------------------------------------
# 9. stopping


async def test_sigterm_lets_calls_in_flight_finish_and_refuses_new_connections(tmp_path: Path) -> None:
    allow = tmp_path / "allow"
    project = make_project(allow / "p")
    with serving(["--allow-root", str(allow)], cwd=allow, log=tmp_path / "log") as served:
        url = f"{served.base}/mcp"
        headers = {"X-Workspace-Id": str(project)}
        async with http_client(url, mode="auto", headers=headers) as client:
            ok(await client.call_tool("log_decision", {"summary": "creates the store"}))
        results: dict[str, object] = {}
        # Another process holds the store's write lock, so every write below waits inside the server.
        with contextlib.closing(sqlite3.connect(store_file(project), isolation_level=None)) as holder:
            holder.execute("BEGIN IMMEDIATE")

            sent = 0
            all_sent = anyio.Event()

            async def count_calls(request: httpx2.Request) -> None:
                nonlocal sent
                if b'"tools/call"' in request.content:
                    sent += 1
                    if sent == 6:
                        all_sent.set()

            async def call(name: str, mode: str) -> None:
                # Requests sent after the signal (the client's DELETE of a legacy session on close) open a
                # new connection, which the stopping server refuses: the clean refusal late requests get.
                with contextlib.suppress(httpx2.ConnectError, ExceptionGroup):
                    async with (
                        httpx2.AsyncClient(
                            headers=headers, timeout=httpx2.Timeout(30, read=60), event_hooks={"request": [count_calls]}
                        ) as http,
                        Client(streamable_http_client(url, http_client=http), mode=mode) as client,  # type: ignore[arg-type]
                    ):
                        await client.list_tools()  # else the client asks for it after the call's result
                        results[name] = await client.call_tool("log_decision", {"summary": name})

            async with anyio.create_task_group() as tg:
                for i in range(6):
                    tg.start_soon(call, f"in flight {i}", "legacy" if i % 2 else "auto")
                with anyio.fail_after(30):
                    await all_sent.wait()
                await anyio.sleep(0.3)  # from sent to waiting on the lock inside the server
                served.process.send_signal(signal.SIGTERM)
                with anyio.fail_after(5):
                    while await _accepts(served.base):
                        await anyio.sleep(0.05)
                await anyio.sleep(1.0)  # the calls keep running well after the signal (the grace is 5 s)
                holder.execute("COMMIT")
        code = served.process.wait(timeout=60)
        log = served.log_text()
    assert sorted(results) == [f"in flight {i}" for i in range(6)]
    for name, result in results.items():
        assert where(result) == (str(project), "header"), (name, log)
    assert code == 0, log
    assert "Traceback" not in log
    with contextlib.closing(sqlite3.connect(store_file(project))) as db:
        assert db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == 7


async def _accepts(base: str) -> bool:
    try:
        async with httpx2.AsyncClient(timeout=5) as http:
            await http.get(f"{base}/healthz")
    except (httpx2.ConnectError, httpx2.ReadError, httpx2.RemoteProtocolError):
        return False  # refused, or accepted just before the listener closed and dropped
    return True


def test_ctrl_c_stops_an_http_server_cleanly(tmp_path: Path) -> None:
    with serving(["--allow-root", str(tmp_path)], cwd=tmp_path, log=tmp_path / "log") as served:
        code = served.stop(signal.SIGINT)
        log = served.log_text()
    assert code == 0, log
    assert "Traceback" not in log
