"""Figures and tables the README and the docs show are the code's, not a copy that drifts; the README stays short."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
# The tools an agent gets, their groups and what their list costs: the reference's overview page.
TOOLS_PAGE = ROOT / "docs" / "reference" / "index.md"


def _tool_list_size_module():
    spec = importlib.util.spec_from_file_location("tool_list_size", ROOT / "bench" / "tool_list_size.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tool_list_size_table_is_what_the_bench_script_measures():
    bench = _tool_list_size_module()
    readme = TOOLS_PAGE.read_text(encoding="utf-8")
    rows = dict(
        (name, (int(count), int(chars.replace(",", ""))))
        for name, count, chars in re.findall(
            r"^\| (all|workspace|memory|files|db) \| (\d+) \| ([\d,]+) \|$", readme, re.M
        )
    )
    from homeport.server import TOOL_GROUPS

    measured = {"all": anyio.run(bench.size_of, tuple(TOOL_GROUPS))}
    for group in TOOL_GROUPS:
        measured[group] = anyio.run(bench.size_of, (group,))
    assert rows == measured


def test_the_docs_name_exactly_the_tools_that_take_no_workspace():
    from homeport.core import tools  # noqa: F401  (declares every tool)
    from homeport.core.catalog import CATALOG

    readme = TOOLS_PAGE.read_text(encoding="utf-8")
    sentence = readme.split("These take no `workspace`", 1)[1].split("(", 1)[0]
    named = set(re.findall(r"`(\w+)`", sentence))
    declared = {spec.name for spec in CATALOG.in_groups(CATALOG.groups()) if not spec.takes_workspace}
    assert named == declared


def _readme_commands() -> list[str]:
    """The two commands of the README's first code block, without their comments."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines()]


def test_the_readme_opens_with_an_install_and_serve_line_then_a_test_line_that_ci_runs_verbatim():
    serve, test = _readme_commands()
    assert "serve" in serve and "pytest" in test
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").rstrip("\n").splitlines()
    assert ci[-1] == test


def test_the_readme_first_lines_never_install_into_the_system_python():
    # Debian and Ubuntu refuse `pip install` outside a venv (externally-managed-environment).
    for command in _readme_commands():
        assert command.startswith("python3 -m venv .venv && .venv/bin/pip install "), command


def test_the_readme_is_at_most_150_lines_and_its_links_lead_to_files_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    targets = [t.split("#", 1)[0] for t in re.findall(r"\]\(([^)\s]+)\)", readme) if "://" not in t]
    assert targets and [t for t in targets if not (ROOT / t).exists()] == []


def test_the_readme_connects_each_client_with_homeport_setup():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for client in ("claude-code", "vscode", "cursor"):
        assert f"homeport setup {client}" in readme
