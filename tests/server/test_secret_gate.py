"""Every write that carries a secret is refused in the pipeline, unless allow_secrets, which is recorded."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client

from homeport.cli import cli
from homeport.core.catalog import CATALOG, Effect, Scan

pytestmark = pytest.mark.anyio
CORPUS = json.loads((Path(__file__).parents[1] / "fixtures" / "secret_corpus.json").read_text(encoding="utf-8"))
FOUND = [e for e in CORPUS["secrets"] if not e.get("missed") and "text" in e]
PG_URL = "postgresql://shop:Sup3rS3cretPw@db.internal:5432/shop"


def test_every_tool_that_writes_memory_text_scans_for_secrets():
    writes = {s.name for s in CATALOG if s.write and s.name != "export" and s.effect is not Effect.DELETE}
    writes -= {s.name for s in CATALOG if s.group == "files"}  # file areas are private folders, not memory
    # Writes back a version the memory already holds (scanned when it was first written, or written with
    # allow_secrets and recorded); none of its arguments is text.
    writes -= {"restore_version"}
    # Its arguments are a remote and a ref; what it exports, it scans itself and refuses whole (SyncSecretError).
    writes -= {"sync", "resolve_sync_conflicts"}
    # They write no text of the caller's: ids, a date, a pin, a branch name; what a changeset holds is built
    # from items already scanned (amend_changeset, whose reason is the caller's text, is scanned).
    writes -= {"propose_cleanup", "apply_changeset", "revert_changeset", "set_item_lifecycle", "promote_branch"}
    assert writes == {s.name for s in CATALOG if s.scan is not Scan.NONE}
    assert all("allow_secrets" in {p.name for p in s.parameters} for s in CATALOG if s.scan is not Scan.NONE)


async def test_each_corpus_secret_is_refused_naming_its_kind_and_field_and_nothing_is_written(server_factory, projects):
    ws = str(projects["alpha"])
    async with Client(server_factory()) as c:
        for entry in FOUND:
            r = await c.call_tool("log_decision", {"summary": "ok", "rationale": entry["text"], "workspace": ws})
            assert r.is_error, entry["label"]
            error = r.structured_content["error"]
            assert error["code"] == "secret_detected"
            assert entry["kind"] in error["message"] and "rationale" in error["message"]
            assert "allow_secrets=true" in error["message"]
    assert not (projects["alpha"] / ".homeport").exists()  # not even the store was created


async def test_allow_secrets_writes_and_records_the_override_without_the_secret(server_factory, projects):
    ws = str(projects["alpha"])
    async with Client(server_factory()) as c:
        r = await c.call_tool(
            "update_active_context", {"content": {"db": PG_URL}, "allow_secrets": True, "workspace": ws}
        )
        assert not r.is_error, r.content[0].text
        activity = (await c.call_tool("get_recent_activity", {"workspace": ws})).structured_content
        clean = await c.call_tool("log_decision", {"summary": "no secret here", "allow_secrets": True, "workspace": ws})
        assert not clean.is_error
        overrides = (
            await c.call_tool("get_custom_data", {"category": "SecretOverrides", "workspace": ws})
        ).structured_content["items"]
    assert len(overrides) == 1  # a write without a secret records nothing
    record = overrides[0]["value"]
    assert record["tool"] == "update_active_context" and record["principal"] == "local"
    assert record["secrets"] == [{"kind": "a password in a URL (user:password@host)", "field": "content.db", "line": 1}]
    assert "Sup3rS3cretPw" not in json.dumps(overrides)
    assert [i["category"] for i in activity["custom_data"]] == ["SecretOverrides"]


async def test_batch_names_the_index_of_the_item_and_writes_none(server_factory, projects):
    ws = str(projects["alpha"])
    items = [{"summary": "fine"}, {"summary": "deploy", "rationale": PG_URL}]
    async with Client(server_factory()) as c:
        await c.call_tool("log_decision", {"summary": "first", "workspace": ws})
        r = await c.call_tool("batch_log_items", {"item_type": "decision", "items": items, "workspace": ws})
        listed = (await c.call_tool("get_decisions", {"workspace": ws})).structured_content["decisions"]
    assert r.structured_content["error"]["code"] == "secret_detected"
    assert "items[1].rationale" in r.structured_content["error"]["message"]
    assert [d["summary"] for d in listed] == ["first"]


async def test_importing_an_export_that_holds_a_secret_is_refused_unless_allowed(server_factory, projects):
    alpha, beta = str(projects["alpha"]), str(projects["beta"])
    async with Client(server_factory()) as c:
        await c.call_tool(
            "log_system_pattern", {"name": "DB", "description": PG_URL, "allow_secrets": True, "workspace": alpha}
        )
        await c.call_tool("export", {"workspace": alpha})
        (projects["beta"] / ".homeport").mkdir()
        source = str(projects["alpha"] / ".homeport" / "export")
        os.rename(source, projects["beta"] / ".homeport" / "export")
        refused = await c.call_tool("import", {"workspace": beta})
        patterns = (await c.call_tool("get_system_patterns", {"workspace": beta})).structured_content
        allowed = await c.call_tool("import", {"allow_secrets": True, "workspace": beta})
        overrides = (
            await c.call_tool("get_custom_data", {"category": "SecretOverrides", "workspace": beta})
        ).structured_content["items"]
    assert refused.structured_content["error"]["code"] == "secret_detected"
    assert "system_patterns[0].description" in refused.structured_content["error"]["message"]
    assert patterns["system_patterns"] == []
    assert not allowed.is_error, allowed.content[0].text
    assert [o["value"]["tool"] for o in overrides][-1] == "import"


def test_the_shell_refuses_in_one_line_and_allow_secrets_overrides(shell_home, tmp_path, monkeypatch):
    (tmp_path / "shop" / ".git").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "shop")
    runner = CliRunner()
    refused = runner.invoke(cli, ["glossary", "set", "staging db", PG_URL])
    assert refused.exit_code == 1 and "--allow-secrets" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    allowed = runner.invoke(cli, ["glossary", "set", "staging db", PG_URL, "--allow-secrets", "--json"])
    assert allowed.exit_code == 0, allowed.output
    listed = json.loads(runner.invoke(cli, ["data", "get", "SecretOverrides", "--json"]).stdout)
    assert listed["items"][0]["value"]["tool"] == "log_custom_data"
