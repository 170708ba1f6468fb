"""Citations to code through the real MCP client, in both protocol eras: cite on write, status on every read."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from mcp import Client

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])

RETRY = """import time


class Retry:
    def __init__(self, tries):
        self.tries = tries

    def schedule(self, job):
        for attempt in range(self.tries):
            if job():
                return attempt
            time.sleep(2 ** attempt)
        raise RuntimeError("gave up after retries")
"""


def git_project(root: Path) -> Path:
    """Turn the fixture's project (a bare `.git` folder) into a real repository with one commit."""
    (root / ".git").rmdir()
    (root / "payments").mkdir()
    (root / "payments" / "retry.py").write_text(RETRY)
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "first"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=root, check=True, capture_output=True
        )
    return root


async def call(c: Client, tool: str, /, **arguments):
    r = await c.call_tool(tool, arguments)
    assert not r.is_error, r.content[0].text
    return r.structured_content


async def refused(c: Client, tool: str, /, **arguments) -> tuple[str, str]:
    r = await c.call_tool(tool, arguments)
    assert r.is_error, (tool, arguments)
    return r.structured_content["error"]["code"], r.content[0].text


def statuses(decision: dict) -> list[str]:
    return [c["status"] for c in decision["citations"]]


@MODES
async def test_a_cited_decision_reads_fresh_then_moved_then_changed_as_the_code_changes(server_factory, projects, mode):
    root = git_project(projects["alpha"])
    ws = str(root)
    source = root / "payments" / "retry.py"
    async with Client(server_factory(), mode=mode) as c:
        d = await call(
            c,
            "log_decision",
            summary="Retries back off exponentially",
            cites=[
                {"path": "payments/retry.py", "symbol": "Retry.schedule"},
                {"path": "payments/retry.py", "lines": "4-6"},
            ],
            workspace=ws,
        )
        (got,) = (await call(c, "get_decisions", workspace=ws))["decisions"]
        assert statuses(got) == ["fresh", "fresh"] and got["citation_status"] == "fresh"
        assert got["citations"][0]["symbol"] == "Retry.schedule" and got["citations"][0]["lines"] == "8-13"
        assert got["citations"][1]["quote"] == "class Retry:"

        source.write_text("# a header line\n" + RETRY)
        (got,) = (await call(c, "get_decisions", workspace=ws))["decisions"]
        assert statuses(got) == ["moved", "moved"]
        assert got["citations"][0]["now"] == {"path": "payments/retry.py", "lines": "9-14"}

        source.write_text(RETRY.replace("2 ** attempt", "min(30, 2 ** attempt)"))
        (got,) = (await call(c, "get_decisions", workspace=ws))["decisions"]
        assert statuses(got) == ["changed", "fresh"] and got["citation_status"] == "changed"

        hits = (await call(c, "search", query="retries", mode="words", workspace=ws))["results"]
        assert hits[0]["id"] == d["id"] and hits[0]["citation_status"] == "changed"

        report = await call(c, "verify_citations", workspace=ws)
        assert report["failing"] and report["counts"]["changed"] == 1 and report["items"][0]["id"] == d["id"]

        confirmed = await call(
            c, "confirm_citations", item_type="decision", item_id=d["id"], accept_changes=True, workspace=ws
        )
        assert confirmed["citation_status"] == "fresh" and confirmed["reanchored"] == 1
        assert not (await call(c, "verify_citations", workspace=ws))["failing"]


@MODES
async def test_a_stale_item_ranks_below_a_fresh_one_in_search_and_is_still_listed(server_factory, projects, mode):
    root = git_project(projects["alpha"])
    ws = str(root)
    async with Client(server_factory(), mode=mode) as c:
        stale = await call(
            c,
            "log_decision",
            summary="retry retry retry policy",
            cites=[{"path": "payments/retry.py", "lines": "8-13"}],
            workspace=ws,
        )
        fresh = await call(
            c,
            "log_decision",
            summary="retry policy",
            cites=[{"path": "payments/retry.py", "lines": "4-6"}],
            workspace=ws,
        )
        (root / "payments" / "retry.py").write_text(RETRY.replace("gave up", "stopped"))
        hits = (await call(c, "search", query="retry", mode="words", workspace=ws))["results"]
    assert [(h["id"], h["citation_status"]) for h in hits] == [(fresh["id"], "fresh"), (stale["id"], "changed")]


