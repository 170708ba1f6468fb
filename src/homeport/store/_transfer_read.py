"""Reading an export back: every file parsed and every item validated before anything is written.

Each item must be a valid `homeport.store.fields` record (the types and caps of the tool
arguments); two items that would be written to one place, context versions that are not 1..n,
and (for a replace) sections with fewer items than the manifest counted are refused, naming the
file, the item (and Markdown line) and the field.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from homeport.errors import InvalidItemError
from homeport.store._markdown import parse_markdown
from homeport.store._transfer_files import read_file
from homeport.store.fields import RECORDS

__all__ = ["SECTIONS", "read_section", "read_section_file", "refuse_lost_items"]

# section -> text fields (rendered as Markdown); the rest of an item is carried as JSON metadata
SECTIONS: dict[str, tuple[str, ...]] = {
    "decisions": ("summary", "rationale", "implementation_details"),
    "progress": ("description",),
    "system_patterns": ("name", "description"),
    "custom_data": (),
    "product_context": (),
    "active_context": (),
    "links": ("description",),
}


def read_section(root: Path, source: Path, section: str, fmt: str) -> list[dict[str, Any]]:
    """The validated items of one section (none if its file is absent).

    Raises:
        InvalidItemError: an unreadable or malformed file, or an invalid item, named with its field.
    """
    path, items = read_section_file(root, source, section, fmt, SECTIONS[section], "items")
    valid = [_validate(path, section, index, line, item) for index, (line, item) in enumerate(items)]
    _refuse_duplicates(path, section, valid)
    return valid


def read_section_file(
    root: Path, source: Path, section: str, fmt: str, text_fields: tuple[str, ...], noun: str
) -> tuple[Path, list[tuple[int | None, Any]]]:
    """The file of one section of an export and its entries, each with its Markdown line (None in JSON);
    no entries when the file is absent. Items and history rows share this; each validates its own.

    Raises:
        InvalidItemError: the file cannot be read, or is not JSON holding a list / not parsable Markdown.
    """
    path = source / f"{section}.{'json' if fmt == 'json' else 'md'}"
    if not os.path.lexists(path):
        return path, []
    try:
        text = read_file(root, path)
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidItemError(f"cannot read {path}: {exc}; export again, or fix the file by hand") from None
    if fmt != "json":
        return path, [(line, entry) for line, entry in parse_markdown(str(path), text, section, text_fields)]
    try:
        loaded = json.loads(text)
    except ValueError as exc:
        raise InvalidItemError(f"{path} is not valid JSON: {exc}; export again, or fix the file by hand") from None
    if not isinstance(loaded, list):
        raise InvalidItemError(f"{path} holds a {type(loaded).__name__}, not a list of {noun}; export again")
    return path, [(None, entry) for entry in loaded]


def refuse_lost_items(source: Path, manifest: dict[str, Any], data: dict[str, list[dict[str, Any]]]) -> None:
    """A section with fewer items than the manifest counted lost some (a deleted file, a cut list); a
    replace would erase them from the memory. More items are a hand addition, and welcome.

    Raises:
        InvalidItemError: naming the section, the count exported and the count read.
    """
    counts = manifest.get("counts")
    if not isinstance(counts, dict):
        return
    for section, items in data.items():
        exported = counts.get(section)
        if isinstance(exported, int) and len(items) < exported:
            raise InvalidItemError(
                f"{source}: the manifest counts {exported} {section} but the files hold {len(items)}; a file or "
                "items were removed; export again, or lower the count in manifest.json if that was intended"
            )


def _validate(path: Path, section: str, index: int, line: int | None, item: Any) -> dict[str, Any]:
    where = f"{path} item {index}" + (f" (line {line})" if line else "")
    if not isinstance(item, dict):
        raise InvalidItemError(f"{where} is a {type(item).__name__}, not an object; nothing was imported")
    if isinstance(item.get("id"), int):
        where += f", id {item['id']}"
    try:
        record = RECORDS[section].model_validate(item)
    except ValidationError as exc:
        problems = "; ".join(
            f"field {'.'.join(str(p) for p in err['loc']) or '(item)'}: {_reason(err)}" for err in exc.errors()
        )
        raise InvalidItemError(f"{where}: {problems}; nothing was imported") from None
    try:  # the store keeps UTF-8 text: a lone surrogate such as \udcff from a JSON escape cannot be kept
        json.dumps(item, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidItemError(f"{where} holds text that is not valid Unicode ({exc.reason}); fix the file") from None
    return record.model_dump()


def _reason(err: Any) -> str:
    if err["type"] == "extra_forbidden":
        return "unknown field (misspelt, or from a newer Homeport)"
    if err["type"] == "missing":
        return "missing"
    return f"{err['msg']} (got {type(err['input']).__name__})"


def _refuse_duplicates(path: Path, section: str, items: list[dict[str, Any]]) -> None:
    """Two items the import would write to one place: the second would silently replace the first."""
    if section.endswith("_context"):
        versions = [i["version"] for i in items]
        if versions != list(range(1, len(versions) + 1)):
            raise InvalidItemError(
                f"{path}: versions {versions[:10]} are not 1, 2, 3... in order; a version was removed or "
                "edited; export again"
            )
        return
    keys: dict[str, Any] = {
        "decisions": lambda i: i["id"],
        "progress": lambda i: i["id"],
        "system_patterns": lambda i: i["name"].casefold(),
        "custom_data": lambda i: (i["category"], i["key"]),
        "links": lambda i: (i["source_type"], i["source_id"], i["target_type"], i["target_id"], i["relationship"]),
    }
    for key in (keys[section], lambda i: i["id"], lambda i: i.get("uid") or ("no uid", i["id"])):
        seen: dict[Any, int] = {}
        for index, item in enumerate(items):
            if key(item) in seen:
                raise InvalidItemError(
                    f"{path} items {seen[key(item)]} and {index} both write {key(item)!r}; keep one; "
                    "nothing was imported"
                )
            seen[key(item)] = index
