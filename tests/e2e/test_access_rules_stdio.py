"""Access rules over stdio for a named agent: `serve --agent NAME --access-rules FILE`.

Over stdio the user chose the agent's name, so this is a policy for the user's own agents (a bot that
should only read, a reviewer that must not touch the vault), not a boundary against the user.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ._serving import run_to_exit
from ._support import clean_env, make_project, ok, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

RULES = """
[[tools]]
name = "bots read"
who = "bot"
allow = ["get_decisions", "where_am_i"]

[[workspaces]]
name = "the app"
who = ["bot", "ada"]
paths = ["{tmp}/app"]
access = "write"

[[workspaces]]
name = "the vault"
who = "*"
paths = ["{tmp}/vault"]
access = "none"
"""


@pytest.fixture
def world(tmp_path):
    tmp = Path(os.path.realpath(tmp_path))
    app, vault = make_project(tmp / "app"), make_project(tmp / "vault")
    rules = tmp / "rules.toml"
    rules.write_text(RULES.format(tmp=tmp))
    return {"tmp": tmp, "app": app, "vault": vault, "rules": rules}


def _code(result) -> str:
    assert result.is_error, result.content[0].text
    return result.structured_content["error"]["code"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_rules_that_name_the_stdio_agent_bound_its_tools_and_workspaces(world, mode):
    args = ("--agent", "bot", "--access-rules", str(world["rules"]), "--allow-root", str(world["tmp"]))
    async with stdio_client(cwd=world["app"], mode=mode, args=args, env=clean_env()) as bot:
        assert {t.name for t in (await bot.list_tools()).tools} == {"get_decisions", "where_am_i"}
        assert _code(await bot.call_tool("log_decision", {"summary": "s", "workspace": str(world["app"])})) == (
            "tool_not_allowed"
        )
        ok(await bot.call_tool("get_decisions", {"workspace": str(world["app"])}))
        assert _code(await bot.call_tool("get_decisions", {"workspace": str(world["vault"])})) == (
            "workspace_access_denied"
        )


async def test_another_agent_named_over_stdio_gets_its_own_rules(world):
    args = ("--agent", "ada", "--access-rules", str(world["rules"]))
    async with stdio_client(cwd=world["app"], mode="legacy", args=args, env=clean_env()) as ada:
        assert "log_decision" in {t.name for t in (await ada.list_tools()).tools}
        ok(await ada.call_tool("log_decision", {"summary": "ada decided", "workspace": str(world["app"])}))
        assert _code(await ada.call_tool("get_decisions", {"workspace": str(world["vault"])})) == (
            "workspace_access_denied"
        )


def test_access_rules_over_stdio_need_an_agent_to_apply_to(world):
    done = run_to_exit(["serve", "--access-rules", str(world["rules"])], cwd=world["app"], env=clean_env())
    assert done.returncode != 0
    assert "--agent" in done.stderr
