"""The dashboard over HTTP in process: what it shows, what it escapes, what it refuses."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from homeport.core.catalog import CATALOG
from homeport.core.pipeline import CallPipeline, LocalRequest
from homeport.store import decisions

from ._seed import seed

pytestmark = pytest.mark.anyio


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found, "the page has no form token"
    return found.group(1)


async def test_every_page_of_a_seeded_workspace_answers_with_its_items(make_app, client_for, project: Path):
    app, runtime = make_app()
    items = seed(runtime, project)
    client = client_for(app)
    page = await client.get("/ui/w", params={"ws": str(project)})
    assert page.status_code == 200
    for text in (
        "Use SQLite in WAL mode",
        "Build the dashboard",
        "One composition root",
        "Write-ahead log",
        "max_body",
    ):
        assert text in page.text
    assert "<strong>coding agents</strong>" in page.text  # Markdown rendered
    item = await client.get("/ui/item", params={"ws": str(project), "type": "decision", "id": items["wal"]["id"]})
    assert "implements" in item.text and "Build the dashboard" in item.text and "<svg" in item.text
    found = await client.get("/ui/search", params={"ws": str(project), "q": "readers"})
    assert "<mark>" in found.text and "Use SQLite in WAL mode" in found.text
    activity = await client.get("/ui/activity", params={"ws": str(project)})
    assert "Build the dashboard" in activity.text and "version 2" in activity.text
    listing = await client.get("/ui/")
    assert str(project) in listing.text


async def test_an_item_holding_a_script_tag_shows_it_as_text(make_app, client_for, project: Path):
    app, runtime = make_app()
    store = runtime.stores.get(project, create=True)
    evil = decisions.log_decision(
        store, "<script>alert('x')</script>", rationale="<img src=x onerror=alert(1)> [x](javascript:alert(1))"
    )
    client = client_for(app)
    for path, params in (
        ("/ui/w", {"ws": str(project)}),
        ("/ui/item", {"ws": str(project), "type": "decision", "id": evil["id"]}),
        ("/ui/search", {"ws": str(project), "q": "script"}),
    ):
        page = await client.get(path, params=params)
        assert page.status_code == 200, page.text
        assert "<script>alert" not in page.text and "<img src=x" not in page.text, path
        assert 'href="javascript:' not in page.text, path
        assert "&lt;script&gt;" in page.text, path
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert "<script>" not in re.sub(r'<script src="/ui/static/dashboard.js" defer></script>', "", page.text)


async def test_a_write_without_or_with_a_wrong_form_token_changes_nothing(make_app, client_for, project: Path):
    app, runtime = make_app()
    items = seed(runtime, project)
    client = client_for(app)
    form = {"ws": str(project), "type": "decision", "id": str(items["wal"]["id"]), "summary": "Hijacked"}
    for token in (None, "0" * 64):
        data = form if token is None else {**form, "csrf": token}
        refused = await client.post("/ui/edit", data=data)
        assert refused.status_code == 403
        gone = await client.post("/ui/delete", data=data)
        assert gone.status_code == 403
    page = await client.get("/ui/item", params={"ws": str(project), "type": "decision", "id": items["wal"]["id"]})
    assert "Hijacked" not in page.text and "Use SQLite in WAL mode" in page.text
    saved = await client.post("/ui/edit", data={**form, "csrf": csrf_of(page.text), "confirm": "1"})
    assert saved.status_code == 303
    after = await client.get(saved.headers["location"])
    assert "Hijacked" in after.text and "Saved." in after.text


async def test_a_cross_site_request_is_refused_even_with_a_valid_token(make_app, client_for, project: Path):
    app, runtime = make_app()
    items = seed(runtime, project)
    client = client_for(app)
    page = await client.get("/ui/item", params={"ws": str(project), "type": "decision", "id": items["wal"]["id"]})
    form = {
        "ws": str(project),
        "type": "decision",
        "id": str(items["wal"]["id"]),
        "summary": "X",
        "csrf": csrf_of(page.text),
    }
    refused = await client.post("/ui/edit", data=form, headers={"origin": "https://evil.example"})
    assert refused.status_code == 403
    rebinding = await client.get("/ui/w", params={"ws": str(project)}, headers={"host": "evil.example"})
    assert rebinding.status_code == 403


async def test_with_auth_a_person_logs_in_with_a_token_and_sees_only_their_workspaces(
    make_app, client_for, project: Path, agents: dict[str, str], tmp_path: Path
):
    app, runtime = make_app(auth=True)
    seed(runtime, project)
    client = client_for(app)
    first = await client.get("/ui/w", params={"ws": str(project)})
    assert first.status_code == 303 and first.headers["location"].startswith("/ui/login")
    login = await client.get(first.headers["location"])
    assert login.status_code == 200 and 'name="token"' in login.text
    token = csrf_of(login.text)
    bad = await client.post("/ui/login", data={"token": "hp_not_a_token", "csrf": token, "next": "/ui/"})
    assert bad.status_code == 401 and "homeport_ui" not in bad.headers.get("set-cookie", "")
    cross = await client.post(
        "/ui/login", data={"token": agents["ada"], "csrf": token}, headers={"origin": "http://evil.example"}
    )
    assert cross.status_code == 403
    good = await client.post("/ui/login", data={"token": agents["ada"], "csrf": token, "next": f"/ui/w?ws={project}"})
    assert good.status_code == 303
    cookie = good.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/ui" in cookie
    page = await client.get(good.headers["location"])
    assert page.status_code == 200 and "Use SQLite in WAL mode" in page.text
    # bea's organization has no root here: the same pipeline refuses her, and the list hides it.
    other = client_for(app)
    own = csrf_of((await other.get("/ui/login")).text)  # a form token is this browser's own (finding 14)
    signed = await other.post("/ui/login", data={"token": agents["bea"], "csrf": own, "next": "/ui/"})
    assert signed.status_code == 303
    refused = await other.get("/ui/w", params={"ws": str(project)})
    assert refused.status_code == 403 and "workspace_access_denied" in refused.text
    listing = await other.get("/ui/")
    assert str(project) not in listing.text
    assert str(project) in (await client.get("/ui/")).text


async def test_a_read_only_dashboard_shows_no_forms_and_refuses_writes(make_app, client_for, project: Path):
    app, runtime = make_app(read_only=True)
    items = seed(runtime, project)
    client = client_for(app)
    page = await client.get("/ui/item", params={"ws": str(project), "type": "decision", "id": items["wal"]["id"]})
    assert 'action="/ui/edit"' not in page.text and "Delete…" not in page.text and "read-only" in page.text
    # A form token from a page that still has a form (the log-out form is not shown without auth): derive one.
    token = runtime_token(app, client, "local")
    refused = await client.post(
        "/ui/edit",
        data={"ws": str(project), "type": "decision", "id": str(items["wal"]["id"]), "summary": "X", "csrf": token},
    )
    assert refused.status_code == 403 and "read-only" in refused.text


def runtime_token(app, client, credential: str) -> str:
    """The form token the dashboard puts in `client`'s forms (bound to its pre-session cookie) for `credential`."""
    from starlette.routing import Mount

    starlette_app = app
    while not hasattr(starlette_app, "router"):  # the ASGI middleware around the Starlette app
        starlette_app = starlette_app.app
    mount = next(r for r in starlette_app.router.routes if isinstance(r, Mount) and r.path == "/ui")
    assert mount.app.app is not None, "built on the first request to /ui"
    browser = client.cookies.get("homeport_ui_browser")
    return mount.app.app.state.dashboard.guard.form_token(browser, credential)