@MODES
async def test_a_citation_outside_the_workspace_is_refused_naming_the_path(server_factory, projects, mode, tmp_path):
    root = git_project(projects["alpha"])
    (tmp_path / "outside.py").write_text("x = 1\n")
    (root / "link.py").symlink_to(tmp_path / "outside.py")
    ws = str(root)
    async with Client(server_factory(), mode=mode) as c:
        for path in ("/etc/passwd", "../outside.py", "payments/../../outside.py", "link.py"):
            code, text = await refused(
                c, "log_decision", summary="x", cites=[{"path": path, "lines": "1"}], workspace=ws
            )
            assert code == "invalid_item" and repr(path) in text, text
        listed = await call(c, "get_decisions", workspace=ws)
    assert listed["decisions"] == []  # nothing was written


@MODES
async def test_items_without_citations_read_exactly_as_before(server_factory, projects, mode):
    ws = str(projects["alpha"])
    async with Client(server_factory(), mode=mode) as c:
        await call(c, "log_decision", summary="plain", workspace=ws)
        listed = await call(c, "get_decisions", workspace=ws)
    (item,) = listed["decisions"]
    assert "citations" not in item and "citation_status" not in item


@MODES
async def test_patterns_progress_and_custom_data_take_cites_and_read_with_their_status(server_factory, projects, mode):
    root = git_project(projects["alpha"])
    ws = str(root)
    cite = [{"path": "payments/retry.py", "symbol": "Retry.schedule"}]
    async with Client(server_factory(), mode=mode) as c:
        s = await call(c, "log_system_pattern", name="Backoff", description="exponential", cites=cite, workspace=ws)
        p = await call(c, "log_progress", status="TODO", description="cap the backoff", cites=cite, workspace=ws)
        k = await call(c, "log_custom_data", category="notes", key="retry", value="see code", cites=cite, workspace=ws)
        assert [x["citation_status"] for x in (s, p, k)] == ["fresh", "fresh", "fresh"]
        (root / "payments" / "retry.py").write_text(RETRY.replace("time.sleep", "sleep"))
        (pattern,) = (await call(c, "get_system_patterns", workspace=ws))["system_patterns"]
        (entry,) = (await call(c, "get_progress", workspace=ws))["progress"]
        (data,) = (await call(c, "get_custom_data", category="notes", workspace=ws))["items"]
        assert [x["citation_status"] for x in (pattern, entry, data)] == ["changed", "changed", "changed"]
        # An update with only cites re-anchors the item; without cites it keeps them.
        fixed = await call(c, "update_progress", progress_id=p["id"], cites=cite, workspace=ws)
        assert fixed["citation_status"] == "fresh" and fixed["description"] == "cap the backoff"
        renamed = await call(c, "update_system_pattern", pattern_id=s["id"], name="Capped backoff", workspace=ws)
        assert renamed["name"] == "Capped backoff"
        (pattern,) = (await call(c, "get_system_patterns", workspace=ws))["system_patterns"]
        assert pattern["citation_status"] == "changed"
        item = (await call(c, "get_item", item_type="custom_data", item_id=k["id"], workspace=ws))["item"]
        assert item["citations"][0]["status"] == "changed"


@MODES
async def test_a_quoted_line_that_holds_a_secret_is_refused_like_the_items_text(server_factory, projects, mode):
    root = git_project(projects["alpha"])
    (root / "settings.py").write_text('AWS_ACCESS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"\n')
    ws = str(root)
    async with Client(server_factory(), mode=mode) as c:
        code, text = await refused(
            c, "log_decision", summary="keys live here", cites=[{"path": "settings.py", "lines": "1"}], workspace=ws
        )
        assert code == "secret_detected" and "AKIAIOSFODNN7EXAMPLE" not in text
        assert (await call(c, "get_decisions", workspace=ws))["decisions"] == []


