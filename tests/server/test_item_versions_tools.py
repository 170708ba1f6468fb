"""Item versions through the real MCP client, in both protocol eras: correct, read history, restore, purge."""

from __future__ import annotations

import pytest
from mcp import Client

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])
SECRET = "AKIAIOSFODNN7EXAMPLE"


async def call(c: Client, tool: str, /, **arguments):
    r = await c.call_tool(tool, arguments)
    assert not r.is_error, r.content[0].text
    return r.structured_content


async def refused(c: Client, tool: str, /, **arguments) -> tuple[str, str]:
    r = await c.call_tool(tool, arguments)
    assert r.is_error, (tool, arguments)
    return r.structured_content["error"]["code"], r.content[0].text


@MODES
async def test_a_decision_corrected_over_mcp_keeps_its_earlier_text_with_the_writer_and_tool(
    server_factory, projects, mode
):
    ws = str(projects["alpha"])
    async with Client(server_factory(), mode=mode) as c:
        d = await call(c, "log_decision", summary="Use WAL", rationale="fast", tags=["db"], workspace=ws)
        fixed = await call(
            c, "update_decision", decision_id=d["id"], summary="Use SQLite WAL", rationale="", workspace=ws
        )
        assert (fixed["summary"], fixed["rationale"], fixed["tags"]) == ("Use SQLite WAL", None, ["db"])
        versions = (await call(c, "get_item_history", item_type="decision", item_id=d["id"], workspace=ws))["versions"]
    assert [v["version"] for v in versions] == [2, 1]
    assert versions[1]["fields"] == {
        "summary": "Use WAL",
        "rationale": "fast",
        "implementation_details": None,
        "tags": ["db"],
    }
    assert [v["written_by"]["tool"] for v in versions] == ["update_decision", "log_decision"]
    assert all(v["written_by"]["principal"] and v["changed_at"] for v in versions)


@MODES
async def test_every_item_type_has_a_history_over_mcp_and_the_context_call_is_unchanged(server_factory, projects, mode):
    ws = str(projects["alpha"])
    async with Client(server_factory(), mode=mode) as c:
        p = await call(c, "log_progress", status="TODO", description="ship", workspace=ws)
        await call(c, "update_progress", progress_id=p["id"], status="DONE", workspace=ws)
        s = await call(c, "log_system_pattern", name="Repo", description="one per table", workspace=ws)
        await call(c, "update_system_pattern", pattern_id=s["id"], description="one per aggregate", workspace=ws)
        k = await call(c, "log_custom_data", category="c", key="k", value={"a": 1}, workspace=ws)
        await call(c, "log_custom_data", category="c", key="k", value={"a": 2}, workspace=ws)
        await call(c, "update_active_context", content={"focus": "a"}, workspace=ws)
        await call(c, "update_active_context", patch={"focus": "b"}, workspace=ws)
        got = {}
        for item_type, item_id in (("progress", p["id"]), ("system_pattern", s["id"]), ("custom_data", k["id"])):
            got[item_type] = (await call(c, "get_item_history", item_type=item_type, item_id=item_id, workspace=ws))[
                "versions"
            ]
        # The context call of before (no item_id) answers as before: version, content, changed_at, written_by.
        active = (await call(c, "get_item_history", item_type="active_context", workspace=ws))["versions"]
    assert [v["fields"]["status"] for v in got["progress"]] == ["DONE", "TODO"]
    assert [v["fields"]["description"] for v in got["system_pattern"]] == ["one per aggregate", "one per table"]
    assert [v["fields"]["value"] for v in got["custom_data"]] == [{"a": 2}, {"a": 1}]
    assert [v["content"] for v in active] == [{"focus": "b"}, {"focus": "a"}]
    assert set(active[0]) == {"version", "content", "changed_at", "written_by"}


@MODES
async def test_restore_brings_back_a_version_and_a_deleted_item_and_purge_removes_its_history(
    server_factory, projects, mode
):
    ws = str(projects["alpha"])
    async with Client(server_factory(), mode=mode) as c:
        d = await call(c, "log_decision", summary="first", workspace=ws)
        await call(c, "update_decision", decision_id=d["id"], summary="second", workspace=ws)
        restored = await call(c, "restore_version", item_type="decision", item_id=d["id"], version=1, workspace=ws)
        assert (restored["version"], restored["item"]["summary"]) == (3, "first")
        await call(c, "delete_decision", decision_id=d["id"], workspace=ws)
        assert (await call(c, "get_decisions", workspace=ws))["decisions"] == []
        versions = (await call(c, "get_item_history", item_type="decision", item_id=d["id"], workspace=ws))["versions"]
        assert [(v["version"], v["deleted"]) for v in versions][:2] == [(4, True), (3, False)]
        await call(c, "restore_version", item_type="decision", item_id=d["id"], version=2, workspace=ws)
        assert [x["summary"] for x in (await call(c, "get_decisions", workspace=ws))["decisions"]] == ["second"]
        code, text = await refused(c, "purge_item", item_type="decision", item_id=d["id"], workspace=ws)
        assert code == "invalid_item" and "still exists" in text
        await call(c, "delete_decision", decision_id=d["id"], workspace=ws)
        purged = await call(c, "purge_item", item_type="decision", item_id=d["id"], workspace=ws)
        assert purged["purged"] == {"type": "decision", "id": d["id"], "versions": 6}
        code, text = await refused(c, "get_item_history", item_type="decision", item_id=d["id"], workspace=ws)
        assert code == "item_not_found" and f"decision {d['id']} has no history" in text


@MODES
async def test_corrections_are_scanned_for_secrets_like_every_write(server_factory, projects, mode):
    ws = str(projects["alpha"])
    async with Client(server_factory(), mode=mode) as c:
        d = await call(c, "log_decision", summary="clean", workspace=ws)
        s = await call(c, "log_system_pattern", name="P", description="clean", workspace=ws)
        code, _ = await refused(c, "update_decision", decision_id=d["id"], rationale=f"key {SECRET}", workspace=ws)
        assert code == "secret_detected"
        code, _ = await refused(c, "update_system_pattern", pattern_id=s["id"], description=SECRET, workspace=ws)
        assert code == "secret_detected"
        versions = (await call(c, "get_item_history", item_type="decision", item_id=d["id"], workspace=ws))["versions"]
    assert len(versions) == 1 and SECRET not in str(versions)


@MODES
async def test_a_read_only_server_refuses_restore_and_purge(server_factory, projects, mode):
    ws = str(projects["alpha"])
    async with Client(server_factory(), mode=mode) as c:
        d = await call(c, "log_decision", summary="kept", workspace=ws)
    async with Client(server_factory(read_only=True), mode=mode) as c:
        for name, args in (
            ("restore_version", {"item_type": "decision", "item_id": d["id"], "version": 1}),
            ("purge_item", {"item_type": "decision", "item_id": d["id"]}),
            ("update_decision", {"decision_id": d["id"], "summary": "x"}),
        ):
            r = await c.call_tool(name, {**args, "workspace": ws})
            assert r.is_error, name
        versions = (await call(c, "get_item_history", item_type="decision", item_id=d["id"], workspace=ws))["versions"]
    assert [v["fields"]["summary"] for v in versions] == ["kept"]
