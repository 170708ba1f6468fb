"""import_from(kind="memory-jsonl") on hostile files: too large, or nested too deep (issue 22, #7 and #20).

A 32 MiB memory.jsonl used to be read, scanned and imported whole (348 s, 945 MB RSS, holding a worker
while other workspaces waited); a line nested 100,000 levels deep came back as `internal_error`.
Both must be a refusal that names the cause, the limit and what to do, with nothing written.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from mcp import Client

pytestmark = pytest.mark.anyio
MIB = 1024 * 1024
MAX_FILE_BYTES = 1_000_000  # the cap of the markdown and basic-memory importers
MAX_DEPTH = 32  # lists and objects inside each other; the memory server writes 2


def _entity(n: int) -> str:
    record = {"type": "entity", "name": f"Service {n}", "entityType": "service", "observations": [f"runs job {n}"]}
    return json.dumps(record) + "\n"


def _write_jsonl(path: Path, size: int) -> None:
    """Valid entity lines, `size` bytes in all (the last line is padded with spaces)."""
    lines, total, n = [], 0, 0
    while total < size:
        line = _entity(n)
        lines.append(line)
        total += len(line)
        n += 1
    body = "".join(lines)[:size]
    path.write_text(body[: body.rfind("\n") + 1].ljust(size), encoding="utf-8")


async def _import(c: Client, root: Path, source: str = "memory.jsonl", **extra: object):
    return await c.call_tool("import_from", {"kind": "memory-jsonl", "source": source, "workspace": str(root), **extra})


async def test_a_32_mib_memory_jsonl_is_refused_naming_its_size_the_limit_and_what_to_do(server_factory, projects):
    root = projects["alpha"]
    _write_jsonl(root / "memory.jsonl", 32 * MIB)
    started = time.monotonic()
    async with Client(server_factory()) as c:
        r = await _import(c, root)
    elapsed = time.monotonic() - started
    assert r.is_error, "a 32 MiB memory.jsonl was imported"
    error = r.structured_content["error"]
    assert error["code"] == "invalid_item"
    assert f"{32 * MIB:,} bytes" in error["message"]  # its size
    assert f"{MAX_FILE_BYTES:,}" in error["message"]  # the limit
    assert "split" in error["message"]  # what to do
    assert not (root / ".homeport").exists()  # nothing written, not even the store
    assert elapsed < 30, f"refusing took {elapsed:.1f} s: the file was read before the size was checked"


async def test_a_file_over_the_limit_is_refused_before_its_text_is_read(server_factory, projects):
    # Past the limit the bytes are not UTF-8: a reader that reads it all fails on them instead.
    root = projects["alpha"]
    path = root / "memory.jsonl"
    _write_jsonl(path, MAX_FILE_BYTES)
    with path.open("ab") as handle:
        handle.write(b"\xff\xfe" * 10)
    async with Client(server_factory()) as c:
        r = await _import(c, root)
    assert r.structured_content["error"]["code"] == "invalid_item"
    assert f"over the limit of {MAX_FILE_BYTES:,} bytes" in r.structured_content["error"]["message"]


async def test_a_file_at_the_limit_is_still_imported(server_factory, projects):
    root = projects["alpha"]
    _write_jsonl(root / "memory.jsonl", MAX_FILE_BYTES)
    async with Client(server_factory()) as c:
        r = await _import(c, root, dry_run=True)
    assert not r.is_error, r.content[0].text
    assert r.structured_content["created"]["custom_data"] > 5000


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("[" * 100_000 + "]" * 100_000, id="a bare list"),
        pytest.param('{"a":' * 100_000 + "1" + "}" * 100_000, id="objects in objects"),
        pytest.param(
            '{"type": "entity", "name": "x", "entityType": "t", "observations": ' + "[" * 100_000 + "]" * 100_000 + "}",
            id="an entity's observations",
        ),
    ],
)
async def test_a_line_nested_100k_deep_is_refused_with_its_line_number_and_the_limit(server_factory, projects, line):
    root = projects["alpha"]
    (root / "memory.jsonl").write_text(_entity(1) + _entity(2) + line + "\n" + _entity(3), encoding="utf-8")
    async with Client(server_factory()) as c:
        r = await _import(c, root)
    assert r.is_error, "a line nested 100,000 deep was imported"
    error = r.structured_content["error"]
    assert error["code"] == "invalid_item", error
    assert "line 3" in error["message"] and "nested too deeply" in error["message"]
    assert f"limit of {MAX_DEPTH}" in error["message"]
    assert not (root / ".homeport").exists()


async def test_nesting_at_the_limit_is_only_a_skipped_line_and_brackets_inside_strings_do_not_count(
    server_factory, projects
):
    root = projects["alpha"]
    deep = "[" * MAX_DEPTH + "]" * MAX_DEPTH  # an array, not an entity: skipped with its reason
    brackets = {"type": "entity", "name": "Brackets", "entityType": "note", "observations": ["[" * 5000 + "{" * 5000]}
    (root / "memory.jsonl").write_text(deep + "\n" + json.dumps(brackets) + "\n", encoding="utf-8")
    async with Client(server_factory()) as c:
        r = await _import(c, root)
    assert not r.is_error, r.content[0].text
    assert r.structured_content["created"]["custom_data"] == 1
    assert [s["line"] for s in r.structured_content["skipped"]] == [1]
