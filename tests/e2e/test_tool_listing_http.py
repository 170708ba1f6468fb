"""tools/list over real Streamable HTTP with access rules: each principal sees the tools its rules allow.

Two Homeport tokens against one `serve --http --auth --access-rules` process: `bot` is named by a tool
allowlist, `ada` by none. Listing is a convenience: the call-time check still refuses what is not listed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

from homeport.files.tokens import TokenStore

from ._serving import serving
from ._support import make_project

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

RULES = """
[[tools]]
name = "bots"
who = "bot"
allow = {allow}

[[workspaces]]
name = "everyone"
who = "*"
paths = ["{tmp}/**"]
access = "write"
"""


def _write_rules(path: Path, tmp: Path, allow: list[str]) -> None:
    # Written whole to a new file and renamed: the server never reads half a file.
    fresh = path.with_suffix(".new")
    fresh.write_text(RULES.format(allow=str(allow).replace("'", '"'), tmp=tmp))
    os.replace(fresh, path)


@pytest.fixture
def world(tmp_path):
    tmp = Path(os.path.realpath(tmp_path))
    project = make_project(tmp / "app")
    rules = tmp / "rules.toml"
    _write_rules(rules, tmp, ["get_decisions", "where_am_i"])
    tokens = TokenStore(tmp / "data" / "tokens.json")
    minted = {"bot": tokens.add("bot"), "ada": tokens.add("ada")}
    args = ["--allow-root", str(tmp), "--data-dir", str(tmp / "data"), "--auth", "--access-rules", str(rules)]
    with serving(args, cwd=tmp, log=tmp / "server.log") as served:
        yield {"served": served, "tokens": minted, "rules": rules, "tmp": tmp, "project": project}


@contextlib.asynccontextmanager
async def _client(world, who: str, mode: str, on_message: Any = None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {world['tokens'][who]}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        Client(
            streamable_http_client(f"{world['served'].base}/mcp", http_client=http),  # type: ignore[arg-type]
            mode=mode,  # type: ignore[arg-type]
            message_handler=on_message,
        ) as client,
    ):
        yield client


async def _names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_each_principal_lists_only_the_tools_its_rules_allow_in_both_eras(world, mode):
    async with _client(world, "bot", mode) as bot, _client(world, "ada", mode) as ada:
        assert await _names(bot) == {"get_decisions", "where_am_i"}
        everything = await _names(ada)
        assert {"get_decisions", "log_decision", "run_query", "list_folders"} <= everything
        # Listing is never the guard: a tool the bot was not shown is still refused when called by name.
        refused = await bot.call_tool("log_decision", {"summary": "x", "workspace": str(world["project"])})
        assert refused.is_error
        assert refused.structured_content["error"]["code"] == "tool_not_allowed"
        assert not (await bot.call_tool("get_decisions", {"workspace": str(world["project"])})).is_error


async def test_a_rules_change_tells_a_2025_session_its_tool_list_changed(world):
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(message, types.ToolListChangedNotification):
            changed.set()
        root = getattr(message, "root", None)
        if isinstance(root, types.ToolListChangedNotification):
            changed.set()

    async with _client(world, "bot", "legacy", on_message) as bot:
        assert bot.server_capabilities.tools is not None and bot.server_capabilities.tools.list_changed
        assert await _names(bot) == {"get_decisions", "where_am_i"}
        _write_rules(world["rules"], world["tmp"], ["get_decisions", "where_am_i", "search"])
        with anyio.fail_after(30):
            await changed.wait()
        assert await _names(bot) == {"get_decisions", "where_am_i", "search"}


async def test_a_broken_rules_file_lists_nothing_and_refuses_every_call(world):
    async with _client(world, "ada", "legacy") as ada:
        assert "log_decision" in await _names(ada)
        world["rules"].write_text("this is [not toml")
        assert await _names(ada) == set()
        refused = await ada.call_tool("get_decisions", {"workspace": str(world["project"])})
        assert refused.is_error
