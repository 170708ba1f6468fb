"""A scripted agent that follows a ConPort custom-instruction file unchanged: every "Invoke `tool` (...)" it
holds, in order, with its placeholders filled as an agent would fill them from what it has seen so far.

The file is read as text: the published strategies write each call either as JSON with placeholders
(`{"workspace_id": "...", "decision_id": ID}}`, a stray brace included) or in words ("limit 5",
`category: "critical_settings"`). Nothing here knows Homeport: the names and arguments are the file's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

INVOKE = re.compile(r"Invoke `(?P<tool>[a-z_]+)`(?:\.\.\.)?\s*(?:\((?P<args>(?:`[^`]*`(?:\s+or\s+`[^`]*`)*)|[^)]*)\))?")
Call = Callable[[str, dict[str, Any]], Awaitable[tuple[bool, Any]]]  # (is_error, structured result or text)


@dataclass
class Step:
    tool: str
    arguments: dict[str, Any]


@dataclass
class Outcome:
    step: Step
    failed: bool
    said: Any


@dataclass
class Memory:
    """What the agent has seen: the ids it would put where the file says ID."""

    workspace: str
    ids: dict[str, int] = field(default_factory=dict)


def steps_of(text: str) -> list[tuple[str, list[str]]]:
    """(tool, its argument forms) for each Invoke in the file, in order; JSON forms keep their placeholders."""
    out = []
    for match in INVOKE.finditer(text.replace('\\"', '"')):
        raw = (match.group("args") or "").strip()
        forms = re.findall(r"`([^`]*)`", raw) if raw.startswith("`") else [raw]
        out.append((match.group("tool"), forms))
    return out


# What an agent writes for "..." in an argument, by the argument's name.
_WORDS = {
    "summary": "Keep the memory in SQLite with WAL",
    "rationale": "readers never block the writer",
    "description": "Write the importer",
    "name": "Repository pattern",
    "status": "IN_PROGRESS",
    "status_filter": "IN_PROGRESS",
    "category": "critical_settings",
    "category_filter": "critical_settings",
    "key": "database",
    "query_term": "SQLite",
    "query_text": "how is the database configured",
    "relationship_type": "implements",
    "relationship_type_filter": "implements",
    "item_type": "decision",
    "source_item_type": "system_pattern",
    "target_item_type": "decision",
    "linked_item_type": "decision",
    "linked_item_type_filter": "system_pattern",
}
_ID_OF = {  # an ID placeholder, by argument, names the item type it stands for
    "decision_id": "decision",
    "progress_id": "progress",
    "pattern_id": "system_pattern",
    "parent_id": "parent",
    "parent_id_filter": "parent",
    "item_id": "decision",
    "source_item_id": "system_pattern",
    "target_item_id": "decision",
    "linked_item_id": "decision",
}


def fill(form: str, memory: Memory, tool: str = "") -> dict[str, Any]:
    """The arguments an agent sends for one form of a call."""
    form = form.strip()
    if not form.startswith("{"):
        return _from_words(form, tool, memory)
    text = re.sub(r'"item_type":\s*"(\w+)"\s+or\s+"\w+"', r'"item_type": "\1"', form)
    text = text.replace('{... or "string"}', '"a plain string value"').replace("{...}", '{"goal": "Ship v1"}')
    text = re.sub(r'"(\w+)":\s*(ID|N|H|V)\b', lambda m: f'"{m.group(1)}": "<{m.group(2)}>"', text)
    while text.count("}") > text.count("{"):
        text = text[: text.rindex("}")] + text[text.rindex("}") + 1 :]
    raw = json.loads(text)
    return _filled(raw, memory)


def _filled(value: Any, memory: Memory, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _filled(v, memory, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, memory, key) for v in value]
    if value == "...":
        if key == "workspace_id":
            return memory.workspace
        if key in _ID_OF:
            return str(memory.ids.get(_ID_OF[key], 1))
        return _WORDS.get(key, "some text")
    if value == "<ID>":
        return memory.ids.get(_ID_OF.get(key, "decision"), 1)
    if value in ("<N>", "<H>"):
        return 5 if value == "<N>" else 24
    if value == "<V>":
        return 1
    if value == "ISO_DATETIME":
        return "2000-01-01T00:00:00Z" if key in ("after_timestamp", "since_timestamp") else "2100-01-01T00:00:00Z"
    if value == "optional/relative/path":
        return "conport_export"
    return value


# A call written in words ("Invoke `update_product_context` with the prepared content") carries what the
# agent prepared: for a tool that needs arguments, this.
_PREPARED = {
    "update_product_context": {"content": {"goal": "Ship v1"}},
    "update_active_context": {"patch_content": {"current_focus": "the importer"}},
    "log_decision": {"summary": "Keep the memory in SQLite with WAL"},
    "log_progress": {"status": "TODO", "description": "Write the importer"},
    "log_system_pattern": {"name": "Repository pattern", "description": "one module per table"},
    "log_custom_data": {"category": "ProjectGlossary", "key": "WAL", "value": "write-ahead log"},
    "search_decisions_fts": {"query_term": "SQLite"},
    "search_custom_data_value_fts": {"query_term": "SQLite"},
    "search_project_glossary_fts": {"query_term": "WAL"},
    "semantic_search_conport": {"query_text": "how is the database configured"},
    "link_conport_items": {
        "source_item_type": "system_pattern",
        "source_item_id": "<pattern>",
        "target_item_type": "decision",
        "target_item_id": "<decision>",
        "relationship_type": "implements",
    },
    "get_linked_items": {"item_type": "decision", "item_id": "<decision>"},
    "get_item_history": {"item_type": "product_context"},
    "batch_log_items": {"item_type": "decision", "items": [{"summary": "Use WAL"}, {"summary": "Use FTS5"}]},
}


def _from_words(words: str, tool: str, memory: Memory) -> dict[str, Any]:
    args: dict[str, Any] = {
        k: (
            str(memory.ids["system_pattern"])
            if v == "<pattern>"
            else str(memory.ids["decision"])
            if v == "<decision>"
            else v
        )
        for k, v in _PREPARED.get(tool, {}).items()
    }
    if m := re.match(r"limit (\d+)", words):
        args["limit"] = int(m.group(1))
    if m := re.search(r'category:\s*"([^"]+)"', words):
        args["category"] = m.group(1)
    return args


_CREATES = {
    "log_decision": "decision",
    "log_progress": "progress",
    "log_system_pattern": "system_pattern",
}
_DELETES = {  # a deletion is of an item the user just confirmed: the agent makes one first
    "delete_decision_by_id": ("log_decision", {"summary": "to be deleted"}, "decision"),
    "delete_progress_by_id": ("log_progress", {"status": "TODO", "description": "to be deleted"}, "progress"),
    "delete_system_pattern_by_id": (
        "log_system_pattern",
        {"name": "gone", "description": "to be deleted"},
        "system_pattern",
    ),
    "delete_custom_data": ("log_custom_data", {"category": "critical_settings", "key": "database", "value": "x"}, ""),
}


async def follow(text: str, call: Call, workspace: str, tools: set[str]) -> list[Outcome]:
    """Run every call of one of `tools` (the memory server's; the file also names the editor's own, such as
    list_files) the file asks for, in order; never stops at a failure (it reports them all)."""
    memory = Memory(workspace)
    outcomes = []
    # What the file's later calls refer to exists before them, as it would after a session's first steps.
    for tool, args, kind in (
        ("log_decision", {"summary": "Use SQLite", "tags": ["tag1", "tag2"]}, "decision"),
        ("log_system_pattern", {"name": "Unit of work", "description": "one transaction per call"}, "system_pattern"),
        ("log_progress", {"status": "TODO", "description": "Release 1"}, "parent"),
        ("log_progress", {"status": "IN_PROGRESS", "description": "Set up the store"}, "progress"),
    ):
        failed, said = await call(tool, {"workspace_id": workspace, **args})
        assert not failed, f"setting up with {tool}: {said}"
        memory.ids[kind] = int(said["id"])
    for tool, forms in steps_of(text):
        if tool not in tools:
            continue
        for form in forms:
            step = Step(tool, fill(form, memory, tool) if tool not in ("get_workspace_detection_info",) else {})
            if tool not in ("get_workspace_detection_info",):
                step.arguments.setdefault("workspace_id", workspace)
            if tool in _DELETES:
                maker, made_args, kind = _DELETES[tool]
                failed, said = await call(maker, {"workspace_id": workspace, **made_args})
                if not failed and kind:
                    step.arguments[{"decision": "decision_id", "progress": "progress_id"}.get(kind, "pattern_id")] = (
                        int(said["id"])
                    )
            failed, said = await call(step.tool, step.arguments)
            outcomes.append(Outcome(step, failed, said))
            if not failed and tool in _CREATES and isinstance(said, dict) and "id" in said:
                memory.ids[_CREATES[tool]] = int(said["id"])
    return outcomes
