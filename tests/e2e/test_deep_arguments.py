"""Issue 22 #20 (part): arguments nested too deeply are refused with a code and the limit, before the
tool runs, on every transport; never "Error executing tool NAME" after a write went through.

Over stdio and 2025-era HTTP the SDK's JSON parser already refuses a message nested about 200 levels
deep (a JSON-RPC parse error); a 2026-07-28 request over HTTP is parsed by Python's `json`, which goes
to about 1,000, so a value nested 300 levels reached the tool, was written, and then its result could
not be serialized.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from homeport.core import ServeSettings, build_runtime
from homeport.server import build_server

from ._serving import serving
from ._support import make_project, store_file

pytestmark = pytest.mark.anyio

ERA_2026 = "2026-07-28"
META = {
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    "io.modelcontextprotocol/protocolVersion": ERA_2026,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def nested(depth: int, shape: str) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value] if shape == "lists" else {"a": value}
    return value


def _post_2026(base: str, project: Path, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "log_custom_data", "arguments": arguments, "_meta": META},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": ERA_2026,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "log_custom_data",
        "X-Workspace-Id": str(project),
    }
    answer = httpx2.post(f"{base}/mcp", content=json.dumps(body), headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()["result"]
    return result


def _stored(project: Path) -> int:
    if not store_file(project).exists():
        return 0
    with sqlite3.connect(store_file(project)) as db:
        return int(db.execute("SELECT COUNT(*) FROM custom_data").fetchone()[0])


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["lists", "objects"])
def test_a_2026_http_call_nested_300_levels_is_refused_naming_the_depth_and_the_limit(
    tmp_path: Path, shape: str
) -> None:
    allow = tmp_path / "allow"
    project = make_project(allow / "p")
    with serving(["--allow-root", str(allow)], cwd=allow, log=tmp_path / "log") as served:
        result = _post_2026(served.base, project, {"category": "c", "key": "k", "value": nested(300, shape)})
        shallow = _post_2026(served.base, project, {"category": "c", "key": "k2", "value": nested(20, shape)})
    assert result["isError"], result
    error = result["structuredContent"]["error"]
    assert error["code"] == "invalid_argument", error
    assert "Error executing tool" not in result["content"][0]["text"]
    assert "value" in error["message"] and "300" in error["message"] and "64" in error["message"], error
    assert not shallow["isError"], shallow
    assert _stored(project) == 1  # the refused one wrote nothing


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_in_memory_call_nested_too_deeply_is_refused_before_it_runs(tmp_path: Path, mode: str) -> None:
    project = make_project(tmp_path / "p")
    runtime = build_runtime(ServeSettings(cwd=project, home=tmp_path / "home"))
    try:
        async with Client(build_server(runtime), mode=mode) as client:  # type: ignore[arg-type]
            result = await client.call_tool(
                "log_custom_data", {"category": "c", "key": "k", "value": nested(100, "objects")}
            )
    finally:
        runtime.close()
    assert result.is_error
    assert result.structured_content["error"]["code"] == "invalid_argument"
    assert "100 levels" in result.structured_content["error"]["message"]
    assert _stored(project) == 0
