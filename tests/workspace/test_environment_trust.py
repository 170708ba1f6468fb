"""A repository's database configuration reads the user's environment only once the user trusts it.

Found after the fix for issue 22, finding 1: a cloned repository's `.homeport/config.toml` could name
`${SOME_CLOUD_SECRET}` in a local database's URL, and Homeport filled it in from the user's
environment over stdio; the value then reaches the agent (an error naming the database, or
`SELECT current_database()`), and the agent's provider. Reading the user's secrets is one of the
things `homeport trust` must grant first.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client

from homeport.cli.main import cli
from homeport.workspace.trust import TrustBook

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("git") is None, reason="needs git")]

SECRET = "cloud-secret-5b1d77e0"
CONFIG = '[database]\nurl = "sqlite:///${SOME_CLOUD_SECRET}.db"\n'


def clone(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    (path / ".homeport").mkdir()
    (path / ".homeport" / "config.toml").write_text(CONFIG, encoding="utf-8")
    with sqlite3.connect(path / f"{SECRET}.db") as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    return path.resolve()


@pytest.fixture
def user(shell_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SOME_CLOUD_SECRET", SECRET)
    return shell_home / ".config" / "homeport" / "trusted-projects.json"


async def test_a_repository_config_reads_no_variable_of_the_users_environment_until_trusted(
    tmp_path, user, server_factory
) -> None:
    root = clone(tmp_path / "x")
    environ = {"SOME_CLOUD_SECRET": SECRET}
    async with Client(server_factory(transport="stdio", trust_file=user, environ=environ)) as client:
        refused = await client.call_tool("run_query", {"workspace": str(root), "query": "SELECT 1"})
        assert refused.is_error and refused.structured_content["error"]["code"] == "database_not_allowed"
        text = refused.content[0].text
        assert "SOME_CLOUD_SECRET" in text and "waiting for trust" in text and SECRET not in text
        assert f"homeport trust --project {root}" in text
    done = CliRunner().invoke(cli, ["trust", "--project", str(root)])
    assert done.exit_code == 0, done.output
    assert "SOME_CLOUD_SECRET" in done.output and SECRET not in done.output
    [record] = TrustBook(user).records().values()
    assert record.environment == ("SOME_CLOUD_SECRET",)
    async with Client(server_factory(transport="stdio", trust_file=user, environ=environ)) as client:
        tables = await client.call_tool("get_tables", {"workspace": str(root)})
        assert not tables.is_error and "orders" in tables.structured_content["tables"], tables.content


async def test_a_config_that_reads_no_variable_needs_no_trust(tmp_path, user, server_factory) -> None:
    root = clone(tmp_path / "x")
    (root / ".homeport" / "config.toml").write_text(f'[database]\nurl = "sqlite:///{SECRET}.db"\n')
    async with Client(server_factory(transport="stdio", trust_file=user, environ={"X": "y"})) as client:
        tables = await client.call_tool("get_tables", {"workspace": str(root)})
        assert not tables.is_error, tables.content