async def test_a_logical_workspace_refuses_citations_it_has_no_files_for(server_factory, tmp_path):
    server = server_factory(
        transport="http", logical_workspaces=True, data_dir=tmp_path / "data", allow_roots=(tmp_path,)
    )
    async with Client(server) as c:
        code, text = await refused(
            c, "log_decision", summary="x", cites=[{"path": "a.py", "lines": "1"}], workspace="acme/api"
        )
        assert code == "logical_workspace" and "acme/api" in text
        await call(c, "log_decision", summary="plain", workspace="acme/api")
        assert (await call(c, "verify_citations", workspace="acme/api"))["items_checked"] == 0


@MODES
async def test_get_context_puts_stale_items_last_and_labels_them(server_factory, projects, mode):
    root = git_project(projects["alpha"])
    ws = str(root)
    async with Client(server_factory(), mode=mode) as c:
        stale = await call(
            c,
            "log_decision",
            summary="backoff retries backoff",
            cites=[{"path": "payments/retry.py", "lines": "8-13"}],
            workspace=ws,
        )
        fresh = await call(
            c,
            "log_decision",
            summary="backoff note",
            cites=[{"path": "payments/retry.py", "lines": "4-6"}],
            workspace=ws,
        )
        plain = await call(c, "log_decision", summary="backoff plain", workspace=ws)
        (root / "payments" / "retry.py").write_text(RETRY.replace("gave up", "stopped"))
        items = (await call(c, "get_context", task="change the backoff", workspace=ws))["items"]
    order = [(i["id"], i.get("citation_status")) for i in items]
    assert order[-1] == (stale["id"], "changed")
    assert {(fresh["id"], "fresh"), (plain["id"], None)} <= set(order[:-1])


async def test_a_cited_read_on_an_http_server_leaves_the_event_loop_and_answers(server_factory, projects):
    # Checking reads the project's files: on the HTTP event loop the call moves to a thread (may_wait).
    root = git_project(projects["alpha"])
    ws = str(root)
    server = server_factory(transport="http", allow_roots=(root.parent,))
    async with Client(server) as c:
        await call(
            c, "log_decision", summary="cited", cites=[{"path": "payments/retry.py", "lines": "4-6"}], workspace=ws
        )
        (got,) = (await call(c, "get_decisions", workspace=ws))["decisions"]
        hits = (await call(c, "search", query="cited", mode="words", workspace=ws))["results"]
    assert got["citation_status"] == "fresh" and hits[0]["citation_status"] == "fresh"


@pytest.mark.postgres
async def test_citations_over_mcp_on_a_postgresql_store(server_factory, projects, store_postgres_url):
    root = git_project(projects["alpha"])
    ws = str(root)
    async with Client(server_factory(store_url=store_postgres_url)) as c:
        d = await call(
            c,
            "log_decision",
            summary="backoff on pg",
            cites=[{"path": "payments/retry.py", "lines": "8-13"}],
            workspace=ws,
        )
        (root / "payments" / "retry.py").write_text("\n" + RETRY)
        (got,) = (await call(c, "get_decisions", workspace=ws))["decisions"]
        assert got["citation_status"] == "moved" and got["citations"][0]["now"]["lines"] == "9-14"
        confirmed = await call(c, "confirm_citations", item_type="decision", item_id=d["id"], workspace=ws)
        assert confirmed["citation_status"] == "fresh"
        (root / "payments" / "retry.py").unlink()
        report = await call(c, "verify_citations", workspace=ws)
    assert report["failing"] and report["counts"]["missing"] == 1


async def test_confirming_a_change_that_now_quotes_a_secret_is_refused(server_factory, projects):
    root = git_project(projects["alpha"])
    ws = str(root)
    async with Client(server_factory()) as c:
        d = await call(
            c, "log_decision", summary="keys", cites=[{"path": "payments/retry.py", "lines": "1"}], workspace=ws
        )
        (root / "payments" / "retry.py").write_text(RETRY.replace("import time", 'KEY = "AKIAIOSFODNN7EXAMPLE"'))
        code, _ = await refused(
            c, "confirm_citations", item_type="decision", item_id=d["id"], accept_changes=True, workspace=ws
        )
        assert code == "secret_detected"
        (got,) = (await call(c, "get_decisions", workspace=ws))["decisions"]
        assert got["citations"][0]["quote"] == "import time"  # nothing was re-anchored
