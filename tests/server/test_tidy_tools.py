"""Tidy through the real MCP client, in both protocol eras: propose, amend, apply, hide, revert, guard."""

from __future__ import annotations

import random

import pytest
from mcp import Client

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])
SYLLABLES = ("bar", "cen", "dol", "fis", "gum", "hap", "jot", "kel", "lun", "mox", "nib", "pod", "qua", "rux")


async def call(c: Client, tool: str, /, **arguments):
    r = await c.call_tool(tool, arguments)
    assert not r.is_error, r.content[0].text
    return r.structured_content


async def refused(c: Client, tool: str, /, **arguments) -> tuple[str, str]:
    r = await c.call_tool(tool, arguments)
    assert r.is_error, (tool, arguments)
    return r.structured_content["error"]["code"], r.content[0].text


async def seed(c: Client, ws: str, n: int = 40) -> tuple[dict, dict]:
    rng = random.Random(n)
    vocab = [a + b for a in ("ka", "lo", "mi", "nu", "pe", "ri", "so", "tu", "va", "ze") for b in SYLLABLES]
    for _ in range(n):
        await call(c, "log_decision", summary=" ".join(rng.sample(vocab, 6)), workspace=ws)
    a = await call(c, "log_decision", summary="Use SQLite in WAL mode for the local store", workspace=ws)
    b = await call(c, "log_decision", summary="Use SQLite with WAL mode for the local store", workspace=ws)
    return a, b


@MODES
async def test_a_duplicate_proposed_applied_and_reverted_over_mcp_hides_and_comes_back(server_factory, projects, mode):
    ws = str(projects["alpha"])
    async with Client(server_factory(), mode=mode) as c:
        a, b = await seed(c, ws)
        cs = await call(c, "propose_cleanup", kinds=["duplicate"], workspace=ws)
        [entry] = cs["entries"]
        assert entry["kind"] == "duplicate" and entry["evidence"]["pairs"][0]["word_overlap"] == 1.0
        applied = await call(c, "apply_changeset", changeset_id=cs["id"], workspace=ws)
        assert applied["status"] == "applied" and applied["applied_by"]
        listed = await call(c, "get_decisions", limit=100, workspace=ws)
        assert listed["hidden_expired"] == 1 and a["id"] not in {d["id"] for d in listed["decisions"]}
        found = await call(c, "search", query="SQLite WAL", mode="words", workspace=ws)
        assert [h["id"] for h in found["results"]] == [b["id"]] and found["hidden_expired"] == 1
        history = await call(c, "get_item_history", item_type="decision", item_id=a["id"], workspace=ws)
        assert history["versions"][0]["fields"]["summary"] == a["summary"]  # still readable
        shown = await call(c, "get_changesets", workspace=ws)
        assert [(s["id"], s["status"]) for s in shown["changesets"]] == [(cs["id"], "applied")]
        await call(c, "revert_changeset", changeset_id=cs["id"], workspace=ws)
        listed = await call(c, "get_decisions", limit=100, workspace=ws)
        assert "hidden_expired" not in listed and a["id"] in {d["id"] for d in listed["decisions"]}


@MODES
async def test_refusals_over_mcp_carry_their_codes(server_factory, projects, mode):
    ws = str(projects["alpha"])
    async with Client(server_factory(), mode=mode) as c:
        a = await call(c, "log_decision", summary="Use SQLite in WAL mode for the local store", workspace=ws)
        b = await call(c, "log_decision", summary="Use SQLite with WAL mode for the local store", workspace=ws)
        cs = await call(c, "propose_cleanup", workspace=ws)
        code, text = await refused(c, "apply_changeset", changeset_id=cs["id"], workspace=ws)
        assert code == "changeset_guard" and "2 of 2 items" in text
        await call(c, "update_decision", decision_id=b["id"], rationale="edited", workspace=ws)
        code, text = await refused(c, "apply_changeset", changeset_id=cs["id"], force=True, workspace=ws)
        assert code == "changeset_conflict" and f"decision {b['id']} changed" in text
        code, _ = await refused(c, "get_changesets", changeset_id=99, workspace=ws)
        assert code == "item_not_found"
        pinned = await call(c, "set_item_lifecycle", item_type="decision", item_id=a["id"], pinned=True, workspace=ws)
        assert pinned["state"]["pinned"] is True and pinned["state"]["hidden"] is False


@MODES
async def test_an_expired_item_leaves_the_default_reads_with_a_count(server_factory, projects, mode):
    ws = str(projects["alpha"])
    async with Client(server_factory(), mode=mode) as c:
        p = await call(c, "log_system_pattern", name="Outbox", description="events leave with the write", workspace=ws)
        await call(c, "log_system_pattern", name="Repository", description="one per aggregate", workspace=ws)
        await call(
            c, "set_item_lifecycle", item_type="system_pattern", item_id=p["id"], valid_until="2020-01-01", workspace=ws
        )
        listed = await call(c, "get_system_patterns", workspace=ws)
        assert [s["name"] for s in listed["system_patterns"]] == ["Repository"] and listed["hidden_expired"] == 1
        ctx = await call(c, "get_context", task="events leave with the write outbox", workspace=ws)
        assert p["id"] not in {i["id"] for i in ctx["items"]}


