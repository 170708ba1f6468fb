"""A description of the memory's item types for agents that introspect (get_memory_schema)."""

from __future__ import annotations

from typing import Any

__all__ = ["memory_schema"]

_TYPES: dict[str, dict[str, Any]] = {
    "product_context": {
        "fields": {"content": "JSON object", "version": "int", "updated_at": "ISO 8601"},
        "id": "always 1",
        "write": ["update_product_context"],
        "read": ["get_product_context", "get_item_history"],
    },
    "active_context": {
        "fields": {"content": "JSON object", "version": "int", "updated_at": "ISO 8601"},
        "id": "always 1",
        "write": ["update_active_context"],
        "read": ["get_active_context", "get_item_history"],
    },
    "decision": {
        "fields": {
            "id": "int",
            "summary": "text",
            "rationale": "text?",
            "implementation_details": "text?",
            "tags": "list of text",
            "created_at": "ISO 8601",
            "updated_at": "ISO 8601",
        },
        "write": ["log_decision", "update_decision", "batch_log_items", "delete_decision"],
        "read": ["get_decisions", "search", "get_item_history"],
    },
    "progress": {
        "fields": {
            "id": "int",
            "status": "text (TODO, IN_PROGRESS, DONE, BLOCKED, or any)",
            "description": "text",
            "parent_id": "int?",
            "created_at": "ISO 8601",
            "updated_at": "ISO 8601",
        },
        "write": ["log_progress", "update_progress", "batch_log_items", "delete_progress"],
        "read": ["get_progress", "search", "get_item_history"],
    },
    "system_pattern": {
        "fields": {
            "id": "int",
            "name": "text, unique (case-insensitive)",
            "description": "text",
            "tags": "list of text",
            "created_at": "ISO 8601",
            "updated_at": "ISO 8601",
        },
        "write": ["log_system_pattern", "update_system_pattern", "batch_log_items", "delete_system_pattern"],
        "read": ["get_system_patterns", "search", "get_item_history"],
    },
    "custom_data": {
        "fields": {
            "id": "int",
            "category": "text",
            "key": "text, unique within category",
            "value": "any JSON",
            "created_at": "ISO 8601",
            "updated_at": "ISO 8601",
        },
        "notes": "category ProjectGlossary is the project glossary; search(category='ProjectGlossary')",
        "write": ["log_custom_data", "batch_log_items", "delete_custom_data"],
        "read": ["get_custom_data", "search", "get_item_history"],
    },
}


def memory_schema() -> dict[str, Any]:
    return {
        "item_types": _TYPES,
        "links": {
            "fields": {
                "source_type": "item type",
                "source_id": "int",
                "target_type": "item type",
                "target_id": "int",
                "relationship": "text",
                "description": "text?",
            },
            "write": ["link_items"],
            "read": ["get_linked_items"],
        },
        "activity": ["get_recent_activity"],
        "transfer": ["export", "import"],
        # Every write keeps a version; a delete keeps the history until it is purged.
        "versions": ["get_item_history", "restore_version", "purge_item"],
    }
