"""What `homeport serve` over stdio writes on stderr, which editors copy into their users' logs.

A client that declares roots makes the server ask for them on every call; the SDK marks that
capability deprecated (SEP-2577) and warns each time, which Homeport uses on purpose and must not
pass on to the user.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from ._support import clean_env, make_project, ok, serve_args, where

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_that_declares_roots_gets_no_warning_on_the_servers_stderr(tmp_path: Path, mode: str) -> None:
    project = make_project(tmp_path / "shop")

    async def list_roots(_context: object) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=project.as_uri(), name=project.name)])

    params = StdioServerParameters(command=sys.executable, args=serve_args(), cwd="/", env=clean_env())
    errlog_path = tmp_path / "stderr.txt"
    with errlog_path.open("w", encoding="utf-8") as errlog:
        transport = stdio_client(params, errlog=errlog)
        async with Client(transport, mode=mode, list_roots_callback=list_roots) as client:  # type: ignore[arg-type]
            written = await client.call_tool("log_decision", {"summary": "Use SQLite WAL"})
            listed = ok(await client.call_tool("get_decisions", {}))
    assert where(written) == (str(project), "roots")
    assert listed["workspace"] == {"root": str(project), "source": "roots"}
    stderr = errlog_path.read_text(encoding="utf-8")
    assert stderr.startswith("homeport: stdio;"), stderr
    assert "Warning" not in stderr, stderr