async def test_decisions_are_paginated_newest_first_and_filtered_by_tag(make_app, client_for, project: Path):
    app, runtime = make_app()
    store = runtime.stores.get(project, create=True)
    for n in range(120):
        decisions.log_decision(store, f"Decision number {n:03d}", tags=["even"] if n % 2 == 0 else ["odd"])
    client = client_for(app)
    first = await client.get("/ui/w", params={"ws": str(project)})
    assert (
        "Page 1 of 5" in first.text and "Decision number 095" in first.text and "Decision number 094" not in first.text
    )
    last = await client.get("/ui/w", params={"ws": str(project), "page": 5})
    assert "Decision number 000" in last.text and "Decision number 020" not in last.text
    even = await client.get("/ui/w", params={"ws": str(project), "tag": "even"})
    assert "Decision number 118" in even.text and "Decision number 119" not in even.text and "Page 1 of 3" in even.text


def test_a_read_only_server_refuses_every_write_tool_in_the_pipeline(make_app, project: Path):
    from homeport.core.catalog import CATALOG
    from homeport.core.pipeline import CallPipeline, LocalRequest
    from homeport.errors import PermissionDeniedError

    _, runtime = make_app(read_only=True, workspace=str(project))
    request = LocalRequest()
    spec = CATALOG["log_decision"]
    pipeline = CallPipeline(runtime)
    # The shell's path, which may forward to an owner, and the deciding step itself.
    with pytest.raises(PermissionDeniedError, match="--read-only"):
        pipeline.call_blocking(spec, {"summary": "x"}, request)
    with pytest.raises(PermissionDeniedError, match="--read-only"):
        pipeline.decide(spec, {"summary": "x"}, request)
    assert not (project / ".homeport").exists()
    reads = CATALOG["get_decisions"]
    assert pipeline.call_blocking(reads, {}, request)["decisions"] == []


