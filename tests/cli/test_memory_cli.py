"""The memory commands as a person types them: every tool from the shell, tables for people, JSON for scripts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from mcp import Client

from homeport.cli import cli

# MCP memory tool -> the command that reaches it from the shell.
TOOL_COMMANDS = {
    "log_decision": "decisions add",
    "get_decisions": "decisions list",
    "delete_decision": "decisions delete",
    "log_progress": "progress add",
    "update_progress": "progress update",
    "get_progress": "progress list",
    "delete_progress": "progress delete",
    "log_system_pattern": "patterns add",
    "get_system_patterns": "patterns list",
    "delete_system_pattern": "patterns delete",
    "log_custom_data": "data set",
    "get_custom_data": "data get",
    "delete_custom_data": "data delete",
    "get_product_context": "context show",
    "get_active_context": "context show",
    "update_product_context": "context set",
    "update_active_context": "context patch",
    "link_items": "link",
    "get_linked_items": "links",
    "search": "search",
    "get_ready_work": "ready",
    "get_item_history": "history",
    "get_recent_activity": "activity",
    "get_memory_schema": "schema",
    "batch_log_items": "batch",
    "export": "export",
    "import": "import",
    "get_context": "context",
    "import_from": "import-from",
    "update_decision": "decisions update",
    "update_system_pattern": "patterns update",
    "restore_version": "restore",
    "purge_item": "purge",
    "verify_citations": "verify",
    "confirm_citations": "confirm",
    "promote_branch": "promote",
    "propose_cleanup": "tidy propose",
    "get_changesets": "tidy show",
    "amend_changeset": "tidy amend",
    "apply_changeset": "tidy apply",
    "revert_changeset": "tidy revert",
    "set_item_lifecycle": "tidy lifecycle",
    "sync": "sync",
}
LEAF_COMMANDS = sorted(
    {*TOOL_COMMANDS.values(), "progress tree", "glossary set", "glossary list", "glossary delete", "tidy list"}
)


@pytest.fixture
def runner(shell_home) -> CliRunner:
    return CliRunner()


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root.resolve()


def run(runner: CliRunner, *args: str, input: str | None = None) -> Result:
    result = runner.invoke(cli, list(args), input=input)
    assert result.exit_code == 0, result.output
    return result


def call(runner: CliRunner, *args: str, input: str | None = None) -> dict:
    return json.loads(run(runner, *args, "--json", input=input).stdout)


def fails(runner: CliRunner, *args: str) -> str:
    """The one line a failing command prints; asserts a non-zero exit and no traceback."""
    result = runner.invoke(cli, list(args))
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


# -- every tool, and the shared flags ----------------------------------------------------------


@pytest.mark.anyio
async def test_every_memory_tool_has_a_command(server_factory):
    async with Client(server_factory(tool_groups=("memory",))) as c:
        tools = {t.name for t in (await c.list_tools()).tools}
    assert tools == set(TOOL_COMMANDS)


@pytest.mark.parametrize("command", LEAF_COMMANDS)
def test_every_command_has_help_with_an_example_and_the_shared_flags(runner, command):
    out = run(runner, *command.split(), "--help").output
    assert f"Example: homeport {command}" in out
    if command != "schema":
        for flag in ("--json", "--workspace", "HOMEPORT_WORKSPACE", "--allow-root", "--require-explicit-workspace"):
            assert flag in out


def test_top_level_help_lists_the_memory_commands(runner):
    out = run(runner, "--help").output
    for group in (
        "decisions",
        "progress",
        "patterns",
        "data",
        "glossary",
        "context",
        "link",
        "links",
        "search",
        "history",
        "activity",
        "export",
        "import",
        "batch",
        "schema",
    ):
        assert f"\n  {group} " in out


def test_people_see_the_workspace_and_source_first(runner, project):
    run(runner, "decisions", "add", "Use SQLite WAL", "--tag", "db")
    lines = run(runner, "decisions", "list").stdout.splitlines()
    assert lines[0] == f"workspace {project} (from the current directory)"
    assert any("Use SQLite WAL" in line and "db" in line for line in lines[1:])


def test_workspace_comes_from_the_flag_the_env_variable_or_the_claude_project_dir(
    runner, project, monkeypatch, tmp_path
):
    (project / "api").mkdir()
    monkeypatch.chdir(project / "api")
    assert call(runner, "decisions", "list")["workspace"] == {"root": str(project), "source": "cwd"}
    monkeypatch.chdir("/")
    assert call(runner, "decisions", "list", "-w", str(project))["workspace"]["source"] == "config"
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    assert call(runner, "decisions", "list")["workspace"]["source"] == "client_env"
    monkeypatch.setenv("HOMEPORT_WORKSPACE", str(project))
    assert call(runner, "decisions", "list")["workspace"]["source"] == "config"


def test_require_explicit_workspace_refuses_writes_from_the_cwd_but_not_reads(runner, project):
    line = fails(runner, "decisions", "add", "x", "--require-explicit-workspace")
    assert "explicit workspace" in line and str(project) in line
    assert call(runner, "decisions", "list", "--require-explicit-workspace")["decisions"] == []
    written = call(runner, "decisions", "add", "x", "--require-explicit-workspace", "-w", str(project))
    assert written["workspace"]["source"] == "config"


# -- items with ids: add -> list -> delete -----------------------------------------------------


def test_decisions_round_trip(runner, project):
    added = call(
        runner,
        "decisions",
        "add",
        "Use SQLite WAL",
        "--rationale",
        "readers never block",
        "--details",
        "PRAGMA journal_mode=WAL",
        "--tag",
        "db",
        "--tag",
        " DB ",
        "--tag",
        "perf",
    )
    assert added["summary"] == "Use SQLite WAL" and added["tags"] == ["db", "perf"]
    assert added["implementation_details"] == "PRAGMA journal_mode=WAL"
    assert added["workspace"] == {"root": str(project), "source": "cwd"}
    other = call(runner, "decisions", "add", "Ship weekly", "--tag", "process")
    listed = call(runner, "decisions", "list")["decisions"]
    assert [d["id"] for d in listed] == [other["id"], added["id"]]
    assert [d["id"] for d in call(runner, "decisions", "list", "--tag", "PERF")["decisions"]] == [added["id"]]
    assert call(runner, "decisions", "list", "--all-tags", "db", "--all-tags", "process")["decisions"] == []
    assert len(call(runner, "decisions", "list", "--limit", "1")["decisions"]) == 1
    deleted = call(runner, "decisions", "delete", str(added["id"]))
    assert deleted["deleted"]["summary"] == "Use SQLite WAL" and deleted["links_removed"] == 0
    assert [d["id"] for d in call(runner, "decisions", "list")["decisions"]] == [other["id"]]


def test_progress_round_trip_with_update_and_cascade(runner, project):
    top = call(runner, "progress", "add", "TODO", "Build export")
    child = call(runner, "progress", "add", "IN_PROGRESS", "Write markdown", "--parent", str(top["id"]))
    assert child["parent_id"] == top["id"]
    updated = call(runner, "progress", "update", str(child["id"]), "--status", "DONE", "--description", "Markdown")
    assert (updated["status"], updated["description"]) == ("DONE", "Markdown")
    assert [p["id"] for p in call(runner, "progress", "list", "--status", "DONE")["progress"]] == [child["id"]]
    assert [p["id"] for p in call(runner, "progress", "list", "--parent", str(top["id"]))["progress"]] == [child["id"]]
    line = fails(runner, "progress", "delete", str(top["id"]))
    assert f"progress {top['id']} has 1 descendant" in line
    deleted = call(runner, "progress", "delete", str(top["id"]), "--cascade")
    assert sorted(p["id"] for p in deleted["deleted"]) == sorted([top["id"], child["id"]])
    assert call(runner, "progress", "list")["progress"] == []


def test_progress_tree_nests_children_in_json_and_on_screen(runner, project):
    a = call(runner, "progress", "add", "TODO", "Release 1.0")["id"]
    b = call(runner, "progress", "add", "IN_PROGRESS", "Write docs", "--parent", str(a))["id"]
    call(runner, "progress", "add", "DONE", "Write README", "--parent", str(b))
    call(runner, "progress", "add", "TODO", "Unrelated")
    tree = call(runner, "progress", "tree")["progress"]
    assert [n["description"] for n in tree] == ["Release 1.0", "Unrelated"]
    assert tree[0]["children"][0]["children"][0]["description"] == "Write README"
    sub = call(runner, "progress", "tree", str(b))["progress"]
    assert [n["id"] for n in sub] == [b]
    done = call(runner, "progress", "tree", "--status", "DONE")["progress"]
    assert [n["description"] for n in done] == ["Release 1.0"]
    lines = run(runner, "progress", "tree").stdout.splitlines()[1:]
    assert lines[0].startswith("TODO Release 1.0")
    assert "── IN_PROGRESS Write docs" in lines[1]
    assert lines[2].index("── DONE Write README") > lines[1].index("── IN_PROGRESS")  # one level deeper


def test_patterns_round_trip_and_a_known_name_updates(runner, project):
    added = call(runner, "patterns", "add", "Repository", "One module per table", "--tag", "db")
    again = call(runner, "patterns", "add", "repository", "One module per table, no sessions", "--tag", "db")
    assert again["id"] == added["id"] and again["updated"] is True
    listed = call(runner, "patterns", "list", "--tag", "DB")["system_patterns"]
    assert [(p["name"], p["description"]) for p in listed] == [("repository", "One module per table, no sessions")]
    assert "repository" in run(runner, "patterns", "list").stdout
    assert call(runner, "patterns", "delete", str(added["id"]))["deleted"]["name"] == "repository"
    assert call(runner, "patterns", "list")["system_patterns"] == []


def test_custom_data_values_are_json_when_they_parse(runner, project):
    assert call(runner, "data", "set", "limits", "upload", '{"mb": 50}')["value"] == {"mb": 50}
    assert call(runner, "data", "set", "limits", "retries", "3")["value"] == 3
    assert call(runner, "data", "set", "limits", "name", "plain words")["value"] == "plain words"
    assert call(runner, "data", "set", "limits", "odd", "NaN")["value"] == "NaN"
    assert call(runner, "data", "set", "other", "k", '"quoted"')["value"] == "quoted"
    assert [i["key"] for i in call(runner, "data", "get", "limits")["items"]] == ["name", "odd", "retries", "upload"]
    assert [i["value"] for i in call(runner, "data", "get", "limits", "upload")["items"]] == [{"mb": 50}]
    assert len(call(runner, "data", "get")["items"]) == 5
    assert call(runner, "data", "delete", "limits", "upload")["deleted"]["value"] == {"mb": 50}
    # One key asked for and gone is not found (issue 27: it exited 0 with "no custom data").
    assert "no custom data under category 'limits' and key 'upload'" in fails(runner, "data", "get", "limits", "upload")


def test_glossary_round_trip(runner, project):
    term = call(runner, "glossary", "set", "workspace", "The project a call is routed to")
    assert term["category"] == "ProjectGlossary"
    call(runner, "data", "set", "other", "workspace", "not a term")
    terms = call(runner, "glossary", "list")["items"]
    assert [(t["key"], t["value"]) for t in terms] == [("workspace", "The project a call is routed to")]
    assert "The project a call is routed to" in run(runner, "glossary", "list").stdout
    assert call(runner, "glossary", "delete", "workspace")["deleted"]["key"] == "workspace"
    assert call(runner, "glossary", "list")["items"] == []


def test_context_set_patch_show_and_history(runner, project):
    assert call(runner, "context", "show", "active") == {
        "content": {},
        "version": 0,
        "updated_at": None,
        "workspace": {"root": str(project), "source": "cwd"},
    }
    assert call(runner, "context", "set", "active", '{"focus": "search", "open": ["ranking"]}')["version"] == 1
    patched = call(runner, "context", "patch", "active", '{"open": "__DELETE__", "next": "export"}')
    assert patched["content"] == {"focus": "search", "next": "export"} and patched["version"] == 2
    assert call(runner, "context", "set", "product", "-", input='{"goal": "memory"}')["content"] == {"goal": "memory"}
    assert call(runner, "context", "show", "active")["content"] == {"focus": "search", "next": "export"}
    versions = call(runner, "history", "active_context")["versions"]
    assert [v["version"] for v in versions] == [2, 1]
    assert call(runner, "history", "active_context", "--version", "1")["versions"][0]["content"]["open"] == ["ranking"]
    assert "focus" in run(runner, "history", "active_context").stdout


def test_context_refuses_json_that_is_not_an_object(runner, project):
    result = runner.invoke(cli, ["context", "set", "active", "[1, 2]"])
    assert result.exit_code == 2 and "must be an object" in result.output
    result = runner.invoke(cli, ["context", "patch", "active", "{nope"])
    assert result.exit_code == 2 and "is not JSON" in result.output


def test_links_walk_the_graph(runner, project):
    d = call(runner, "decisions", "add", "Use WAL")["id"]
    p = call(runner, "progress", "add", "TODO", "Enable WAL")["id"]
    g = call(runner, "patterns", "add", "Pragmas", "Set on connect")["id"]
    first = call(runner, "link", "progress", str(p), "implements", "decision", str(d), "--description", "the task")
    assert first["created"] is True and first["description"] == "the task"
    assert call(runner, "link", "progress", str(p), "implements", "decision", str(d))["id"] == first["id"]
    call(runner, "link", "system_pattern", str(g), "relates_to", "progress", str(p))
    near = call(runner, "links", "decision", str(d))["items"]
    assert [(i["type"], i["id"], i["direction"]) for i in near] == [("progress", p, "incoming")]
    far = call(runner, "links", "decision", str(d), "--depth", "2")["items"]
    assert [(i["type"], i["depth"]) for i in far] == [("progress", 1), ("system_pattern", 2)]
    assert call(runner, "links", "decision", str(d), "--depth", "2", "--relationship", "implements")["items"] == near
    assert "implements" in run(runner, "links", "progress", str(p)).stdout
    assert call(runner, "decisions", "delete", str(d))["links_removed"] == 1


def test_search_finds_an_added_decision(runner, project):
    d = call(runner, "decisions", "add", "Use SQLite WAL", "--rationale", "readers never block", "--tag", "db")
    call(runner, "progress", "add", "TODO", "Benchmark WAL mode")
    call(runner, "glossary", "set", "WAL", "write-ahead log")
    hits = call(runner, "search", "wal")["results"]
    assert {(h["type"], h["id"]) for h in hits} >= {("decision", d["id"])}
    only = call(runner, "search", "wal", "--type", "decision", "--tag", "DB")["results"]
    assert [(h["type"], h["id"]) for h in only] == [("decision", d["id"])]
    glossary = call(runner, "search", "wal", "--category", "ProjectGlossary")["results"]
    assert [h["type"] for h in glossary] == ["custom_data"]
    assert call(runner, "search", '"unbalanced wal')["results"]  # FTS5 syntax errors become plain words
    assert call(runner, "search", "wal", "--since", "2999-01-01T00:00:00Z")["results"] == []
    assert "Use SQLite WAL" in run(runner, "search", "wal").stdout


def test_activity_lists_recent_changes(runner, project):
    d = call(runner, "decisions", "add", "Use WAL")["id"]
    call(runner, "context", "set", "active", '{"focus": "wal"}')
    recent = call(runner, "activity", "--hours", "1")
    assert [x["id"] for x in recent["decisions"]] == [d]
    assert recent["context_changes"][0]["item_type"] == "active_context"
    assert call(runner, "activity", "--since", "2999-01-01T00:00:00Z")["decisions"] == []
    assert "Use WAL" in run(runner, "activity").stdout
    assert "not both" in fails(runner, "activity", "--hours", "1", "--since", "2020-01-01")


def test_batch_writes_all_items_from_a_file_or_stdin(runner, project, tmp_path):
    items = project / "decisions.json"
    items.write_text(json.dumps([{"summary": "A"}, {"summary": "B", "tags": ["x"]}]), encoding="utf-8")
    assert call(runner, "batch", "decision", str(items))["count"] == 2
    written = call(runner, "batch", "progress", "-", input='[{"status": "TODO", "description": "C"}]')
    assert written["item_type"] == "progress" and written["items"][0]["description"] == "C"
    empty = runner.invoke(cli, ["batch", "decision", "-"], input="")
    assert empty.exit_code == 2 and "is not JSON" in empty.output
    items.write_text(json.dumps([{"summary": "ok"}, {"nope": 1}]), encoding="utf-8")
    assert "item 1" in fails(runner, "batch", "decision", str(items))
    assert len(call(runner, "decisions", "list")["decisions"]) == 2


def test_schema_describes_the_item_types(runner):
    schema = call(runner, "schema")
    assert set(schema["item_types"]) == {
        "decision",
        "progress",
        "system_pattern",
        "custom_data",
        "product_context",
        "active_context",
    }
    assert "log_decision" in run(runner, "schema").stdout


# -- export and import -------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_export_then_import_into_another_workspace_reproduces_the_decisions(
    runner, project, tmp_path, monkeypatch, fmt
):
    call(runner, "decisions", "add", "Use SQLite WAL", "--rationale", "readers never block", "--tag", "db")
    call(runner, "decisions", "add", "Ship weekly", "--details", "every Friday")
    call(runner, "context", "set", "product", '{"goal": "memory"}')
    exported = call(runner, "export", "--format", fmt)
    assert exported["output_dir"] == str(project / ".homeport" / "export")
    assert exported["counts"]["decisions"] == 2
    original = call(runner, "decisions", "list")["decisions"]

    other = tmp_path / "depot"
    (other / ".git").mkdir(parents=True)
    shutil.copytree(project / ".homeport" / "export", other / "incoming")
    monkeypatch.chdir(other / "incoming")
    imported = call(runner, "import", "--input", ".")
    assert imported["counts"]["decisions"] == 2 and imported["workspace"]["root"] == str(other.resolve())
    assert call(runner, "decisions", "list")["decisions"] == original
    assert call(runner, "context", "show", "product")["content"] == {"goal": "memory"}


def test_export_and_import_count_items_and_name_the_history_they_carry_apart(runner, project):
    call(runner, "decisions", "add", "Use SQLite WAL")
    call(runner, "decisions", "update", "1", "--rationale", "readers never block")
    exported = run(runner, "export").stdout
    assert "exported 1 item(s)" in exported and "with item_versions 2" in " ".join(exported.split())
    imported = run(runner, "import", "--mode", "replace", "--yes").stdout
    assert "imported 1 item(s)" in imported and "with item_versions 2" in " ".join(imported.split())
    assert [v["version"] for v in call(runner, "history", "decision", "1")["versions"]] == [2, 1]


def test_export_output_is_relative_to_the_current_directory_and_stays_inside(runner, project, monkeypatch):
    (project / "docs").mkdir()
    monkeypatch.chdir(project / "docs")
    call(runner, "decisions", "add", "x")
    assert call(runner, "export", "--output", "memory")["output_dir"] == str(project / "docs" / "memory")
    line = fails(runner, "export", "--output", "../..")
    assert "outside the workspace" in line and "../.." in line


def test_import_replace_asks_first_and_aborts_without_an_answer(runner, project):
    call(runner, "decisions", "add", "Keep me")
    call(runner, "export")
    call(runner, "decisions", "add", "Added after the export")
    result = runner.invoke(cli, ["import", "--mode", "replace"])
    assert result.exit_code == 1 and "Replace the whole memory" in result.stderr
    assert len(call(runner, "decisions", "list")["decisions"]) == 2
    run(runner, "import", "--mode", "replace", "--yes")
    assert [d["summary"] for d in call(runner, "decisions", "list")["decisions"]] == ["Keep me"]


# -- errors and reads ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("decisions", "delete", "99"), "decision 99"),
        (("progress", "update", "42", "--status", "DONE"), "42"),
        (("progress", "delete", "42"), "42"),
        (("progress", "tree", "42"), "42"),
        (("patterns", "delete", "7"), "7"),
        (("data", "delete", "limits", "missing-key"), "'missing-key'"),
        (("link", "decision", "5", "implements", "progress", "6"), "5"),
        (("history", "product_context", "--version", "3"), "version 3"),
    ],
)
def test_unknown_ids_fail_in_one_line_naming_the_value(runner, project, args, named):
    call(runner, "decisions", "add", "make a store")
    line = fails(runner, *args)
    assert named in line


def test_no_workspace_from_the_filesystem_root_fails_in_one_line(runner, monkeypatch):
    monkeypatch.chdir("/")
    for args in (("decisions", "list"), ("decisions", "add", "x"), ("search", "x")):
        line = fails(runner, *args)
        assert "no workspace" in line and "current directory: / (refused" in line and "--workspace" in line


def test_reads_from_a_fresh_project_do_not_create_a_store(runner, project):
    reads = [
        ("decisions", "list"),
        ("progress", "list"),
        ("progress", "tree"),
        ("patterns", "list"),
        ("data", "get"),
        ("glossary", "list"),
        ("context", "show", "product"),
        ("context", "show", "active"),
        ("search", "wal"),
        ("history", "active_context"),
        ("activity",),
    ]
    for args in reads:
        run(runner, *args)
        assert call(runner, *args)["workspace"] == {"root": str(project), "source": "cwd"}
    # Links of an item that cannot exist yet: an error naming it, and still no store.
    result = runner.invoke(cli, ["links", "decision", "1"])
    assert result.exit_code == 1 and "decision 1" in result.output
    assert not (project / ".homeport").exists()


@pytest.mark.anyio
async def test_json_output_is_what_the_mcp_tool_returns(runner, project, server_factory):
    call(runner, "decisions", "add", "Use WAL", "--tag", "db")
    parent = call(runner, "progress", "add", "TODO", "Top")["id"]
    call(runner, "progress", "add", "TODO", "Child", "--parent", str(parent))
    async with Client(server_factory()) as c:
        for tool, args, command in (
            ("get_decisions", {}, ("decisions", "list")),
            ("get_progress", {"tree": True}, ("progress", "tree")),
            # By words: how many items wait for embedding depends on the server's background thread.
            ("search", {"query": "wal", "mode": "words"}, ("search", "wal", "--mode", "words")),
        ):
            r = await c.call_tool(tool, {**args, "workspace": str(project)})
            from_mcp = {k: v for k, v in r.structured_content.items() if k != "workspace"}
            from_cli = call(runner, *command)
            assert from_cli.pop("workspace") == {"root": str(project), "source": "cwd"}
            assert from_cli == from_mcp


def test_markup_in_items_prints_as_written(runner, project):
    call(runner, "decisions", "add", "Escape [bold]markup[/bold]")
    assert "Escape [bold]markup[/bold]" in run(runner, "decisions", "list").stdout


def test_usage_errors_are_not_tracebacks(runner, project):
    result = runner.invoke(cli, ["decisions", "delete", "seven"])
    assert result.exit_code == 2 and "'seven' is not a valid integer" in result.output
    assert isinstance(result.exception, SystemExit) and "Traceback" not in result.output


# -- nothing lost on bad input ---------------------------------------------------------------


def test_a_markdown_export_missing_an_end_marker_fails_with_the_line_and_keeps_the_memory(runner, project):
    call(runner, "decisions", "add", "Use SQLite WAL", "--rationale", "readers never block")
    call(runner, "export", "--format", "markdown")
    path = project / ".homeport/export/decisions.md"
    path.write_text(path.read_text().replace("<!-- end rationale -->\n", ""))
    line = fails(runner, "import")
    assert "decisions.md line" in line and "field rationale" in line
    assert call(runner, "decisions", "list")["decisions"][0]["rationale"] == "readers never block"


def test_import_dry_run_shows_what_would_change_and_writes_nothing(runner, project):
    call(runner, "decisions", "add", "Keep me")
    call(runner, "export")
    call(runner, "decisions", "add", "Added after the export")
    shown = run(runner, "import", "--mode", "replace", "--dry-run").stdout
    assert "would import" in shown and "decisions: removed 2" in shown and "nothing was written" in shown
    planned = call(runner, "import", "--mode", "replace", "--dry-run")
    assert planned["dry_run"] and planned["changes"]["decisions"] == {"added": [], "changed": [], "removed": [2]}
    assert len(call(runner, "decisions", "list")["decisions"]) == 2


def test_import_replace_of_an_empty_export_needs_allow_empty(runner, project):
    call(runner, "export", "--output", "nothing")
    call(runner, "decisions", "add", "Keep me")
    line = fails(runner, "import", "--input", "nothing", "--mode", "replace", "--yes")
    assert "allow-empty" in line
    run(runner, "import", "--input", "nothing", "--mode", "replace", "--yes", "--allow-empty")
    assert call(runner, "decisions", "list")["decisions"] == []


def test_context_set_refuses_to_erase_a_document_unless_allowed(runner, project):
    call(runner, "context", "set", "active", '{"focus": "search"}')
    assert "--allow-empty" in fails(runner, "context", "set", "active", "{}")
    assert call(runner, "context", "show", "active")["content"] == {"focus": "search"}
    assert call(runner, "context", "set", "active", "{}", "--allow-empty")["content"] == {}


def test_an_oversized_text_fails_in_one_line_naming_the_limit(runner, project):
    line = fails(runner, "decisions", "add", "x" * 1001)
    assert "summary: String should have at most 1000 characters" in line and "x" * 100 not in line


def test_an_oversized_custom_data_value_fails_naming_the_limit_and_is_not_stored(runner, project):
    call(runner, "decisions", "add", "make a store")
    line = fails(runner, "data", "set", "blobs", "big", json.dumps({"x": "y" * 1_000_000}))
    assert "value" in line and "1,000,000" in line and len(line) < 400
    assert call(runner, "data", "get")["items"] == []


def test_history_says_who_wrote_each_version(runner, project):
    from homeport import __version__
    from homeport.store import StoreCache, contexts

    run(runner, "context", "set", "active", '{"focus": "search"}')
    cache = StoreCache()  # a version written straight to the store, as before writers were recorded
    try:
        contexts.update_context(cache.get(project, create=True), "active", patch={"focus": "export"})
    finally:
        cache.close()
    run(runner, "context", "patch", "active", '{"next": "ranking"}')
    table = runner.invoke(cli, ["history", "active_context"])
    assert table.exit_code == 0, table.output
    rows = {line.split()[0]: line for line in table.stdout.splitlines() if line.strip()[:1].isdigit()}
    lines = table.stdout.splitlines()
    assert any("written by" in line for line in lines), table.stdout
    assert "local" in rows["3"] and "local" in rows["1"] and "not recorded" in rows["2"], table.stdout
    below = lines[lines.index(rows["3"]) + 1 : lines.index(rows["2"])]
    assert f"homeport {__version__}" in below[0] and "update_active_context" in below[1], table.stdout
    versions = call(runner, "history", "active_context")["versions"]
    assert [v["written_by"] for v in versions] == [
        {"principal": "local", "client": "homeport", "client_version": __version__, "tool": "update_active_context"},
        None,
        {"principal": "local", "client": "homeport", "client_version": __version__, "tool": "update_active_context"},
    ]
