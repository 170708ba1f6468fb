"""Issue 22 #11: a client root that is not `file://` is ignored with a note, never a failure of every call.

A 2025-era client listing `{"uri": "https://example.com/x"}` beside a valid `file://` root got
`internal_error ... please report it` on every call; a 2026-07-28 one got a protocol error. The
SDK's `Root` type admits only `file://` URIs, so such a listing fails its validation; Homeport
reads the listing itself, keeps the local roots and names the others in `where_am_i`'s note.
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
from pydantic import FileUrl
from tests.routing._drivers import ThreadedUvicorn

from homeport.core import ServeSettings, build_runtime
from homeport.server import build_http_app, build_server

pytestmark = [
    pytest.mark.anyio,
    # The client side: the SDK warns while it serializes a Root its type does not admit (it sends it all the same).
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning"),
]

FOREIGN = "https://example.com/x"


def _listing(*uris: str) -> Any:
    async def list_roots(_ctx: Any) -> types.ListRootsResult:
        # model_construct: what a client in another language sends, which the SDK's own types refuse to build.
        roots = [
            types.Root(uri=FileUrl(uri)) if uri.startswith("file://") else types.Root.model_construct(uri=uri)
            for uri in uris
        ]
        return types.ListRootsResult(roots=roots)

    return list_roots


@contextlib.asynccontextmanager
async def _client(
    transport: str, mode: str, settings: ServeSettings, roots: Any, **headers: str
) -> AsyncIterator[Client]:
    runtime = build_runtime(settings)
    try:
        server = build_server(runtime)
        if transport == "stdio":
            async with Client(server, mode=mode, list_roots_callback=roots) as client:  # type: ignore[arg-type]
                yield client
            return
        with ThreadedUvicorn(build_http_app(server, runtime)) as http_server:
            async with (
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
                Client(
                    streamable_http_client(f"http://127.0.0.1:{http_server.port}/mcp", http_client=http),  # type: ignore[arg-type]
                    mode=mode,
                    list_roots_callback=roots,
                ) as client,
            ):
                yield client
    finally:
        runtime.close()


def _settings(transport: str, tmp_path: Path, cwd: Path) -> ServeSettings:
    return ServeSettings(
        transport=transport,  # type: ignore[arg-type]
        cwd=cwd,
        home=tmp_path / "home",
        allow_roots=(tmp_path,) if transport == "http" else (),
    )


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_https_root_beside_a_file_root_is_ignored_and_named_and_calls_land_in_the_file_root(
    tmp_path: Path, projects: dict[str, Path], transport: str, mode: str
) -> None:
    alpha = projects["alpha"]
    roots = _listing(FOREIGN, alpha.as_uri())
    async with _client(transport, mode, _settings(transport, tmp_path, alpha), roots) as client:
        written = await client.call_tool("log_decision", {"summary": "beside a web root"})
        named = await client.call_tool("get_decisions", {"workspace": str(alpha)})
        report = await client.call_tool("where_am_i", {})
    for result in (written, named, report):
        assert not result.is_error, result.content
    assert written.structured_content["workspace"] == {"root": str(alpha), "source": "roots"}
    assert [d["summary"] for d in named.structured_content["decisions"]] == ["beside a web root"]
    note = report.structured_content["roots_note"]
    assert FOREIGN in note and "file://" in note, note
    assert report.structured_content["declared_roots"] == [alpha.as_uri(), FOREIGN]  # as the client said


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_only_non_file_roots_admit_no_workspace_and_the_refusal_names_them(
    tmp_path: Path, projects: dict[str, Path], transport: str, mode: str
) -> None:
    alpha = projects["alpha"]
    roots = _listing(FOREIGN, "vscode-remote://ssh-remote+box/home/ana/app")
    async with _client(transport, mode, _settings(transport, tmp_path, alpha), roots) as client:
        refused = await client.call_tool("log_decision", {"summary": "x", "workspace": str(alpha)})
        report = await client.call_tool("where_am_i", {})
    assert refused.is_error
    assert refused.structured_content["error"]["code"] == "workspace_denied", refused.content
    assert "none of them is a directory on this machine" in refused.content[0].text, refused.content[0].text
    assert FOREIGN in report.structured_content["roots_note"], report.structured_content
    assert not (alpha / ".homeport").exists()