@MODES
async def test_logging_a_decision_that_exists_already_names_it_and_merges_nothing(server_factory, projects, mode):
    ws = str(projects["alpha"])
    async with Client(server_factory(), mode=mode) as c:
        first = await call(c, "log_decision", summary="Use SQLite in WAL mode for the local store", workspace=ws)
        other = await call(c, "log_decision", summary="Deploy to Fly.io with one machine per region", workspace=ws)
        assert "notice" not in other and "duplicate_of" not in other
        again = await call(c, "log_decision", summary="Use SQLite with WAL mode for the local store", workspace=ws)
        assert again["duplicate_of"]["id"] == first["id"]
        assert f"decision {first['id']} already says this" in again["notice"]
        near = await call(c, "log_decision", summary="Use SQLite in WAL mode for the cloud store", workspace=ws)
        assert "duplicate_of" not in near  # another object: a near-miss, not the same decision
        listed = await call(c, "get_decisions", workspace=ws)
        assert len(listed["decisions"]) == 4


@pytest.mark.postgres
async def test_propose_apply_and_revert_over_mcp_on_a_postgresql_store(server_factory, projects, store_postgres_url):
    ws = str(projects["alpha"])
    async with Client(server_factory(store_url=store_postgres_url)) as c:
        a, b = await seed(c, ws)
        cs = await call(c, "propose_cleanup", kinds=["duplicate"], workspace=ws)
        await call(c, "apply_changeset", changeset_id=cs["id"], workspace=ws)
        listed = await call(c, "get_decisions", limit=100, workspace=ws)
        assert listed["hidden_expired"] == 1 and a["id"] not in {d["id"] for d in listed["decisions"]}
        found = await call(c, "search", query="SQLite WAL", mode="words", workspace=ws)
        assert [h["id"] for h in found["results"]] == [b["id"]]
        reverted = await call(c, "revert_changeset", changeset_id=cs["id"], workspace=ws)
        assert reverted["status"] == "reverted"
        listed = await call(c, "get_decisions", limit=100, workspace=ws)
        assert "hidden_expired" not in listed


async def test_an_item_citing_code_that_changed_is_proposed_stale_for_review(server_factory, projects):
    import subprocess

    root = projects["alpha"]
    (root / ".git").rmdir()
    (root / "billing.py").write_text("def charge(amount):\n    return round(amount, 2)\n\n\ndef refund():\n    pass\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "first"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=root, check=True, capture_output=True
        )
    ws = str(root)
    async with Client(server_factory()) as c:
        d = await call(
            c,
            "log_decision",
            summary="Charges round to cents",
            cites=[{"path": "billing.py", "lines": "1-2"}],
            workspace=ws,
        )
        (root / "billing.py").write_text("def charge(amount):\n    return int(amount * 100)\n\n\ndef refund():\n")
        cs = await call(c, "propose_cleanup", kinds=["stale"], workspace=ws)
    [entry] = cs["entries"]
    assert entry["kind"] == "stale" and entry["items"][0]["id"] == d["id"] and entry["accepted"] is False
    assert entry["evidence"]["citation_status"] == "changed"
    assert entry["evidence"]["citations"][0]["path"] == "billing.py"
    assert entry["operations"] == [{"op": "archive", "item": {"type": "decision", "id": d["id"]}}]


async def test_the_progress_tree_lifts_the_children_of_an_archived_entry(server_factory, projects):
    ws = str(projects["alpha"])
    async with Client(server_factory()) as c:
        top = await call(c, "log_progress", status="TODO", description="release 2", workspace=ws)
        mid = await call(c, "log_progress", status="TODO", description="old plan", parent_id=top["id"], workspace=ws)
        leaf = await call(
            c, "log_progress", status="TODO", description="write notes", parent_id=mid["id"], workspace=ws
        )
        cs = await call(c, "propose_cleanup", kinds=[], workspace=ws)
        await call(
            c,
            "amend_changeset",
            changeset_id=cs["id"],
            add=[{"op": "archive", "item": f"progress:{mid['id']}"}],
            workspace=ws,
        )
        await call(c, "apply_changeset", changeset_id=cs["id"], force=True, workspace=ws)
        tree = await call(c, "get_progress", tree=True, workspace=ws)
    assert tree["hidden_expired"] == 1
    [root] = tree["progress"]
    assert root["id"] == top["id"] and [n["id"] for n in root["children"]] == [leaf["id"]]