async def test_corrections_and_deletions_of_each_item_type_are_written_by_their_tools(
    make_app, client_for, project: Path
):
    app, runtime = make_app()
    items = seed(runtime, project)
    client = client_for(app)
    page = await client.get("/ui/item", params={"ws": str(project), "type": "active_context", "id": 1})
    base = {"ws": str(project), "csrf": csrf_of(page.text), "confirm": "1"}
    edits = [
        ({"type": "decision", "id": items["wal"]["id"], "summary": "Use SQLite with WAL", "tags": "db"}, "with WAL"),
        ({"type": "progress", "id": items["task"]["id"], "status": "DONE", "description": "Built it"}, "Built it"),
        (
            {"type": "system_pattern", "id": items["pattern"]["id"], "description": "Settings once", "tags": ""},
            "Settings once",
        ),
        ({"type": "active_context", "id": 1, "content": '{"focus": "Release"}'}, "Release"),
    ]
    for form, expected in edits:
        saved = await client.post("/ui/edit", data={**base, **{k: str(v) for k, v in form.items()}})
        assert saved.status_code == 303, saved.text
        assert expected in (await client.get(saved.headers["location"])).text
    found = await client.get("/ui/search", params={"ws": str(project), "q": "WAL"})
    assert "Use SQLite with WAL" in found.text  # the correction is in the search index too
    history = await client.get("/ui/item", params={"ws": str(project), "type": "active_context", "id": 1})
    assert "version 3" in history.text
    bad = await client.post("/ui/edit", data={**base, "type": "active_context", "id": "1", "content": "{not json"})
    assert bad.status_code == 400 and "not JSON" in bad.text
    gone = await client.post("/ui/delete", data={**base, "type": "progress", "id": str(items["task"]["id"])})
    assert gone.status_code == 400 and "cascade" in gone.text  # it has children: refused unless asked
    gone = await client.post(
        "/ui/delete", data={**base, "type": "progress", "id": str(items["task"]["id"]), "cascade": "1"}
    )
    assert gone.status_code == 303
    assert "Built it" not in (await client.get(gone.headers["location"])).text


