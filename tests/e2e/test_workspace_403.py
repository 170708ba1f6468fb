"""A workspace chosen by the HTTP request (X-Workspace-Id, ?project_path=) that the principal may not use
is a 403 before the MCP layer, on Streamable HTTP in both eras and on the legacy SSE transport; one
named inside a tool call stays a tool error. Real uvicorn, Homeport's own tokens, an access rules file."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from homeport.files.tokens import TokenStore

from ._serving import serving
from ._support import make_project, ok

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(120)]

RULES = """
[[workspaces]]
name = "acme team"
who = "ada"
paths = ["{tmp}/acme/**"]
access = "write"

[[workspaces]]
name = "shared library"
who = "ada"
paths = ["{tmp}/shared/**"]
access = "read"
"""

_ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
_ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
_DISCOVER = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": _ENVELOPE}}
# The first request of each era: a 2025 handshake, or a 2026-07-28 request that names its version.
_FIRST = {
    "2025": (_INITIALIZE, {}),
    "2026": (_DISCOVER, {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}),
}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = Path(os.path.realpath(tmp_path_factory.mktemp("ws403")))
    projects = {name: make_project(tmp / name) for name in ("acme/app", "shared/lib", "beta/app")}
    outside = make_project(tmp.parent / f"{tmp.name}-outside")
    rules = tmp / "rules.toml"
    rules.write_text(RULES.format(tmp=tmp))
    data = tmp / "data"
    tokens = TokenStore(data / "tokens.json")
    ada = tokens.add("ada")
    args = ["--allow-root", str(tmp), "--auth", "--data-dir", str(data), "--access-rules", str(rules)]
    with serving(args, cwd=tmp, log=tmp / "server.log") as served:
        yield {
            "served": served,
            "tmp": tmp,
            "projects": projects,
            "outside": outside,
            "ada": ada,
            "missing": tmp / "beta" / "ghost",
        }


def _auth(world: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {world['ada']}"}


def _selected(world: dict[str, Any], selector: str, workspace: str, path: str = "/mcp") -> tuple[str, dict[str, str]]:
    """The URL and headers of a request that chooses `workspace` with `selector` (header or query)."""
    base = world["served"].base
    if selector == "header":
        return f"{base}{path}", {"X-Workspace-Id": workspace}
    sep = "&" if "?" in path else "?"
    return f"{base}{path}{sep}project_path={quote(workspace)}", {}


def _assert_403(response: httpx2.Response, workspace: str) -> dict[str, Any]:
    assert response.status_code == 403, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["data"]["code"] == "workspace_access_denied"
    assert error["data"]["workspace"] == workspace and error["data"]["principal"] == "ada"
    assert f"homeport access check ada {workspace}" in error["message"]
    assert workspace in error["message"] and "'ada'" in error["message"]
    return error


@contextlib.asynccontextmanager
async def _choosing(world: dict[str, Any], mode: str) -> AsyncIterator[tuple[Client, dict[str, str | None]]]:
    """An SDK client over Streamable HTTP whose header or query the test sets before each request."""
    chosen: dict[str, str | None] = {"header": None, "query": None}

    async def apply(request: httpx2.Request) -> None:
        if chosen["header"] is not None:
            request.headers["X-Workspace-Id"] = chosen["header"]
        if chosen["query"] is not None:
            request.url = request.url.copy_set_param("project_path", chosen["query"])

    served = world["served"]
    async with (
        httpx2.AsyncClient(headers=_auth(world), timeout=30, event_hooks={"request": [apply]}) as http,
        Client(streamable_http_client(f"{served.base}/mcp", http_client=http), mode=mode) as client,  # type: ignore[arg-type]
    ):
        yield client, chosen


@pytest.mark.parametrize("era", ["2025", "2026"])
@pytest.mark.parametrize("selector", ["header", "query"])
async def test_a_request_choosing_a_forbidden_workspace_is_403_naming_it_the_principal_and_the_fix(
    world, era, selector
):
    body, era_headers = _FIRST[era]
    forbidden = str(world["projects"]["beta/app"])
    url, headers = _selected(world, selector, forbidden)
    async with httpx2.AsyncClient(timeout=60) as http:
        refused = await http.post(url, json=body, headers={**_ACCEPT, **_auth(world), **era_headers, **headers})
        _assert_403(refused, forbidden)
        allowed_url, allowed = _selected(world, selector, str(world["projects"]["acme/app"]))
        served = await http.post(allowed_url, json=body, headers={**_ACCEPT, **_auth(world), **era_headers, **allowed})
        assert served.status_code == 200, served.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("selector", ["header", "query"])
async def test_an_sdk_client_is_refused_per_request_in_a_session_and_stateless_and_served_when_allowed(
    world, mode, selector
):
    app, beta = str(world["projects"]["acme/app"]), str(world["projects"]["beta/app"])
    async with _choosing(world, mode) as (client, chosen):
        chosen[selector] = app
        logged = ok(await client.call_tool("log_decision", {"summary": f"403 {mode} {selector}"}))
        assert logged["workspace"]["root"] == app and logged["workspace"]["source"] == selector
        chosen[selector] = beta  # the same session (2025) or the next stateless request (2026-07-28)
        with pytest.raises(MCPError) as refused:
            await client.call_tool("get_decisions", {})
        assert "workspace_access_denied" in refused.value.error.message
        assert beta in refused.value.error.message and "homeport access check ada" in refused.value.error.message
        chosen[selector] = app
        assert ok(await client.call_tool("get_decisions", {}))["workspace"]["root"] == app
    assert not (world["projects"]["beta/app"] / ".homeport").exists()


async def test_the_403_is_the_same_whether_or_not_the_workspace_exists(world):
    tmp, outside = world["tmp"], world["outside"]
    pairs = [
        (str(world["projects"]["beta/app"]), str(world["missing"])),  # inside the allowed root
        (str(outside), str(outside.parent / f"{outside.name}-none")),  # outside it
    ]
    async with httpx2.AsyncClient(timeout=60) as http:
        for existing, missing in pairs:
            answers = []
            for workspace in (existing, missing, Path(existing).as_uri(), Path(missing).as_uri()):
                response = await http.post(
                    f"{world['served'].base}/mcp",
                    json=_INITIALIZE,
                    headers={**_ACCEPT, **_auth(world), "X-Workspace-Id": workspace},
                )
                error = _assert_403(response, workspace)
                answers.append(
                    (response.status_code, dict(response.headers).keys(), str(error).replace(workspace, "<ws>"))
                )
            assert all(a == answers[0] for a in answers), answers
    assert not (tmp / "beta" / "ghost").exists()


async def test_a_read_only_workspace_passes_the_request_and_a_write_is_a_tool_error(world):
    lib = str(world["projects"]["shared/lib"])
    async with _choosing(world, "auto") as (client, chosen):
        chosen["header"] = lib
        assert ok(await client.call_tool("get_decisions", {}))["workspace"]["root"] == lib
        write = await client.call_tool("log_decision", {"summary": "nope"})
        assert write.is_error and write.structured_content["error"]["code"] == "workspace_access_denied"
        assert "read-only" in write.content[0].text
    assert not (world["projects"]["shared/lib"] / ".homeport").exists()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_workspace_named_in_the_call_stays_a_tool_error_because_the_request_is_permitted(world, mode):
    app, beta = str(world["projects"]["acme/app"]), str(world["projects"]["beta/app"])
    async with _choosing(world, mode) as (client, chosen):
        for header in (None, app):  # no request-level choice, and an allowed one
            chosen["header"] = header
            refused = await client.call_tool("get_decisions", {"workspace": beta})
            assert refused.is_error and refused.structured_content["error"]["code"] == "workspace_access_denied"
            handle = ok(await client.call_tool("use_workspace", {"workspace": app}))["handle"]
            assert ok(await client.call_tool("get_decisions", {"workspace": handle}))["workspace"]["root"] == app
        other = await client.call_tool("use_workspace", {"workspace": beta})
        assert other.is_error and other.structured_content["error"]["code"] == "workspace_access_denied"


async def test_sse_refuses_a_forbidden_workspace_on_the_stream_and_on_each_message(world):
    base, app, beta = world["served"].base, str(world["projects"]["acme/app"]), str(world["projects"]["beta/app"])
    async with httpx2.AsyncClient(timeout=60) as http:
        for selector in ("header", "query"):
            url, headers = _selected(world, selector, beta, "/sse")
            async with http.stream("GET", url, headers={**_auth(world), **headers}) as stream:
                await stream.aread()
                _assert_403(stream, beta)
            url, headers = _selected(world, selector, app, "/sse")
            async with http.stream("GET", url, headers={**_auth(world), **headers}) as stream:
                assert stream.status_code == 200  # the event stream is open; leaving closes it
    # A connection opened on an allowed workspace: a message that chooses a forbidden one is refused.
    session: list[str] = []
    headers = {**_auth(world), "X-Workspace-Id": app}
    sse = sse_client(f"{base}/sse", headers=headers, on_session_created=session.append)
    async with Client(sse, mode="legacy") as client:  # type: ignore[arg-type]
        assert ok(await client.call_tool("get_decisions", {}))["workspace"]["root"] == app
        ping = {"jsonrpc": "2.0", "method": "ping", "id": 7}
        async with httpx2.AsyncClient(timeout=60) as http:
            for selector in ("header", "query"):
                url, chosen = _selected(world, selector, beta, f"/messages/?session_id={session[0]}")
                posted = await http.post(url, json=ping, headers={**_auth(world), **chosen})
                _assert_403(posted, beta)
        assert ok(await client.call_tool("get_decisions", {}))["workspace"]["root"] == app


@pytest.mark.parametrize("path", ["/mcp", "/sse"])
async def test_without_a_valid_token_a_forbidden_workspace_is_still_401(world, path):
    beta = str(world["projects"]["beta/app"])
    async with httpx2.AsyncClient(timeout=60) as http:
        for auth in ({}, {"Authorization": "Bearer hp_not_a_token"}):
            headers = {**_ACCEPT, **auth, "X-Workspace-Id": beta}
            if path == "/mcp":
                response = await http.post(f"{world['served'].base}{path}", json=_INITIALIZE, headers=headers)
            else:
                response = await http.get(f"{world['served'].base}{path}", headers=headers)
            assert response.status_code == 401
            assert "resource_metadata=" in response.headers["www-authenticate"]
