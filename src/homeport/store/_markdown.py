"""The Markdown form of an export: rendered for people, parsed back line by line.

Each item is wrapped in HTML comments that carry its metadata, so the file reads as plain
Markdown and still imports every field:

    <!-- item {"_fields": ["summary"], "id": 1, "created_at": "...", "tags": ["db"]} -->
    ## Use SQLite WAL
    <!-- field summary -->
    Use SQLite WAL
    <!-- end summary -->
    <!-- end item -->

The parser reads one line at a time and refuses, with the line number, anything it cannot
account for: a marker out of place, a field opened and never closed, a field listed in
`_fields` but missing, a count in the front matter that does not match the items. A hand edit
that drops a marker therefore fails loudly instead of importing an item without that field.
"""

from __future__ import annotations

import json
from typing import Any

from homeport.errors import InvalidItemError
from homeport.store._common import dump_json

__all__ = ["parse_markdown", "to_markdown"]

_OPEN_ITEM, _END_ITEM = "<!-- item ", "<!-- end item -->"
_OPEN_FIELD, _END_FIELD, _CLOSE = "<!-- field ", "<!-- end ", " -->"


def to_markdown(section: str, items: list[dict[str, Any]], text_fields: tuple[str, ...]) -> str:
    lines = ["---", f"type: {section}", f"count: {len(items)}", "---", "", f"# {section.replace('_', ' ').title()}", ""]
    for item in items:
        meta: dict[str, Any] = {k: v for k, v in item.items() if k not in text_fields}
        fenced = {}
        for field in text_fields:
            value = item.get(field)
            if value is None:
                continue
            if "<!--" in value:  # would confuse the item and field markers: carry it in the metadata
                meta.setdefault("_text", {})[field] = value
            else:
                fenced[field] = value
        if fenced:
            meta["_fields"] = list(fenced)
        # < and > escaped inside the JSON, so no value can close the comment early.
        lines.append(f"{_OPEN_ITEM}{_comment_safe(dump_json(meta))}{_CLOSE}")
        lines.append(f"## {_heading(section, item)}")
        for field, value in fenced.items():
            lines += [f"{_OPEN_FIELD}{field}{_CLOSE}", value, f"{_END_FIELD}{field}{_CLOSE}"]
        if section in ("custom_data", "product_context", "active_context"):
            shown = item["value"] if section == "custom_data" else item["content"]
            lines += ["```json", _comment_safe(json.dumps(shown, indent=2, ensure_ascii=False, sort_keys=True)), "```"]
        lines += [_END_ITEM, ""]
    return "\n".join(lines)


def parse_markdown(
    name: str, text: str, section: str, text_fields: tuple[str, ...]
) -> list[tuple[int, dict[str, Any]]]:
    """The items of one Markdown export file, each with the line it starts on.

    Raises:
        InvalidItemError: naming the file and line of the first thing that is out of place.
    """
    lines = text.split("\n")  # only \n: a \r or U+2028 inside a value is part of the value
    count = _front_matter(name, lines, section)
    items: list[tuple[int, dict[str, Any]]] = []
    item: dict[str, Any] | None = None
    item_line = 0
    field: str | None = None
    field_line = 0
    value: list[str] = []

    def fail(number: int, problem: str) -> InvalidItemError:
        return InvalidItemError(f"{name} line {number}: {problem}; export again, or fix the file by hand")

    for number, line in enumerate(lines, start=1):
        if field is not None:
            if line == f"{_END_FIELD}{field}{_CLOSE}":
                assert item is not None
                item[field] = "\n".join(value)
                field, value = None, []
            elif line.startswith("<!--"):
                raise fail(number, f"field {field} opened on line {field_line} is not closed (<!-- end {field} -->)")
            else:
                value.append(line)
            continue
        if line.startswith(_OPEN_ITEM) and line.endswith(_CLOSE):
            if item is not None:
                raise fail(number, f"the item opened on line {item_line} is not closed ({_END_ITEM})")
            item, item_line = _meta(line, fail(number, "the item's metadata is not a JSON object")), number
        elif line.startswith(_OPEN_FIELD) and line.endswith(_CLOSE):
            field = line[len(_OPEN_FIELD) : -len(_CLOSE)]
            if item is None:
                raise fail(number, f"field {field} is outside an item")
            if field not in text_fields:
                raise fail(number, f"unknown field {field!r}; {section} has the text fields {', '.join(text_fields)}")
            if field in item:
                raise fail(number, f"field {field} appears twice in the item opened on line {item_line}")
            field_line = number
        elif line == _END_ITEM:
            if item is None:
                raise fail(number, f"{_END_ITEM} without an item")
            missing = [f for f in item.pop("_fields", []) if f not in item]
            if missing:
                raise fail(number, f"the item opened on line {item_line} lost its field(s) {', '.join(missing)}")
            items.append((item_line, item))
            item = None
        elif line.startswith("<!--"):
            raise fail(number, f"unexpected marker {line[:60]!r}")
    if field is not None:
        raise fail(field_line, f"field {field} is never closed (<!-- end {field} -->)")
    if item is not None:
        raise fail(item_line, f"the item is never closed ({_END_ITEM})")
    if count is not None and count != len(items):
        raise InvalidItemError(
            f"{name}: the front matter says count: {count} but the file holds {len(items)} item(s); "
            "an item was removed or damaged; export again, or fix the count by hand"
        )
    return items


def _front_matter(name: str, lines: list[str], section: str) -> int | None:
    """The `count:` of the front matter, if the file has one; its `type:` must be this section."""
    if not lines or lines[0] != "---":
        return None
    try:
        end = lines.index("---", 1)
    except ValueError:
        raise InvalidItemError(f"{name} line 1: the front matter is never closed (---)") from None
    fields: dict[str, str] = {}
    for line in lines[1:end]:
        key, _, value = line.partition(": ")
        fields[key] = value
    if fields.get("type", section) != section:
        raise InvalidItemError(f"{name} line 2: type {fields['type']!r} is not {section}; is it the right file?")
    count = fields.get("count")
    if count is None:
        return None
    if not count.isdigit():
        raise InvalidItemError(f"{name}: the front matter count {count!r} is not a number")
    return int(count)


def _meta(line: str, error: InvalidItemError) -> dict[str, Any]:
    try:
        meta = json.loads(line[len(_OPEN_ITEM) : -len(_CLOSE)])
    except ValueError:
        raise error from None
    if not isinstance(meta, dict):
        raise error
    meta.update(meta.pop("_text", {}))
    return meta


def _comment_safe(text: str) -> str:
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def _heading(section: str, item: dict[str, Any]) -> str:
    one_line = {
        "decisions": lambda i: f"{i['summary']} (decision {i['id']})",
        "progress": lambda i: f"[{i['status']}] {i['description']} (progress {i['id']})",
        "system_patterns": lambda i: f"{i['name']} (pattern {i['id']})",
        "custom_data": lambda i: f"{i['category']} / {i['key']}",
        "product_context": lambda i: f"Version {i['version']}",
        "active_context": lambda i: f"Version {i['version']}",
        "links": lambda i: (
            f"{i['source_type']} {i['source_id']} {i['relationship']} {i['target_type']} {i['target_id']}"
        ),
    }.get(section, lambda i: " ".join(f"{k} {i[k]}" for k in ("item_type", "item_id", "version", "id") if k in i))(item)
    # Display only (import reads the metadata and fields): entities keep it from closing a comment.
    return " ".join(one_line.split()).replace("<", "&lt;").replace(">", "&gt;")