async def test_a_correction_is_shown_as_a_diff_and_changes_nothing_until_confirmed(make_app, client_for, project: Path):
    app, runtime = make_app()
    items = seed(runtime, project)
    client = client_for(app)
    address = {"ws": str(project), "type": "progress", "id": str(items["task"]["id"])}
    page = await client.get("/ui/item", params=address)
    form = {**address, "csrf": csrf_of(page.text), "status": "DONE", "description": "Build the dashboard"}
    review = await client.post("/ui/edit", data=form)
    assert review.status_code == 200 and "Save this correction?" in review.text
    assert (
        "-  &#34;status&#34;: &#34;IN_PROGRESS&#34;" in review.text
        and "+  &#34;status&#34;: &#34;DONE&#34;" in review.text
    )
    assert 'name="confirm" value="1"' in review.text and 'name="status" value="DONE"' in review.text
    unchanged = await client.get("/ui/item", params=address)
    assert (
        "status-in_progress" in unchanged.text
        and "status-done" not in unchanged.text.split("Fields")[1].split("</dl>")[0]
    )
    saved = await client.post("/ui/edit", data={**form, "confirm": "1"})
    assert saved.status_code == 303
    after = await client.get(saved.headers["location"])
    assert "status-done" in after.text.split("Fields")[1].split("</dl>")[0]


def history_of(html: str) -> str:
    return html.split('id="history"')[1].split("</section>")[0]


async def test_item_history_and_activity_say_who_wrote_each_version(make_app, client_for, project: Path):
    app, runtime = make_app()
    items = seed(runtime, project)  # written straight to the store: no writer recorded
    client = client_for(app)
    address = {"ws": str(project), "type": "decision", "id": str(items["wal"]["id"])}
    before = history_of((await client.get("/ui/item", params=address)).text)
    assert "author not recorded" in before and "homeport-dashboard" not in before
    # An agent's call through the pipeline, as an MCP client would make it.
    spec = CATALOG["log_decision"]
    request = LocalRequest(principal="ada", client=("claude-code", "2.0.1"))
    arguments = {**spec.validate({"summary": "Cache the tool list"}), "workspace": str(project)}
    logged = await CallPipeline(runtime).call(spec, arguments, request)
    fresh = history_of(
        (await client.get("/ui/item", params={**address, "id": str(logged["id"])})).text.replace("\n", " ")
    )
    assert "created" in fresh and "ada" in fresh and "claude-code 2.0.1" in fresh and "log_decision" in fresh
    assert "author not recorded" not in fresh
    # A correction made in the dashboard names the dashboard as the client, as the principal it runs as.
    time.sleep(0.2)  # later than the seed's creation by more than the moment a write takes
    page = await client.get("/ui/item", params=address)
    form = {**address, "csrf": csrf_of(page.text), "confirm": "1", "summary": "Use WAL", "tags": "db"}
    assert (await client.post("/ui/edit", data=form)).status_code == 303
    after = history_of((await client.get("/ui/item", params=address)).text)
    changed, created = after.split("<li>")[1:3]
    assert "changed" in changed and "homeport-dashboard" in changed and "update_decision" in changed
    assert '<strong class="principal">local</strong>' in changed
    assert "created" in created and "author not recorded" in created  # the seed's write stays unattributed
    # Contexts: each version names its writer, the seeded ones none.
    context = {"ws": str(project), "type": "active_context", "id": "1"}
    edit = {**context, "csrf": form["csrf"], "confirm": "1", "content": '{"focus": "Release"}'}
    assert (await client.post("/ui/edit", data=edit)).status_code == 303
    versions = history_of((await client.get("/ui/item", params=context)).text).split("<li>")[1:]
    assert "version 3" in versions[0] and "homeport-dashboard" in versions[0] and "update_active_context" in versions[0]
    assert all("author not recorded" in v for v in versions[1:]) and len(versions) == 3
    # The timeline says who made each change it lists.
    timeline = (await client.get("/ui/activity", params={"ws": str(project)})).text
    rows = {row.split("</a>")[0].rsplit(">", 1)[-1]: row for row in timeline.split("<li ")[1:]}
    assert "claude-code 2.0.1" in rows["Cache the tool list"] and "ada" in rows["Cache the tool list"]
    assert "homeport-dashboard" in rows["Use WAL"]
    assert "author not recorded" in rows["Build the dashboard"]
