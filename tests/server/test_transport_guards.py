"""The pure parts of the transports: public URLs, who may start a server, request shapes, and the
answer to a stdio line the SDK cannot parse."""

from __future__ import annotations

import dataclasses
import json
import socket
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from homeport.core.settings import ServeSettings
from homeport.errors import ConfigError
from homeport.server.http_exposure import (
    check_exposure,
    is_loopback,
    parse_public_url,
    resource_base,
    transport_security,
)
from homeport.server.http_middleware import CallsInFlight, RequestShape
from homeport.server.http_run import bind
from homeport.server.stdio import rejection
from homeport.workspace import WorkspaceGuard, default_denied

HOSTS = st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z][a-z0-9-]{0,10}){0,3}", fullmatch=True)


@given(scheme=st.sampled_from(["http", "https"]), host=HOSTS, port=st.none() | st.integers(1, 65535))
def test_a_public_url_keeps_its_scheme_host_and_port(scheme: str, host: str, port: int | None) -> None:
    netloc = host if port is None else f"{host}:{port}"
    url = parse_public_url(f"{scheme}://{netloc}/")
    assert (url.scheme, url.host, url.port, url.origin) == (scheme, host, port, f"{scheme}://{netloc}")
    security = transport_security(ServeSettings(public_urls=(f"{scheme}://{netloc}",)))
    assert url.origin in security.allowed_origins
    assert (netloc in security.allowed_hosts) if port else {host, f"{host}:*"} <= set(security.allowed_hosts)
    assert "127.0.0.1:*" in security.allowed_hosts


@pytest.mark.parametrize(
    "url", ["ftp://x.example", "https://", "https://x.example/mcp", "https://x.example?a=1", "https://u:p@x.example"]
)
def test_a_public_url_with_more_than_scheme_host_and_port_is_refused(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_public_url(url)
    assert caught.value.code == "config_error"
    assert url in caught.value.message


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        *[("127.0.0.1", True), ("127.8.0.1", True), ("::1", True), ("[::1]", True), ("localhost", True)],
        *[("0.0.0.0", False), ("::", False), ("10.0.0.5", False), ("mem.example.com", False)],
    ],
)
def test_loopback_is_this_machine_only(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def _guard(tmp_path: Path, *roots: Path) -> WorkspaceGuard:
    return WorkspaceGuard(denied=default_denied(tmp_path / "home"), allow_roots=roots)


def test_a_server_beyond_loopback_needs_auth_or_the_explicit_escape(tmp_path: Path) -> None:
    guard = _guard(tmp_path, tmp_path)
    for remote in (ServeSettings(host="0.0.0.0"), ServeSettings(public_urls=("https://mem.example.com",))):
        with pytest.raises(ConfigError) as caught:
            check_exposure(remote, guard)
        assert "--auth" in caught.value.message and "--insecure-no-auth" in caught.value.message
        check_exposure(dataclasses.replace(remote, auth=True), guard)
        check_exposure(dataclasses.replace(remote, insecure_no_auth=True), guard)
    check_exposure(ServeSettings(public_urls=("http://localhost:9000",)), guard)


@pytest.mark.parametrize("root", ["/", "/etc", "/usr/lib/x", "/tmp", "HOME"])
def test_an_allowed_root_the_guards_deny_refuses_the_start_naming_allow_root(tmp_path: Path, root: str) -> None:
    path = tmp_path / "home" if root == "HOME" else Path(root)
    with pytest.raises(ConfigError) as caught:
        check_exposure(ServeSettings(), _guard(tmp_path, path))
    assert "--allow-root" in caught.value.message
    assert str(path) in caught.value.message


def test_the_auth_metadata_names_the_first_public_url_else_the_bound_address() -> None:
    assert (
        resource_base(ServeSettings(public_urls=("https://a.example/", "https://b.example")), 1) == "https://a.example"
    )
    assert resource_base(ServeSettings(host="0.0.0.0"), 8765) == "http://127.0.0.1:8765"
    assert resource_base(ServeSettings(host="::1"), 9) == "http://[::1]:9"


# ------------------------------------------------------------------------------------------------
# request shapes


async def _post(app: Any, headers: dict[str, str], method: str = "POST", path: str = "/mcp") -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    await app(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


async def _ok(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b""})


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("content_type", "status"),
    [("application/json", 200), ("Application/JSON; charset=utf-8", 200), ("text/plain", 415), (None, 415)],
)
async def test_a_post_to_mcp_must_be_json(content_type: str | None, status: int) -> None:
    app = RequestShape(_ok, paths=("/mcp",), max_body_bytes=100)
    headers = {"content-type": content_type} if content_type else {}
    got, body = await _post(app, headers)
    assert got == status
    if status == 415:
        assert json.loads(body)["error"]["code"] == types.INVALID_REQUEST
    assert (await _post(app, {}, method="GET"))[0] == 200
    assert (await _post(app, {}, path="/healthz"))[0] == 200


