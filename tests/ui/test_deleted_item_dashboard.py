"""A deleted item keeps its page until it is purged: when and by whom it was deleted, its history as diffs,
and a restore button that goes through restore_version like any other dashboard write."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from homeport.store import decisions, patterns
from homeport.store.item_history import get_item_history, purge_item

from .test_dashboard_http import csrf_of

pytestmark = pytest.mark.anyio


async def test_a_deleted_item_shows_its_deletion_history_and_a_restore_that_brings_it_back(
    make_app, client_for, project: Path
):
    app, runtime = make_app()
    store = runtime.stores.get(project, create=True)
    d = decisions.log_decision(store, "Use WAL", rationale="readers never block")
    decisions.update_decision(store, d["id"], rationale="readers never block writers")
    client = client_for(app)
    address = {"ws": str(project), "type": "decision", "id": str(d["id"])}
    page = await client.get("/ui/item", params=address)
    form = {**address, "csrf": csrf_of(page.text)}
    assert (await client.post("/ui/delete", data=form)).status_code == 303  # the dashboard's own delete

    gone = await client.get("/ui/item", params=address)
    assert gone.status_code == 200, gone.text
    text = html.unescape(gone.text)
    notice = text.split('id="deleted"')[1].split("</p>")[0]
    assert "Deleted" in notice and '<strong class="principal">local</strong>' in notice and "delete_decision" in notice
    history = text.split('id="history"')[1].split("</section>")[0]
    heads = [part.split("</strong>")[0] for part in history.split("<strong>")[1:]]
    assert heads == ["deleted (version 3)", "changed (version 2)", "created (version 1)"]
    assert '<span class="d-add">+  "rationale": "readers never block writers",</span>' in history
    assert 'name="version" value="2"' in text and "Restore version 2" in text

    restore = {**address, "csrf": csrf_of(gone.text), "version": "2"}
    back = await client.post("/ui/restore", data=restore)
    assert back.status_code == 303 and "saved=1" in back.headers["location"]
    assert decisions.get_decisions(store)[0]["rationale"] == "readers never block writers"
    newest = get_item_history(store, "decision", d["id"], limit=1)[0]
    assert not newest["deleted"] and newest["written_by"]["tool"] == "restore_version"
    assert newest["written_by"]["client"] == "homeport-dashboard"
    again = await client.get("/ui/item", params=address)
    assert again.status_code == 200 and 'id="deleted"' not in again.text and 'id="edit"' in again.text


async def test_a_restore_without_the_form_token_changes_nothing(make_app, client_for, project: Path):
    app, runtime = make_app()
    store = runtime.stores.get(project, create=True)
    p = patterns.log_system_pattern(store, "Repository", "one module per table")
    patterns.delete_system_pattern(store, p["id"])
    client = client_for(app)
    form = {"ws": str(project), "type": "system_pattern", "id": str(p["id"]), "version": "1"}
    refused = await client.post("/ui/restore", data={**form, "csrf": "00"})
    assert refused.status_code == 403
    assert get_item_history(store, "system_pattern", p["id"], limit=1)[0]["deleted"]


async def test_a_purged_item_and_one_that_never_existed_are_404(make_app, client_for, project: Path):
    app, runtime = make_app()
    store = runtime.stores.get(project, create=True)
    d = decisions.log_decision(store, "Temporary")
    decisions.delete_decision(store, d["id"])
    purge_item(store, "decision", d["id"])
    client = client_for(app)
    for item_id in (d["id"], 999):
        page = await client.get("/ui/item", params={"ws": str(project), "type": "decision", "id": str(item_id)})
        assert page.status_code == 404, page.text
        assert "Restore" not in page.text
