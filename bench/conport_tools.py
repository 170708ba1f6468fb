"""Write ConPort's own tools/list, as a real ConPort server answers it, to tests/fixtures/conport/tools.json.

The conport tool group (`homeport.core.tools.compat_conport`) is written from it, and
tests/server/test_compat_conport.py compares the group's names and required arguments with it on
every run (and with a live ConPort when one is importable). ConPort goes in a venv of its own, since
its dependencies (fastmcp, torch, chromadb) are not Homeport's:

    python3 -m venv /tmp/conport-venv && /tmp/conport-venv/bin/pip install context-portal-mcp
    .venv/bin/python bench/conport_tools.py /tmp/conport-venv/bin/conport-mcp

It starts `conport-mcp --mode stdio` in a scratch directory, lists its tools over stdio, and keeps
for each its name, required arguments, argument names and result shape (output schema).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "conport" / "tools.json"


async def conport_tools(command: str) -> list[dict[str, Any]]:
    """ConPort's tools as its server lists them: name, required, arguments, result."""
    with tempfile.TemporaryDirectory() as scratch:
        params = StdioServerParameters(
            command=command, args=["--mode", "stdio", "--workspace_id", scratch], cwd=scratch
        )
        async with Client(params, mode="legacy") as client:  # type: ignore[arg-type]
            listed = (await client.list_tools()).tools
    out = []
    for tool in listed:
        schema = tool.input_schema or {}
        result = tool.output_schema or {}
        out.append(
            {
                "name": tool.name,
                "required": sorted(schema.get("required", [])),
                "arguments": list(schema.get("properties", {})),
                "result": "list" if result.get("x-fastmcp-wrap-result") else "object",
            }
        )
    return sorted(out, key=lambda t: t["name"])


def main() -> None:
    command = sys.argv[1] if len(sys.argv) > 1 else "conport-mcp"
    tools = anyio.run(conport_tools, command)
    FIXTURE.write_text(json.dumps({"source": "context-portal-mcp 0.3.13", "tools": tools}, indent=1) + "\n")
    print(f"{len(tools)} tools -> {FIXTURE}")


if __name__ == "__main__":
    main()
