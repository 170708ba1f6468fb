"""Characters of the tools/list JSON an agent receives, in full and per --tools group.

Every tool's schema costs the agent context on every turn; this is the number to watch.
Run: python3 bench/tool_list_size.py
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from mcp import Client

from homeport.core import ServeSettings, build_runtime
from homeport.server import TOOL_GROUPS, build_server


async def size_of(groups: tuple[str, ...]) -> tuple[int, int]:
    runtime = build_runtime(ServeSettings(cwd=Path("/"), tool_groups=groups))
    try:
        async with Client(build_server(runtime)) as client:
            tools = (await client.list_tools()).tools
            payload = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
            return len(tools), len(json.dumps(payload, separators=(",", ":")))
    finally:
        runtime.close()


async def main() -> None:
    rows = [("all", *(await size_of(tuple(TOOL_GROUPS))))]
    for group in TOOL_GROUPS:
        rows.append((group, *(await size_of((group,)))))
    print("| --tools | tools | characters of tools/list JSON |")
    print("|---|---:|---:|")
    for name, count, chars in rows:
        print(f"| {name} | {count} | {chars:,} |")


if __name__ == "__main__":
    anyio.run(main)
