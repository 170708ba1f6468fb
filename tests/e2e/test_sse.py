"""The legacy HTTP+SSE transport (/sse) of a real `homeport serve --http`: the same routing, guards and
auth as /mcp. Routing on every source over SSE is also covered by tests/routing (the property test
draws SSE clients beside Streamable HTTP ones)."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.sse import sse_client

from ._serving import serving
from ._support import error_text, make_project, ok

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(120)]


@contextlib.asynccontextmanager
async def sse(base: str, mode: str, **headers: str) -> AsyncIterator[Client]:
    async with Client(sse_client(f"{base}/sse", headers=headers), mode=mode) as client:  # type: ignore[arg-type]
        yield client


def _mint(data_dir: Path, agent: str) -> str:
    from homeport.files.tokens import TokenStore

    return TokenStore(data_dir / "tokens.json").add(agent)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_sse_client_routes_by_header_argument_and_session_and_is_bounded_by_the_allowed_root(
    tmp_path: Path, mode: str
) -> None:
    base = (tmp_path / "src").resolve()
    alpha, beta = make_project(base / "alpha"), make_project(base / "beta")
    outside = make_project(tmp_path / "outside")
    with serving(["--allow-root", str(base)], cwd=base, log=tmp_path / "log") as served:
        async with sse(served.base, mode, **{"X-Workspace-Id": str(alpha)}) as client:
            written = ok(await client.call_tool("log_decision", {"summary": "over sse"}))
            assert written["workspace"] == {**written["workspace"], "root": str(alpha), "source": "header"}
            named = ok(await client.call_tool("get_decisions", {"workspace": str(beta)}))
            assert named["workspace"]["root"] == str(beta) and named["decisions"] == []
            refused = await client.call_tool("get_decisions", {"workspace": str(outside)})
            assert refused.structured_content["error"]["code"] == "workspace_denied"
            unknown = await client.call_tool("get_decisions", {"projectRoot": str(beta)})
            assert "use `workspace`" in error_text(unknown)
        async with sse(served.base, mode) as client:  # no header: the session default, on 2025-era connections
            bound = ok(await client.call_tool("use_workspace", {"workspace": str(beta)}))
            assert bound["bound_to_session"] is (mode == "legacy")
            after = await client.call_tool("get_decisions", {})
            if mode == "legacy":
                assert ok(after)["workspace"] == {**ok(after)["workspace"], "root": str(beta), "source": "session"}
            else:  # 2026-07-28 keeps nothing between calls: a call must name its workspace
                assert after.is_error
    # Connections that ended and a clean stop leave no traceback in the log.
    log = (tmp_path / "log").read_text()
    assert "Traceback" not in log and "ERROR" not in log, log


def test_sse_checks_host_and_origin_and_caps_message_bodies(tmp_path: Path) -> None:
    base = (tmp_path / "src").resolve()
    base.mkdir()
    with serving(["--allow-root", str(base)], cwd=base, log=tmp_path / "log") as served, httpx2.Client() as http:
        assert http.get(f"{served.base}/sse", headers={"Host": "evil.example"}).status_code == 421
        assert http.get(f"{served.base}/sse", headers={"Origin": "http://evil.example"}).status_code == 403
        # A declared body over the limit is refused from its headers: nothing of it is sent here, so the
        # answer cannot race the upload (a server that refuses mid-upload may reset the connection).
        with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
            sock.sendall(
                f"POST /messages/?session_id={'0' * 32} HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {4 * 1024 * 1024 + 2}\r\n\r\n".encode()
            )
            answer = ""
            while chunk := sock.recv(65536).decode("latin-1"):  # to the end of the JSON body
                answer += chunk
                if answer.rstrip().endswith("}"):
                    break
        assert answer.startswith("HTTP/1.1 413") and "4194304 bytes" in answer, answer


async def test_under_auth_sse_needs_a_token_and_a_connection_is_its_openers_alone(tmp_path: Path) -> None:
    base = (tmp_path / "src").resolve()
    make_project(base / "alpha")
    data = tmp_path / "data"
    ada, zed = _mint(data, "ada"), _mint(data, "zed")
    args = ["--allow-root", str(base), "--auth", "--data-dir", str(data)]
    with serving(args, cwd=base, log=tmp_path / "log") as served:
        with httpx2.Client() as http:
            assert http.get(f"{served.base}/sse").status_code == 401
        # ada's connection: a message posted to it with zed's token is refused as if it did not exist.
        session: list[str] = []
        # No X-Workspace-Id: ada is in no directory, so choosing alpha would be a 403 (test_workspace_403.py).
        headers = {"Authorization": f"Bearer {ada}"}
        async with Client(
            sse_client(f"{served.base}/sse", headers=headers, on_session_created=session.append), mode="legacy"
        ) as client:
            await client.call_tool("where_am_i", {})
            assert session, "the SDK names the connection"
            ping = json.dumps({"jsonrpc": "2.0", "method": "ping", "id": 99})
            async with httpx2.AsyncClient() as http:
                hijack = await http.post(
                    f"{served.base}/messages/?session_id={session[0]}",
                    content=ping,
                    headers={"Authorization": f"Bearer {zed}", "Content-Type": "application/json"},
                )
            assert hijack.status_code == 404
