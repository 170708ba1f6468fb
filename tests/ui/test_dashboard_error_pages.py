"""Issue 22, finding 15: the dashboard answered 500 for every page of a logical workspace
(`--logical-workspaces`: `KeyError: 'root'`) and for a write the secret scan refused. Each now gets
a page that says what happened."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from homeport.store.logical import logical_store_root

from ._seed import seed, seed_store

pytestmark = pytest.mark.anyio

KEY = "acme/api"
SECRET = "Staging uploads use AKIAY2PKUUMK757T7BFZ with the shop-media bucket."


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found, "the page has no form token"
    return found.group(1)


@pytest.fixture
def logical_app(make_app, tmp_path: Path):
    (tmp_path / "src").mkdir()
    app, runtime = make_app(logical_workspaces=True)
    root = logical_store_root(Path(os.path.realpath(tmp_path / "data")), KEY)
    store = runtime.stores.get(root, create=True, key=KEY)
    assert store is not None
    return app, seed_store(store)


async def test_every_page_of_a_logical_workspace_answers_with_its_key_and_items(logical_app, client_for):
    app, items = logical_app
    client = client_for(app)
    wal = str(items["wal"]["id"])
    pages = {
        "/ui/w": ({"ws": KEY}, "Use SQLite in WAL mode"),
        "/ui/item": ({"ws": KEY, "type": "decision", "id": wal}, "Readers never block the writer"),
        "/ui/search": ({"ws": KEY, "q": "readers"}, "<mark>"),
        "/ui/activity": ({"ws": KEY}, "Build the dashboard"),
        "/ui/delete": ({"ws": KEY, "type": "decision", "id": wal}, "cannot be undone"),
    }
    for path, (params, text) in pages.items():
        page = await client.get(path, params=params)
        assert page.status_code == 200, (path, page.status_code, page.text[:300])
        assert text in page.text and KEY in page.text, path
    # A link on the workspace page leads to the item of the same key.
    workspace = await client.get("/ui/w", params={"ws": KEY})
    assert "ws=acme%2Fapi&amp;type=decision" in workspace.text
    # A correction is written to the key's memory and shown there.
    item = await client.get("/ui/item", params={"ws": KEY, "type": "decision", "id": wal})
    form = {"ws": KEY, "type": "decision", "id": wal, "summary": "Use SQLite in WAL mode, always", "confirm": "1"}
    saved = await client.post("/ui/edit", data={**form, "csrf": csrf_of(item.text)})
    assert saved.status_code == 303, saved.text[:300]
    assert "WAL mode, always" in (await client.get(saved.headers["location"])).text


async def test_a_write_the_secret_scan_refuses_gets_a_page_that_says_nothing_was_saved(
    make_app, client_for, project: Path
):
    app, runtime = make_app()
    items = seed(runtime, project)
    client = client_for(app)
    wal = str(items["wal"]["id"])
    item = await client.get("/ui/item", params={"ws": str(project), "type": "decision", "id": wal})
    form = {"ws": str(project), "type": "decision", "id": wal, "summary": SECRET, "confirm": "1"}
    refused = await client.post("/ui/edit", data={**form, "csrf": csrf_of(item.text)})
    assert refused.status_code == 422, (refused.status_code, refused.text[:500])
    assert "secret_detected" in refused.text and "AWS Access Key" in refused.text
    assert "Nothing was saved" in refused.text
    assert "AKIAY2PKUUMK757T7BFZ" not in refused.text  # the page never repeats the secret
    assert f"type=decision&amp;id={wal}" in refused.text  # a way back to the item
    page = await client.get("/ui/item", params={"ws": str(project), "type": "decision", "id": wal})
    assert "AKIAY2PKUUMK757T7BFZ" not in page.text and "Use SQLite in WAL mode" in page.text
