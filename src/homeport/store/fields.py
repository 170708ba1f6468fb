"""The fields of memory items, their types and size caps: one definition for tool arguments and imports.

The MCP tools annotate their arguments with these types (so a client sees the caps in the input
schema and an oversized argument is refused before anything runs); an import validates every
exported item with the `*Record` models built from the same types, so a file can carry nothing a
tool call could not. The store's writers check the caps too (`check_text`, `check_json`), which
covers batch writes and any caller that bypasses both.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from homeport.errors import InvalidItemError, ValueTooLargeError
from homeport.store._common import normalize_tags, utc_stamp

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_LABEL_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_SNIPPET_CHARS",
    "MAX_TEXT_CHARS",
    "MAX_TITLE_CHARS",
    "RECORDS",
    "Category",
    "ContextVersionRecord",
    "CustomDataRecord",
    "DecisionRecord",
    "ItemId",
    "JsonDocument",
    "JsonValue",
    "Key",
    "LinkRecord",
    "LongText",
    "Name",
    "PatternRecord",
    "ProgressRecord",
    "Relationship",
    "Stamp",
    "Status",
    "Tag",
    "Title",
    "check_json",
    "check_text",
]

# One line that names an item: a decision's summary, a pattern's name.
MAX_TITLE_CHARS = 1_000
# Free text: rationale, implementation details, descriptions.
MAX_TEXT_CHARS = 100_000
# Labels: status, relationship, category, key (the schema's column widths).
MAX_LABEL_CHARS = {"status": 64, "relationship": 100, "category": 200, "key": 500, "tag": 200, "name": 300}
# A JSON document or value (context content, custom data value), as compact UTF-8 JSON.
MAX_JSON_BYTES = 1_000_000
MAX_QUERY_CHARS = 1_000
MAX_SNIPPET_CHARS = 400


def check_text(value: str | None, name: str, limit: int) -> str | None:
    """Raises: ValueTooLargeError naming the field, its length and the limit."""
    if value is not None and len(value) > limit:
        raise ValueTooLargeError(
            f"{name} is {len(value):,} characters, over the limit of {limit:,}; shorten it or split it "
            "into several items"
        )
    return value


def check_json(value: Any, name: str) -> Any:
    """Raises: ValueTooLargeError naming the field, its size and the limit (compact UTF-8 JSON)."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidItemError(
            f"{name} is not JSON ({exc}); pass strings, numbers, booleans, null, lists or objects"
        ) from None
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_JSON_BYTES:
        raise ValueTooLargeError(
            f"{name} is {size:,} bytes of JSON, over the limit of {MAX_JSON_BYTES:,}; store large content "
            "as a file and keep a reference to it"
        )
    return value


def _json_cap(name: str) -> AfterValidator:
    def check(value: Any) -> Any:
        try:
            return check_json(value, name)
        except InvalidItemError as exc:
            raise ValueError(exc.message) from None  # pydantic reports ValueError with the field's location

    return AfterValidator(check)


def _stripped(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("is empty (or only spaces)")
    return value


def _tag_set(tags: list[str]) -> list[str]:
    try:
        clean = normalize_tags(tags)
    except InvalidItemError as exc:
        raise ValueError(exc.message) from None
    return sorted(clean, key=str.casefold)  # the order an export lists them in


def _stamp(value: str) -> str:
    try:
        return utc_stamp(value)
    except InvalidItemError as exc:  # pydantic reports a ValueError as this field's error
        raise ValueError(exc.message) from None


ItemId = Annotated[int, Field(ge=1, le=2**63 - 1)]
Title = Annotated[str, Field(max_length=MAX_TITLE_CHARS)]
LongText = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]
Status = Annotated[str, Field(max_length=MAX_LABEL_CHARS["status"])]
Relationship = Annotated[str, Field(max_length=MAX_LABEL_CHARS["relationship"])]
Category = Annotated[str, Field(max_length=MAX_LABEL_CHARS["category"])]
Key = Annotated[str, Field(max_length=MAX_LABEL_CHARS["key"])]
Tag = Annotated[str, Field(max_length=MAX_LABEL_CHARS["tag"])]
Name = Annotated[str, Field(max_length=MAX_LABEL_CHARS["name"])]
JsonValue = Annotated[Any, _json_cap("value")]
JsonDocument = Annotated[dict[str, Any], _json_cap("content")]
Stamp = Annotated[str, AfterValidator(_stamp)]
# A ULID (homeport.store.uids): 26 characters of Crockford's base 32, the first at most 7.
Uid = Annotated[str, Field(pattern=r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")]
# In records (imports), as the writers store them: trimmed and non-empty, tags de-duplicated and ordered.
_Trimmed = AfterValidator(_stripped)
_Tags = Annotated[list[Tag], AfterValidator(_tag_set)]
_ItemType = Literal["decision", "progress", "system_pattern", "custom_data", "product_context", "active_context"]


class _Record(BaseModel):
    # strict: "abc" is not a list of tags, "7" is not an id; forbid: a misspelt field is not dropped.
    model_config = ConfigDict(extra="forbid", strict=True)


class DecisionRecord(_Record):
    id: ItemId
    uid: Uid | None = None
    summary: Annotated[Title, _Trimmed]
    rationale: LongText | None = None
    implementation_details: LongText | None = None
    tags: _Tags = []
    created_at: Stamp
    updated_at: Stamp


class ProgressRecord(_Record):
    id: ItemId
    uid: Uid | None = None
    status: Annotated[Status, _Trimmed]
    description: Annotated[LongText, _Trimmed]
    parent_id: ItemId | None = None
    created_at: Stamp
    updated_at: Stamp


class PatternRecord(_Record):
    id: ItemId
    uid: Uid | None = None
    name: Annotated[Name, _Trimmed]
    description: Annotated[LongText, _Trimmed]
    tags: _Tags = []
    created_at: Stamp
    updated_at: Stamp


class CustomDataRecord(_Record):
    id: ItemId
    uid: Uid | None = None
    category: Annotated[Category, _Trimmed]
    key: Annotated[Key, _Trimmed]
    value: JsonValue
    created_at: Stamp
    updated_at: Stamp


class ContextVersionRecord(_Record):
    version: ItemId
    content: JsonDocument
    changed_at: Stamp


class LinkRecord(_Record):
    id: ItemId
    source_type: _ItemType
    source_id: ItemId
    target_type: _ItemType
    target_id: ItemId
    relationship: Annotated[Relationship, _Trimmed]
    description: LongText | None = None
    created_at: Stamp


# Export section -> the model of its items.
RECORDS: dict[str, type[_Record]] = {
    "decisions": DecisionRecord,
    "progress": ProgressRecord,
    "system_patterns": PatternRecord,
    "custom_data": CustomDataRecord,
    "product_context": ContextVersionRecord,
    "active_context": ContextVersionRecord,
    "links": LinkRecord,
}
