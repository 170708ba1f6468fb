"""The dashboard's history shows every version of every item type, each as a diff against the one before."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from homeport.store import contexts, custom_data, decisions, patterns, progress

pytestmark = pytest.mark.anyio


def history_of(page: str) -> str:
    return html.unescape(page.split('id="history"')[1].split("</section>")[0])


def removed_and_added(section: str) -> tuple[list[str], list[str]]:
    def lines(kind: str) -> list[str]:
        return [part.split("</span>")[0] for part in section.split(f'<span class="d-{kind}">')[1:]]

    return lines("del"), lines("add")


async def test_the_history_of_every_item_type_shows_what_each_version_changed(make_app, client_for, project: Path):
    app, runtime = make_app()
    store = runtime.stores.get(project, create=True)
    d = decisions.log_decision(store, "Use WAL", rationale="readers never block")
    decisions.update_decision(store, d["id"], summary="Use SQLite WAL")
    p = progress.log_progress(store, "TODO", "ship the dashboard")
    progress.update_progress(store, p["id"], status="DONE")
    s = patterns.log_system_pattern(store, "Repository", "one module per table")
    patterns.update_system_pattern(store, s["id"], description="one module per aggregate")
    c = custom_data.log_custom_data(store, "ProjectGlossary", "WAL", "write-ahead log")
    custom_data.log_custom_data(store, "ProjectGlossary", "WAL", "write-ahead logging")
    contexts.update_context(store, "active", content={"focus": "versions"})
    contexts.update_context(store, "active", content={"focus": "diffs"})
    client = client_for(app)
    expected = {
        ("decision", d["id"]): ('"summary": "Use WAL"', '"summary": "Use SQLite WAL"'),
        ("progress", p["id"]): ('"status": "TODO"', '"status": "DONE"'),
        ("system_pattern", s["id"]): (
            '"description": "one module per table"',
            '"description": "one module per aggregate"',
        ),
        ("custom_data", c["id"]): ('"value": "write-ahead log"', '"value": "write-ahead logging"'),
        ("active_context", 1): ('"focus": "versions"', '"focus": "diffs"'),
    }
    for (kind, item_id), (old, new) in expected.items():
        page = await client.get("/ui/item", params={"ws": str(project), "type": kind, "id": str(item_id)})
        assert page.status_code == 200, page.text
        section = history_of(page.text)
        newest = section.split("<li>")[1]  # newest first: the change, as a diff against the version before
        removed, added = removed_and_added(newest)
        assert any(old in line for line in removed) and any(new in line for line in added), (kind, newest)
        if kind != "active_context":
            assert "changed (version 2)" in newest and "created (version 1)" in section.split("<li>")[2]