@pytest.mark.anyio
async def test_a_body_declared_over_the_limit_gets_413_stating_the_limit() -> None:
    app = RequestShape(_ok, paths=("/mcp",), max_body_bytes=100)
    json_type = {"content-type": "application/json"}
    assert (await _post(app, {**json_type, "content-length": "100"}))[0] == 200
    status, body = await _post(app, {**json_type, "content-length": "101"})
    assert status == 413
    assert "the limit is 100 bytes" in json.loads(body)["error"]["message"]


@pytest.mark.anyio
async def test_a_chunked_body_the_app_refuses_as_too_large_gets_413_stating_the_limit() -> None:
    async def sdk_limit(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 413, "headers": []})
        await send({"type": "http.response.body", "body": b"Request body too large"})

    status, body = await _post(
        RequestShape(sdk_limit, paths=("/mcp",), max_body_bytes=100), {"content-type": "application/json"}
    )
    assert status == 413
    assert "the limit is 100 bytes" in json.loads(body)["error"]["message"]
    status, body = await _post(
        RequestShape(_ok, paths=("/mcp",), max_body_bytes=100), {"content-type": "application/json"}
    )
    assert (status, body) == (200, b"")


@pytest.mark.anyio
async def test_calls_in_flight_are_counted_and_waited_for() -> None:
    release = anyio.Event()

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        await release.wait()
        await _ok(scope, receive, send)

    calls = CallsInFlight(slow)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_post, calls, {})
        await anyio.wait_all_tasks_blocked()
        assert calls.count == 1
        assert await calls.wait_idle(0.05) is False
        release.set()
        assert await calls.wait_idle(5) is True
    assert calls.count == 0


# ------------------------------------------------------------------------------------------------
# stdio lines the SDK cannot parse


@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_every_unparseable_line_gets_an_error_or_is_a_broken_reply_or_notification(line: bytes) -> None:
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        answer = rejection(line, exc)
    else:
        return
    try:
        parsed = json.loads(line.decode("utf-8", "replace"))
    except ValueError:
        parsed = None
    if answer is None:
        assert isinstance(parsed, dict)
        assert {"result", "error"} & set(parsed) or "id" not in parsed
        return
    assert answer.error.code in (types.PARSE_ERROR, types.INVALID_REQUEST)
    wanted = parsed.get("id") if isinstance(parsed, dict) else None
    assert answer.id == (wanted if isinstance(wanted, (int, str)) and not isinstance(wanted, bool) else None)


@given(request_id=st.integers(-(2**53), 2**53) | st.text(max_size=20), junk=st.sampled_from(["\\ud800", "\\udc00"]))
def test_a_request_with_a_lone_surrogate_is_answered_with_its_id(request_id: int | str, junk: str) -> None:
    line = f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"method":"ping","params":{{"x":"{junk}"}}}}'.encode()
    with pytest.raises(ValidationError) as caught:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    answer = rejection(line, caught.value)
    assert answer is not None
    assert (answer.id, answer.error.code) == (request_id, types.PARSE_ERROR)


# ------------------------------------------------------------------------------------------------
# binding


def test_the_bound_socket_names_tcp_so_asyncio_turns_nagle_off() -> None:
    # With proto 0 asyncio leaves Nagle on and every call waits ~40 ms for a delayed ACK.
    with bind("127.0.0.1", 0) as sock:
        assert sock.proto == socket.IPPROTO_TCP
        port = sock.getsockname()[1]
        with pytest.raises(ConfigError) as caught:
            bind("127.0.0.1", port)
    assert f"port {port}" in caught.value.message and "--port 0" in caught.value.message
