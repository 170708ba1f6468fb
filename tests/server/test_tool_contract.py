"""Tool names, parameters and annotations are a contract with every agent: pinned here."""

from __future__ import annotations

import pytest
from mcp import Client

pytestmark = pytest.mark.anyio

CONTRACT = {
    "use_workspace": ["workspace"],
    "where_am_i": ["workspace"],
    "get_product_context": ["workspace"],
    "update_product_context": ["content", "patch", "workspace"],
    "get_active_context": ["workspace"],
    "update_active_context": ["content", "patch", "workspace"],
    "log_decision": ["summary", "rationale", "implementation_details", "tags", "workspace"],
    "get_decisions": ["limit", "tags_any", "tags_all", "workspace"],
    "log_progress": ["status", "description", "parent_id", "workspace"],
    "update_progress": ["progress_id", "status", "description", "parent_id", "workspace"],
    "get_progress": ["status", "parent_id", "limit", "workspace"],
    "log_custom_data": ["category", "key", "value", "workspace"],
    "get_custom_data": ["category", "key", "workspace"],
    "search": ["query", "types", "limit", "workspace"],
}


async def test_tool_names_and_parameters_are_the_contract(server_factory):
    async with Client(server_factory()) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
    assert set(tools) >= set(CONTRACT)
    for name, params in CONTRACT.items():
        assert list(tools[name].input_schema["properties"]) == params, name
        assert "roots" not in tools[name].input_schema["properties"]


async def test_every_tool_declares_annotations_description_and_output_schema(server_factory):
    async with Client(server_factory()) as c:
        for tool in (await c.list_tools()).tools:
            a = tool.annotations
            assert a is not None and a.read_only_hint is not None and a.destructive_hint is not None, tool.name
            assert a.idempotent_hint is not None and a.open_world_hint is False, tool.name
            assert tool.description and len(tool.description) > 20, tool.name
            assert tool.output_schema is not None, tool.name
            if tool.name.startswith(("get_", "search", "where")):
                assert a.read_only_hint, tool.name
