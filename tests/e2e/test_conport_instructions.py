"""A ConPort user's custom instructions, used unchanged, against Homeport serving ConPort's tool names.

A scripted agent (tests/e2e/_conport_agent.py) follows an instruction file in ConPort's format: every
tool call it names, in order, with placeholders filled as an agent would. Run over a real stdio server
(`serve --tools workspace,conport`) in both protocol eras. The file in tests/fixtures names every one of
ConPort's tools with the published strategies' argument forms; CONPORT_INSTRUCTIONS=FILE runs yours.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ._conport_agent import follow, steps_of
from ._support import make_project, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

OURS = Path(__file__).resolve().parents[1] / "fixtures" / "conport" / "instructions" / "homeport_as_conport.yaml"
FILES = [OURS] + [Path(p) for p in os.environ.get("CONPORT_INSTRUCTIONS", "").split(os.pathsep) if p]


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


def conport_tools() -> set[str]:
    """ConPort's tool names, as its server lists them (the snapshot in tests/fixtures/conport/tools.json)."""
    tools = json.loads((OURS.parents[1] / "tools.json").read_text())
    return {t["name"] for t in (tools if isinstance(tools, list) else tools["tools"])}


def test_the_instruction_file_names_every_conport_tool() -> None:
    assert {tool for tool, _ in steps_of(OURS.read_text())} == conport_tools()


@pytest.mark.parametrize("file", FILES, ids=lambda p: p.name)
async def test_every_call_of_a_conport_instruction_file_works_unchanged(tmp_path: Path, mode: str, file: Path) -> None:
    project = make_project(tmp_path / "shop")
    async with stdio_client(cwd=project, mode=mode, args=("--tools", "workspace,conport")) as client:

        async def call(tool: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
            result = await client.call_tool(tool, arguments)
            text = "\n".join(getattr(part, "text", "") for part in result.content)
            return result.is_error, (text if result.is_error else result.structured_content)

        outcomes = await follow(file.read_text(), call, str(project), conport_tools())
    failed = [(o.step.tool, o.step.arguments, o.said) for o in outcomes if o.failed]
    assert failed == [], "\n".join(f"{t} {a} -> {s}" for t, a, s in failed)
    assert len(outcomes) >= (30 if file == OURS else 10)
