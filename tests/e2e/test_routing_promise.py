"""The three ways through the routing promise that were found from outside, over real processes.

Each is tried over a real stdio subprocess and a real `homeport serve --http`, in both protocol
eras: declared roots bound every explicit choice (argument, handle, config, header, query); a
`.homeport/` further up never captures a nested repository; an argument a tool does not have is
refused, never served from the cwd's project.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

from ._support import make_project, ok, running_http_server, stdio_client, store_file, where

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


def roots(*paths: Path) -> Any:
    async def list_roots(_context: object) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=p.as_uri()) for p in paths])

    return list_roots


def code(result: Any) -> str:
    assert result.is_error, f"expected a refusal, got {result.structured_content!r}"
    return str(result.structured_content["error"]["code"])


@contextlib.asynccontextmanager
async def http(
    url: str, mode: str, *, headers: dict[str, str] | None = None, root: Path | None = None
) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers=headers or {}, timeout=httpx2.Timeout(30, read=60)) as client,
        Client(
            streamable_http_client(url, http_client=client),  # type: ignore[arg-type]
            mode=mode,
            list_roots_callback=roots(root) if root else None,
        ) as session,
    ):
        yield session


async def test_over_stdio_declared_roots_bound_the_argument_the_handle_and_the_configured_workspace(
    tmp_path: Path, mode: str
) -> None:
    alpha, beta = make_project(tmp_path / "alpha"), make_project(tmp_path / "beta")
    async with stdio_client(
        cwd=alpha, mode=mode, list_roots_callback=roots(alpha), args=("--workspace", str(beta))
    ) as c:
        assert code(await c.call_tool("log_decision", {"summary": "x", "workspace": str(beta)})) == "workspace_denied"
        assert code(await c.call_tool("log_decision", {"summary": "x"})) == "workspace_denied"  # config: beta
        assert code(await c.call_tool("use_workspace", {"workspace": beta.as_uri()})) == "workspace_denied"
        handle = ok(await c.call_tool("use_workspace", {"workspace": str(alpha)}))["handle"]
        assert where(await c.call_tool("log_decision", {"summary": "y", "workspace": handle})) == (
            str(alpha),
            "argument",
        )
    assert not store_file(beta).exists()


async def test_over_http_declared_roots_bound_the_header_and_the_query(tmp_path: Path, mode: str) -> None:
    alpha, beta = make_project(tmp_path / "alpha"), make_project(tmp_path / "beta")
    with running_http_server(allow_root=tmp_path, cwd=tmp_path, log=tmp_path / "server.log") as server:
        async with http(server.mcp_url, mode, headers={"X-Workspace-Id": str(beta)}, root=alpha) as c:
            assert code(await c.call_tool("log_decision", {"summary": "x"})) == "workspace_denied"
        async with http(f"{server.mcp_url}?project_path={beta}", mode, root=alpha) as c:
            assert code(await c.call_tool("log_decision", {"summary": "x"})) == "workspace_denied"
        async with http(server.mcp_url, mode, headers={"X-Workspace-Id": str(alpha)}, root=alpha) as c:
            assert where(await c.call_tool("log_decision", {"summary": "x"})) == (str(alpha), "header")
    assert not store_file(beta).exists()


async def test_a_homeport_directory_above_a_repository_never_captures_it(tmp_path: Path, mode: str) -> None:
    (tmp_path / ".homeport").mkdir()
    nested = make_project(tmp_path / "src" / "api")
    (nested / "pkg").mkdir()
    async with stdio_client(cwd=nested / "pkg", mode=mode) as c:
        assert where(await c.call_tool("log_decision", {"summary": "x"})) == (str(nested), "cwd")
    with running_http_server(allow_root=tmp_path, cwd=tmp_path, log=tmp_path / "server.log") as server:
        async with http(server.mcp_url, mode, headers={"X-Workspace-Id": str(nested / "pkg")}) as c:
            assert where(await c.call_tool("log_decision", {"summary": "y"})) == (str(nested), "header")
    assert not store_file(tmp_path).exists()


async def test_a_misnamed_workspace_argument_is_refused_and_names_the_right_one(tmp_path: Path, mode: str) -> None:
    alpha, beta = make_project(tmp_path / "alpha"), make_project(tmp_path / "beta")
    async with stdio_client(cwd=alpha, mode=mode) as c:
        for tool, args in (
            ("get_tables", {"projectRoot": str(beta)}),
            ("log_decision", {"summary": "x", "workspace_id": str(beta)}),
            ("get_decisions", {"project_path": str(beta)}),
        ):
            result = await c.call_tool(tool, args)
            assert code(result) == "unknown_argument", tool
            assert "use `workspace`" in result.content[0].text
    with running_http_server(allow_root=tmp_path, cwd=alpha, log=tmp_path / "server.log") as server:
        async with http(server.mcp_url, mode, headers={"X-Workspace-Id": str(alpha)}) as c:
            assert code(await c.call_tool("log_decision", {"summary": "x", "cwd": str(beta)})) == "unknown_argument"
    assert not store_file(alpha).exists() and not store_file(beta).exists()


async def test_a_workspace_header_in_utf8_reaches_its_project_and_latin1_garbage_is_refused(tmp_path: Path) -> None:
    cafe = make_project(tmp_path / "café")
    with running_http_server(allow_root=tmp_path, cwd=tmp_path, log=tmp_path / "server.log") as server:
        async with http(server.mcp_url, "auto", headers={"X-Workspace-Id": str(cafe).encode()}) as c:  # type: ignore[dict-item]
            assert where(await c.call_tool("log_decision", {"summary": "x"})) == (str(cafe), "header")
        latin1 = str(cafe).encode("latin-1")  # "é" as one byte: not UTF-8
        async with http(server.mcp_url, "auto", headers={"X-Workspace-Id": latin1}) as c:  # type: ignore[dict-item]
            result = await c.call_tool("log_decision", {"summary": "x"})
            assert code(result) == "invalid_workspace" and "UTF-8" in result.content[0].text
