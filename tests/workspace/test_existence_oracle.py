"""Issue 22, finding 17: `where_am_i(workspace="/etc/shadow")` said "is not a directory" and a missing
path "does not exist", so a caller could probe which files exist anywhere on the server. Outside the
caller's roots (the allowlist, the client's roots, the denied system trees) every path now gets the
same answer whatever is there; inside them the precise message stays."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp import Client
from mcp.types import ListRootsResult, Root

pytestmark = pytest.mark.anyio


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    src = tmp_path / "src"
    (src / "app" / ".git").mkdir(parents=True)
    (src / "notes.txt").write_text("inside\n")
    outside = tmp_path / "outside"
    (outside / "project").mkdir(parents=True)
    (outside / "secret.txt").write_text("x\n")
    (src / "app" / "escape").symlink_to(outside / "secret.txt")
    return {"src": src, "app": src / "app", "outside": outside}


def probes(tree: dict[str, Path]) -> list[str]:
    """Outside every root: a file, a directory, nothing, and the same reached through .. and a symlink."""
    outside = tree["outside"]
    return [
        "/etc/shadow",  # a file (on most machines)
        "/etc/no-such-file-here",
        "/etc",
        str(outside / "secret.txt"),
        str(outside / "project"),
        str(outside / "missing"),
        str(outside / "missing" / "deeper"),
        str(tree["src"] / ".." / "outside" / "secret.txt"),
        str(tree["src"] / ".." / "outside" / "missing"),
        str(tree["app"] / "escape"),
        (outside / "secret.txt").as_uri(),
        (outside / "missing").as_uri(),
    ]


async def answers(client: Client, values: list[str], tool: str) -> dict[str, str]:
    out = {}
    for value in values:
        result = await client.call_tool(tool, {"workspace": value})
        data = result.structured_content or {}
        text = data.get("error") if tool == "where_am_i" else result.content[0].text
        assert text, (value, data)
        if tool != "where_am_i":
            assert result.is_error, value
        out[value] = str(text)
    return out


def same_shape(found: dict[str, str], tree: dict[str, Path]) -> set[str]:
    """Each answer with the value it names taken out: one shape means nothing about the path leaked."""
    shapes = set()
    for value, text in found.items():
        shape = text.replace(repr(value), "<value>").replace(value, "<value>")
        shape = re.sub(r"from [a-z /_-]+\)", "from <source>)", shape)
        assert "not a directory" not in shape and "does not exist" not in shape, (value, text)
        shapes.add(shape)
    return shapes


@pytest.mark.parametrize("tool", ["where_am_i", "get_decisions"])
async def test_outside_the_allowed_roots_a_file_and_a_missing_path_get_the_same_answer(
    server_factory, tree, tool
) -> None:
    server = server_factory(transport="http", allow_roots=(tree["src"],), cwd=tree["src"])
    async with Client(server) as c:
        found = await answers(c, probes(tree), tool)
    assert len(same_shape(found, tree)) == 1, found


async def test_outside_the_clients_roots_a_file_and_a_missing_path_get_the_same_answer(server_factory, tree) -> None:
    async def roots(_context, _params=None) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=tree["app"].as_uri())])

    server = server_factory(cwd=tree["app"])  # stdio: no allowlist, only the client's roots bound it
    values = [v for v in probes(tree) if not v.startswith("/etc")]
    async with Client(server, mode="legacy", list_roots_callback=roots) as c:
        found = await answers(c, values, "where_am_i")
    assert len(same_shape(found, tree)) == 1, found


async def test_inside_the_allowed_roots_the_precise_message_stays(server_factory, tree) -> None:
    server = server_factory(transport="http", allow_roots=(tree["src"],), cwd=tree["src"])
    async with Client(server) as c:
        found = await answers(c, [str(tree["src"] / "missing"), str(tree["src"] / "notes.txt")], "where_am_i")
    assert "does not exist" in found[str(tree["src"] / "missing")]
    assert "is not a directory" in found[str(tree["src"] / "notes.txt")]
