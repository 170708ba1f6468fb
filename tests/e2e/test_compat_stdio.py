"""ConPort's names over a real `homeport serve --tools workspace,conport,devdb` stdio process."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._support import clean_env, error_text, make_project, ok, stdio_client, store_file

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_conport_client_over_stdio_writes_where_workspace_id_says(tmp_path: Path):
    alpha, beta = make_project(tmp_path / "alpha"), make_project(tmp_path / "beta")
    env = clean_env(HOMEPORT_TOOLS="workspace,conport,devdb")
    async with stdio_client(cwd=beta, mode="legacy", env=env) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"search_decisions_fts", "link_conport_items", "run-query"} <= names and "search" not in names
        logged = ok(await client.call_tool("log_decision", {"workspace_id": str(alpha), "summary": "Use WAL"}))
        assert logged["workspace"]["root"] == str(alpha) and logged["timestamp"]
        found = ok(await client.call_tool("search_decisions_fts", {"workspace_id": str(alpha), "query_term": "WAL"}))
        assert [hit["summary"] for hit in found["result"]] == ["Use WAL"]
        refused = await client.call_tool("log_decision", {"workspace_id": "relative", "summary": "x"})
        assert "relative" in error_text(refused)
    assert store_file(alpha).exists() and not store_file(beta).exists()  # nothing fell back to the cwd
