"""`--store sqlite:///FILE` through a real stdio server (both protocol eras) and the shell: the memory goes to
the file the user named, and a call for another project is refused, never written beside it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ._support import CLI_BOOT, clean_env, error_text, make_project, ok, stdio_client, store_file, where

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


async def test_a_stdio_server_keeps_the_memory_in_the_named_file_and_refuses_another_project(
    tmp_path: Path, mode: str
) -> None:
    shop, blog = make_project(tmp_path / "shop"), make_project(tmp_path / "blog")
    file = tmp_path / "memory" / "shop.db"
    async with stdio_client(cwd=shop, mode=mode, args=("--store", f"sqlite:///{file}")) as client:
        written = await client.call_tool("log_decision", {"summary": "Use WAL"})
        assert where(written) == (str(shop), "cwd")
        assert [d["summary"] for d in ok(await client.call_tool("get_decisions", {}))["decisions"]] == ["Use WAL"]
        for tool, args in (("log_decision", {"summary": "blog only"}), ("get_decisions", {})):
            refused = await client.call_tool(tool, {**args, "workspace": str(blog)})
            text = error_text(refused)
            assert "store_holds_other_workspace" in text and str(shop) in text and str(blog) in text
    assert file.is_file()
    assert not store_file(shop).exists() and not store_file(blog).exists()


def homeport(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI_BOOT, *args],
        cwd=cwd,
        env=clean_env(HOMEPORT_NO_DAEMON="1"),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_shell_commands_take_the_same_file_and_say_where_it_is(tmp_path: Path) -> None:
    shop, blog = make_project(tmp_path / "shop"), make_project(tmp_path / "blog")
    spec = "sqlite:///../shop.db"  # relative to the directory the command runs in
    added = homeport("decisions", "add", "Use WAL", "--store", spec, cwd=shop)
    assert added.returncode == 0, added.stderr
    listed = homeport("decisions", "list", "--json", "--store", spec, cwd=shop)
    assert [d["summary"] for d in json.loads(listed.stdout)["decisions"]] == ["Use WAL"]
    shown = json.loads(homeport("where", "--json", "--store", spec, cwd=shop).stdout)
    assert shown["store"] == str(tmp_path / "shop.db") and shown["store_exists"] is True
    other = homeport("decisions", "list", "--store", spec, cwd=blog)  # ../shop.db from blog is the same file
    assert other.returncode == 1
    assert other.stderr.count("\n") == 1 and str(shop) in other.stderr and "--store" in other.stderr
    there = homeport("where", "--store", spec, cwd=blog)
    assert "holds the memory of the workspace" in there.stdout, there.stdout
    migrated = homeport("migrate", "--store", spec, cwd=shop)
    assert migrated.returncode == 0 and str(tmp_path / "shop.db") in migrated.stdout
    bad = homeport("decisions", "list", "--store", "sqlite://shop.db", cwd=shop)
    assert bad.returncode != 0 and "sqlite:///path/to/file.db" in bad.stderr
    assert not store_file(shop).exists() and not store_file(blog).exists()
