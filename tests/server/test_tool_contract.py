"""Tool names, parameters and annotations are a contract with every agent: pinned here."""

from __future__ import annotations

import pytest
from mcp import Client

pytestmark = pytest.mark.anyio

CONTRACT = {
    "use_workspace": ["workspace"],
    "where_am_i": ["workspace"],
    "get_product_context": ["workspace"],
    "update_product_context": ["content", "patch", "allow_empty", "allow_secrets", "workspace"],
    "get_active_context": ["workspace"],
    "update_active_context": ["content", "patch", "allow_empty", "allow_secrets", "workspace"],
    "log_decision": ["summary", "rationale", "implementation_details", "tags", "allow_secrets", "workspace"],
    "get_decisions": ["limit", "tags_any", "tags_all", "workspace"],
    "log_progress": ["status", "description", "parent_id", "allow_secrets", "workspace"],
    "update_progress": ["progress_id", "status", "description", "parent_id", "allow_secrets", "workspace"],
    "get_progress": ["status", "parent_id", "limit", "tree", "workspace"],
    "delete_progress": ["progress_id", "cascade", "workspace"],
    "delete_decision": ["decision_id", "workspace"],
    "log_custom_data": ["category", "key", "value", "allow_secrets", "workspace"],
    "get_custom_data": ["category", "key", "workspace"],
    "delete_custom_data": ["category", "key", "workspace"],
    "log_system_pattern": ["name", "description", "tags", "allow_secrets", "workspace"],
    "get_system_patterns": ["tags_any", "tags_all", "limit", "workspace"],
    "delete_system_pattern": ["pattern_id", "workspace"],
    "search": ["query", "types", "limit", "tags_any", "category", "since", "mode", "workspace"],
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
    "get_item_history": ["item_type", "limit", "version", "before", "after", "workspace"],
    "get_recent_activity": ["hours_ago", "since", "limit_per_type", "workspace"],
    "get_memory_schema": [],
    "batch_log_items": ["item_type", "items", "allow_secrets", "workspace"],
    "export": ["format", "output_dir", "workspace"],
    "import": ["input_dir", "mode", "dry_run", "allow_empty", "allow_secrets", "workspace"],
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
