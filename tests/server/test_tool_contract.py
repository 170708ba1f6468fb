"""Tool names, parameters and annotations are a contract with every agent: pinned here."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client

from homeport.core.catalog import CATALOG, DASHBOARD, GROUPS, unknown_tool

pytestmark = pytest.mark.anyio

CONTRACT = {
    "use_workspace": ["workspace"],
    "where_am_i": ["workspace"],
    "get_product_context": ["workspace"],
    "update_product_context": ["content", "patch", "allow_empty", "allow_secrets", "workspace"],
    "get_active_context": ["workspace"],
    "update_active_context": ["content", "patch", "allow_empty", "allow_secrets", "workspace"],
    "log_decision": ["summary", "rationale", "implementation_details", "tags", "cites", "allow_secrets", "workspace"],
    "get_decisions": ["limit", "tags_any", "tags_all", "workspace"],
    "log_progress": [
        "status",
        "description",
        "parent_id",
        "cites",
        "linked_item_type",
        "linked_item_id",
        "link_relationship",
        "allow_secrets",
        "workspace",
    ],
    "update_progress": ["progress_id", "status", "description", "parent_id", "cites", "allow_secrets", "workspace"],
    "get_progress": ["status", "parent_id", "limit", "tree", "workspace"],
    "delete_progress": ["progress_id", "cascade", "workspace"],
    "delete_decision": ["decision_id", "workspace"],
    "log_custom_data": ["category", "key", "value", "cites", "allow_secrets", "workspace"],
    "get_custom_data": ["category", "key", "workspace"],
    "delete_custom_data": ["category", "key", "workspace"],
    "log_system_pattern": ["name", "description", "tags", "cites", "allow_secrets", "workspace"],
    "get_system_patterns": ["tags_any", "tags_all", "limit", "workspace"],
    "delete_system_pattern": ["pattern_id", "workspace"],
    "search": ["query", "types", "limit", "tags_any", "category", "since", "mode", "workspaces", "workspace"],
    "link_items": [
        "source_type",
        "source_id",
        "target_type",
        "target_id",
        "relationship",
        "description",
        "allow_secrets",
        "workspace",
    ],
    "get_linked_items": ["item_type", "item_id", "relationship", "linked_type", "depth", "workspace"],
    "get_ready_work": ["limit", "workspace"],
    "get_item_history": ["item_type", "limit", "version", "before", "after", "item_id", "workspace"],
    "update_decision": [
        "decision_id",
        "summary",
        "rationale",
        "implementation_details",
        "tags",
        "cites",
        "allow_secrets",
        "workspace",
    ],
    "update_system_pattern": ["pattern_id", "name", "description", "tags", "cites", "allow_secrets", "workspace"],
    "confirm_citations": ["item_type", "item_id", "accept_changes", "allow_secrets", "workspace"],
    "verify_citations": ["include_fresh", "workspace"],
    "propose_cleanup": ["scope", "kinds", "stale_days", "workspace"],
    "get_changesets": ["changeset_id", "status", "limit", "workspace"],
    "amend_changeset": ["changeset_id", "accept", "reject", "add", "reason", "allow_secrets", "workspace"],
    "apply_changeset": ["changeset_id", "force", "workspace"],
    "revert_changeset": ["changeset_id", "force", "workspace"],
    "set_item_lifecycle": ["item_type", "item_id", "valid_until", "pinned", "workspace"],
    "restore_version": ["item_type", "item_id", "version", "workspace"],
    "purge_item": ["item_type", "item_id", "workspace"],
    "promote_branch": ["branch", "workspace"],
    "get_recent_activity": ["hours_ago", "since", "limit_per_type", "workspace"],
    "get_memory_schema": [],
    "batch_log_items": ["item_type", "items", "allow_secrets", "workspace"],
    "export": ["format", "output_dir", "workspace"],
    "import": ["input_dir", "mode", "dry_run", "allow_empty", "allow_secrets", "workspace"],
    "sync": ["remote", "ref", "workspace"],
    "get_context": ["task", "budget_tokens", "workspace"],
    "import_from": ["kind", "source", "dry_run", "allow_secrets", "workspace"],
    "list_folders": ["scope"],
    "list_files": ["folder_id", "scope", "path", "recursive"],
    "read_file_by_id": ["folder_id", "scope", "path"],
    "write_file_by_id": ["folder_id", "scope", "path", "content", "encoding"],
    "delete_file_by_id": ["folder_id", "scope", "path"],
    "get_file_info_by_id": ["folder_id", "scope", "path"],
    "get_tables": ["workspace"],
    "get_schema": ["table", "workspace"],
    "get_database_type": ["workspace"],
    "run_query": ["query", "params", "limit", "workspace"],
}


async def test_tool_names_and_parameters_are_the_contract(server_factory):
    async with Client(server_factory()) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
    assert set(tools) == set(CONTRACT)
    for name, params in CONTRACT.items():
        assert list(tools[name].input_schema.get("properties", {})) == params, name
        assert "roots" not in tools[name].input_schema["properties"]


async def test_every_tool_declares_annotations_description_and_output_schema(server_factory):
    async with Client(server_factory()) as c:
        for tool in (await c.list_tools()).tools:
            a = tool.annotations
            assert a is not None and a.read_only_hint is not None and a.destructive_hint is not None, tool.name
            assert a.idempotent_hint is not None and a.open_world_hint is False, tool.name
            assert tool.description and len(tool.description) > 20, tool.name
            assert tool.output_schema is not None, tool.name
            if tool.name.startswith(("get_", "search", "where", "list_", "read_")) and tool.name != "run_query":
                assert a.read_only_hint, tool.name
            if tool.name.startswith("delete_"):
                assert a.destructive_hint and not a.read_only_hint, tool.name


async def test_tool_groups_expose_only_the_named_tools(server_factory):
    async with Client(server_factory(tool_groups=("workspace",))) as c:
        names = {t.name for t in (await c.list_tools()).tools}
    assert names == {"use_workspace", "where_am_i"}


def test_unknown_tool_group_is_named():
    from homeport.errors import ConfigError
    from homeport.server import parse_tool_groups

    assert parse_tool_groups("memory, workspace") == ("workspace", "memory")
    assert parse_tool_groups(None) == parse_tool_groups("all")
    with pytest.raises(ConfigError, match="nosuch"):
        parse_tool_groups("memory,nosuch")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_unknown_tool_name_is_answered_with_the_tool_meant_or_the_group_to_serve(
    server_factory, projects, mode
):
    """An agent that misspells a tool, sends its client's prefixed name, or calls a tool of a group this
    server was started without learns in the error what to call instead, or how to get the tool: not
    only the SDK's "Unknown tool". The SDK's words stay first, for clients that match on them."""
    server = server_factory(tool_groups=("workspace", "memory"))
    async with Client(server, mode=mode) as c:

        async def error(name: str) -> str:
            result = await c.call_tool(name, {"summary": "Use WAL"})
            assert result.is_error
            (content,) = result.content
            assert content.text.startswith(f"Unknown tool: {name}. "), content.text
            assert (
                content.text.endswith(" [unknown_tool]")
                and result.structured_content["error"]["code"] == "unknown_tool"
            )
            return content.text

        assert "Did you mean log_decision?" in await error("log_decisions")
        assert "Did you mean log_decision?" in await error("mcp__homeport__log_decision")
        assert "Did you mean get_decisions?" in await error("homeport.get_decisions")
        files = await error("list_files")
        assert "tool group files" in files and "--tools workspace,memory,files" in files, files
        assert "HOMEPORT_TOOLS" in files
        nothing = await error("open_the_pod_bay_doors")
        assert "Did you mean" not in nothing and "tools/list" in nothing
        # The dashboard's tools are served but never offered, in a list or in a suggestion.
        assert "Did you mean" not in await error("memory_overviews")  # not memory_overview
        assert "Did you mean" not in await error("mcp__homeport__memory_overview")
        real = await c.call_tool("log_decision", {"summary": "Use WAL", "workspace": str(projects["alpha"])})
        assert not real.is_error  # the real name still works


@given(
    name=st.one_of(st.text(max_size=40), st.sampled_from([s.name for s in CATALOG.in_groups((*GROUPS, DASHBOARD))])),
    prefix=st.sampled_from(["", "mcp__homeport__", "homeport.", "x/"]),
    groups=st.sets(st.sampled_from(GROUPS), min_size=1),
)
def test_the_answer_to_an_unknown_tool_only_ever_names_a_tool_a_client_can_be_offered(name, prefix, groups):
    called = prefix + name
    answer = unknown_tool(called, groups)
    assert answer.startswith(f"Unknown tool: {called}. ")
    rest = answer[len(f"Unknown tool: {called}. ") :]
    offered = {s.name for s in CATALOG.in_groups(groups)}
    if rest.startswith("Did you mean "):
        assert rest.split()[3].rstrip("?") in offered
    elif "which this server was started without" in rest:
        spec = CATALOG[rest.split()[0]]
        assert spec.group in GROUPS and spec.group not in groups and "--tools " in rest
    else:
        assert rest == f"tools/list names the {len(offered)} tools of this server."


# ConPort's and DevDB's names (`--tools conport` / `--tools devdb`): their clients' contract, pinned as listed.
# allow_secrets is Homeport's own (optional) on the writes that scan; the rest are the peers' arguments.
_W = "workspace_id"
COMPAT_CONTRACT = {
    "get_product_context": [_W],
    "update_product_context": [_W, "content", "patch_content", "allow_secrets"],
    "get_active_context": [_W],
    "update_active_context": [_W, "content", "patch_content", "allow_secrets"],
    "log_decision": [_W, "summary", "rationale", "implementation_details", "tags", "allow_secrets"],
    "get_decisions": [_W, "limit", "tags_filter_include_all", "tags_filter_include_any"],
    "search_decisions_fts": [_W, "query_term", "limit"],
    "delete_decision_by_id": [_W, "decision_id"],
    "log_progress": [
        _W,
        "status",
        "description",
        "parent_id",
        "linked_item_type",
        "linked_item_id",
        "link_relationship_type",
        "allow_secrets",
    ],
    "get_progress": [_W, "status_filter", "parent_id_filter", "limit"],
    "update_progress": [_W, "progress_id", "status", "description", "parent_id", "allow_secrets"],
    "delete_progress_by_id": [_W, "progress_id"],
    "log_system_pattern": [_W, "name", "description", "tags", "allow_secrets"],
    "get_system_patterns": [_W, "limit", "tags_filter_include_all", "tags_filter_include_any"],
    "delete_system_pattern_by_id": [_W, "pattern_id"],
    "log_custom_data": [_W, "category", "key", "value", "allow_secrets"],
    "get_custom_data": [_W, "category", "key"],
    "delete_custom_data": [_W, "category", "key"],
    "search_project_glossary_fts": [_W, "query_term", "limit"],
    "search_custom_data_value_fts": [_W, "query_term", "category_filter", "limit"],
    "export_conport_to_markdown": [_W, "output_path"],
    "import_markdown_to_conport": [_W, "input_path", "allow_secrets"],
    "link_conport_items": [
        _W,
        "source_item_type",
        "source_item_id",
        "target_item_type",
        "target_item_id",
        "relationship_type",
        "description",
        "allow_secrets",
    ],
    "get_linked_items": [_W, "item_type", "item_id", "relationship_type_filter", "linked_item_type_filter", "limit"],
    "batch_log_items": [_W, "item_type", "items", "allow_secrets"],
    "get_item_history": [_W, "item_type", "limit", "before_timestamp", "after_timestamp", "version"],
    "get_recent_activity_summary": [_W, "hours_ago", "since_timestamp", "limit_per_type"],
    "get_conport_schema": [_W],
    "semantic_search_conport": [
        _W,
        "query_text",
        "top_k",
        "filter_item_types",
        "filter_tags_include_any",
        "filter_tags_include_all",
        "filter_custom_data_categories",
    ],
    "get_workspace_detection_info": ["start_path"],
    "get-tables": ["projectRoot"],
    "get-schema": ["projectRoot", "table"],
    "get-database-type": ["projectRoot"],
    "run-query": ["projectRoot", "query"],
}


async def test_the_conport_and_devdb_groups_list_the_peers_names_and_parameters(server_factory):
    async with Client(server_factory(tool_groups=("conport", "devdb"))) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
    assert set(tools) == set(COMPAT_CONTRACT)
    for name, params in COMPAT_CONTRACT.items():
        assert list(tools[name].input_schema.get("properties", {})) == params, name
        assert tools[name].input_schema.get("additionalProperties") is False, name
