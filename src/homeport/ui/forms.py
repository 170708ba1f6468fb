"""What a query string or a form names: an item's address, a correction as a tool call."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from homeport.errors import InvalidArgumentError

__all__ = ["CONTEXTS", "ITEM_TYPES", "correction", "integer", "item_address", "required"]

CONTEXTS = ("product_context", "active_context")
ITEM_TYPES = ("decision", "progress", "system_pattern", "custom_data", *CONTEXTS)


def required(request: Request, name: str) -> str:
    value = request.query_params.get(name)
    if not value:
        raise InvalidArgumentError(f"the page needs ?{name}=")
    return value


def integer(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def item_address(source: Any) -> tuple[str, str, int]:
    params = source.query_params if isinstance(source, Request) else source
    ws, kind = params.get("ws"), params.get("type")
    if not ws or kind not in ITEM_TYPES:
        raise InvalidArgumentError(f"an item is named by ws, type ({', '.join(ITEM_TYPES)}) and id")
    item_id = 1 if kind in CONTEXTS else integer(params.get("id"), 0)
    if item_id < 1:
        raise InvalidArgumentError("an item id is a positive integer")
    return str(ws), str(kind), item_id


def correction(
    kind: str, item_id: int, current: dict[str, Any], text: dict[str, str]
) -> tuple[str, dict[str, Any], Any, Any]:
    """The tool call a correction form asks for, with the item's fields before and after it.

    Raises:
        InvalidArgumentError: a JSON field that does not parse, or a context that is not an object.
    """
    arguments: dict[str, Any]
    if kind == "decision":
        before = {k: current.get(k) for k in ("summary", "rationale", "implementation_details", "tags")}
        after = {
            "summary": text.get("summary", "").strip(),
            "rationale": text.get("rationale", "") or None,
            "implementation_details": text.get("implementation_details", "") or None,
            "tags": _tags(text.get("tags", "")),
        }
        arguments = {**after, "rationale": after["rationale"] or "", "decision_id": item_id}
        arguments["implementation_details"] = after["implementation_details"] or ""
        return "update_decision", arguments, before, after
    if kind == "progress":
        before = {"status": current["status"], "description": current["description"]}
        after = {"status": text.get("status", ""), "description": text.get("description", "")}
        return "update_progress", {"progress_id": item_id, **after}, before, after
    if kind == "system_pattern":
        before = {"description": current["description"], "tags": current.get("tags", [])}
        after = {"description": text.get("description", ""), "tags": _tags(text.get("tags", ""))}
        return "log_system_pattern", {"name": current["name"], **after}, before, after
    if kind == "custom_data":
        value = _json(text.get("value", ""), "value")
        arguments = {"category": current["category"], "key": current["key"], "value": value}
        return "log_custom_data", arguments, {"value": current["value"]}, {"value": value}
    content = _json(text.get("content", ""), "content")
    if not isinstance(content, dict):
        raise InvalidArgumentError('the context must be a JSON object, e.g. {"focus": "..."}')
    return f"update_{kind}", {"content": content}, current["content"], content


def _tags(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidArgumentError(f"{what} is not JSON ({exc}); fix it and save again") from None
