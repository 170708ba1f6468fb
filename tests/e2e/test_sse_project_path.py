"""Issue 22 #13: `/sse?project_path=` routes the calls of that SSE connection, as the TypeScript SDK's SSE
client and the MCP Inspector send it.

An SSE client puts its query string on the GET /sse URL only; its messages go to the
`/messages/?session_id=...` URL the server announces, which it cannot change. The GET's
`project_path` counts for that connection's calls, bound to the connection and its principal, and
never for another connection's.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import pytest
from mcp import Client
from mcp.client.sse import sse_client

from ._serving import serving
from ._support import make_project, ok

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(120)]


@contextlib.asynccontextmanager
async def sse(url: str, mode: str, **headers: str) -> AsyncIterator[Client]:
    async with Client(sse_client(url, headers=headers), mode=mode) as client:  # type: ignore[arg-type]
        yield client


def _mint(data_dir: Path, agent: str) -> str:
    from homeport.files.tokens import TokenStore

    return TokenStore(data_dir / "tokens.json").add(agent)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_project_path_on_the_sse_url_routes_every_call_of_that_connection(tmp_path: Path, mode: str) -> None:
    base = (tmp_path / "src").resolve()
    alpha, beta = make_project(base / "alpha"), make_project(base / "beta")
    with serving(["--allow-root", str(base)], cwd=base, log=tmp_path / "log") as served:
        async with (
            sse(f"{served.base}/sse?project_path={quote(str(alpha))}", mode) as on_alpha,
            sse(f"{served.base}/sse?project_path={quote(beta.as_uri())}", mode) as on_beta,
            sse(f"{served.base}/sse", mode) as on_none,
        ):
            for _ in range(2):
                wrote = ok(await on_alpha.call_tool("log_decision", {"summary": "by the sse url"}))
                assert (wrote["workspace"]["root"], wrote["workspace"]["source"]) == (str(alpha), "query")
            read = ok(await on_beta.call_tool("get_decisions", {}))
            assert (read["workspace"]["root"], read["workspace"]["source"]) == (str(beta), "query")
            assert read["decisions"] == []
            # The header still wins over the query, and an argument over both (the resolver's order).
            named = ok(await on_alpha.call_tool("get_decisions", {"workspace": str(beta)}))
            assert named["workspace"]["root"] == str(beta)
            # A connection that named no project is not given another connection's.
            unnamed = await on_none.call_tool("get_decisions", {})
            assert unnamed.is_error
            assert unnamed.structured_content["error"]["code"] == "workspace_unresolved"


async def test_under_auth_the_sse_project_path_is_checked_for_the_connections_principal(tmp_path: Path) -> None:
    base = (tmp_path / "src").resolve()
    alpha = make_project(base / "alpha")
    data = tmp_path / "data"
    token = _mint(data, "ada")
    (tmp_path / "rules.toml").write_text(f'[[workspaces]]\nwho = "ada"\npaths = ["{alpha}/**"]\naccess = "write"\n')
    args = [
        "--allow-root",
        str(base),
        "--auth",
        "--data-dir",
        str(data),
        "--access-rules",
        str(tmp_path / "rules.toml"),
    ]
    with serving(args, cwd=base, log=tmp_path / "log") as served:
        url = f"{served.base}/sse?project_path={quote(str(alpha))}"
        async with sse(url, "legacy", Authorization=f"Bearer {token}") as client:
            wrote = ok(await client.call_tool("log_decision", {"summary": "ada's"}))
    assert (wrote["workspace"]["root"], wrote["workspace"]["source"]) == (str(alpha), "query")
