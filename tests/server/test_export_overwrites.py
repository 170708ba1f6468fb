"""`export` replaces only what an earlier Homeport export wrote (issue 22, #8).

`export(output_dir=".")` used to replace the project's own `manifest.json` and `links.json`. An
export directory is recognised by Homeport's manifest; any other file where an export file goes is
refused by name, and nothing is written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

pytestmark = pytest.mark.anyio
PROJECT_MANIFEST = '{\n  "name": "shop-web",\n  "short_name": "Shop",\n  "start_url": "/"\n}\n'
PROJECT_LINKS = '[{"title": "Docs", "href": "https://docs.example.com"}]\n'


def _tree(root: Path) -> dict[str, bytes]:
    """The project's files, without git's and the store's (reading the store touches its WAL index)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not {".git", ".homeport"} & set(p.relative_to(root).parts)
    }


async def _export(c: Client, root: Path, **arguments: object):
    return await c.call_tool("export", {"workspace": str(root), **arguments})


async def test_export_to_the_project_root_does_not_replace_the_projects_own_manifest_and_links(
    server_factory, projects
):
    root = projects["alpha"]
    (root / "manifest.json").write_text(PROJECT_MANIFEST)
    (root / "links.json").write_text(PROJECT_LINKS)
    async with Client(server_factory()) as c:
        await c.call_tool("log_decision", {"summary": "Use Stripe", "workspace": str(root)})
        before = _tree(root)
        r = await _export(c, root, output_dir=".")
    assert (root / "manifest.json").read_text() == PROJECT_MANIFEST
    assert (root / "links.json").read_text() == PROJECT_LINKS
    assert r.is_error, "export replaced files the project wrote"
    error = r.structured_content["error"]
    assert error["code"] == "invalid_item"
    assert "manifest.json" in error["message"] and "not written by Homeport" in error["message"]
    assert _tree(root) == before  # nothing else was written either


async def test_a_file_of_an_export_name_without_a_homeport_manifest_beside_it_is_refused_by_name(
    server_factory, projects
):
    root = projects["alpha"]
    (root / "data").mkdir()
    (root / "data" / "decisions.json").write_text('{"mine": true}\n')
    async with Client(server_factory()) as c:
        r = await _export(c, root, output_dir="data")
    assert r.structured_content["error"]["code"] == "invalid_item"
    assert "decisions.json" in r.structured_content["error"]["message"]
    assert sorted(p.name for p in (root / "data").iterdir()) == ["decisions.json"]
    assert (root / "data" / "decisions.json").read_text() == '{"mine": true}\n'


async def test_an_earlier_homeport_export_is_replaced_in_either_format(server_factory, projects):
    root = projects["alpha"]
    async with Client(server_factory()) as c:
        await c.call_tool("log_decision", {"summary": "first", "workspace": str(root)})
        first = await _export(c, root, output_dir=".")
        await c.call_tool("log_decision", {"summary": "second", "workspace": str(root)})
        again = await _export(c, root, output_dir=".")
        markdown = await _export(c, root, output_dir=".", format="markdown")
        back = await _export(c, root, output_dir=".")
    for r in (first, again, markdown, back):
        assert not r.is_error, r.content[0].text
    assert [d["summary"] for d in json.loads((root / "decisions.json").read_text())] == ["first", "second"]
    assert json.loads((root / "manifest.json").read_text())["format"] == "json"


async def test_an_export_written_before_the_marker_is_still_recognised_as_homeports(server_factory, projects):
    root = projects["alpha"]
    target = root / ".homeport" / "export"
    target.mkdir(parents=True)
    legacy = {"format": "json", "format_version": 1, "schema_revision": "x", "exported_at": "2026-01-01", "counts": {}}
    (target / "manifest.json").write_text(json.dumps(legacy))
    (target / "decisions.json").write_text("[]\n")
    async with Client(server_factory()) as c:
        r = await _export(c, root)
    assert not r.is_error, r.content[0].text
    assert json.loads((target / "manifest.json").read_text())["format_version"] == 2
