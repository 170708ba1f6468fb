"""Every call takes one path: `decide` then `perform`, the same steps in the same order, whatever the adapter
(MCP over each era, the shell, the dashboard) and whatever the configuration (stdio, HTTP, --read-only)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import anyio
import pytest
from _tool_samples import sample_arguments
from mcp import Client

from homeport.core import pipeline as pipeline_module
from homeport.core import tools as _tools  # noqa: F401  (declares every tool)
from homeport.core.catalog import CATALOG, DASHBOARD
from homeport.core.pipeline import PERFORM_STEPS, STEPS, CallPipeline, LocalRequest
from homeport.errors import HomeportError
from homeport.server import build_server

ALL_STEPS = [*STEPS, *PERFORM_STEPS]


def test_the_step_order_is_the_documented_one():
    assert STEPS == ("validate", "read_only", "allowlist", "secrets", "resolve", "access", "route")
    assert PERFORM_STEPS == ("open", "run", "record", "shape")
    doc = pipeline_module.__doc__ or ""
    positions = [doc.index(f"\n      {step} ") for step in ALL_STEPS]
    assert positions == sorted(positions), "the module docstring lists the steps in another order"


class Recorder:
    """Every Route the pipeline makes, in order: what each call passed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.routes: list[Any] = []
        original = pipeline_module.Route
        routes = self.routes

        class Recorded(original):  # type: ignore[misc, valid-type]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                routes.append(self)

        monkeypatch.setattr(pipeline_module, "Route", Recorded)

    def last(self) -> list[str]:
        assert self.routes, "the call made no Route: it did not go through decide"
        return list(self.routes[-1].steps)


def decided(steps: list[str]) -> list[str]:
    """The deciding steps a call passed: the same for every adapter (what perform then meets depends on the
    memory's state, which earlier calls of the walk changed)."""
    return [step for step in steps if step in STEPS]


def _check_prefix(steps: list[str], tool: str) -> None:
    assert steps == ALL_STEPS[: len(steps)], f"{tool}: {steps}"
    if "open" in steps:  # it was performed: every deciding step ran first
        assert steps[: len(STEPS)] == list(STEPS), tool


def _agents(tmp_path: Path) -> dict[str, Any]:
    from homeport.files.directory import DirectoryFile

    d = DirectoryFile(tmp_path / "data" / "directory.toml")
    d.add_organization("acme")
    d.add_agent("acme", "ada")
    return {"agent": "ada", "data_dir": tmp_path / "data", "directory_file": d.path}


@pytest.mark.parametrize("configuration", ["stdio", "http", "read_only"])
def test_every_tool_passes_the_same_steps_from_mcp_the_shell_and_the_dashboard(
    configuration, runtime_factory, projects, tmp_path, monkeypatch
):
    recorder = Recorder(monkeypatch)
    root = projects["alpha"]
    overrides: dict[str, Any] = {"workspace": str(root), **_agents(tmp_path)}
    if configuration == "http":
        overrides.update(transport="http", allow_roots=(tmp_path,))
    if configuration == "read_only":
        overrides["read_only"] = True
    runtime = runtime_factory(**overrides)
    server = build_server(runtime)
    pipeline = CallPipeline(runtime)
    listed = [n for n in sorted(CATALOG._specs) if CATALOG[n].group != DASHBOARD]

    async def through_mcp() -> dict[str, list[str]]:
        seen: dict[str, list[str]] = {}
        for mode in ("auto", "legacy"):
            async with Client(server, mode=mode) as c:
                for name in listed:
                    recorder.routes.clear()
                    answer = await c.call_tool(name, sample_arguments(CATALOG[name]))
                    assert recorder.routes, f"{name} made no Route: {answer.content}"
                    steps = recorder.last()
                    _check_prefix(steps, name)
                    assert decided(seen.setdefault(name, steps)) == decided(steps), f"{name}: the eras differ"
        return seen

    async def through_the_dashboard() -> dict[str, list[str]]:
        seen: dict[str, list[str]] = {}
        for name in sorted(CATALOG._specs):
            recorder.routes.clear()
            with contextlib.suppress(HomeportError):
                await pipeline.call(CATALOG[name], sample_arguments(CATALOG[name]), LocalRequest(agent="ada"))
            seen[name] = recorder.last()
            _check_prefix(seen[name], name)
        return seen

    mcp = anyio.run(through_mcp)
    dashboard = anyio.run(through_the_dashboard)
    for name in sorted(CATALOG._specs):
        recorder.routes.clear()
        with contextlib.suppress(HomeportError):
            pipeline.call_blocking(CATALOG[name], sample_arguments(CATALOG[name]), LocalRequest(agent="ada"))
        shell = recorder.last()
        _check_prefix(shell, name)
        assert decided(dashboard[name]) == decided(shell), name
        if name in mcp:
            assert decided(mcp[name]) == decided(shell), name
    performed = [n for n in listed if "open" in mcp[n]]
    assert performed, "no tool was performed in this configuration: the test proves nothing"
