"""The reference pages (docs/reference/*.md) are the code's: regenerated in memory, they equal what is committed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "docs" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return _generator().render()


@pytest.mark.parametrize("name", ["tools.md", "cli.md", "config.md", "errors.md"])
def test_the_committed_reference_page_is_what_the_code_generates(pages, name):
    committed = (ROOT / "docs" / "reference" / name).read_text(encoding="utf-8")
    assert committed == pages[name], f"docs/reference/{name} is stale: run python docs/gen_reference.py"


def test_every_tool_command_setting_and_error_is_on_its_page(pages):
    import dataclasses

    from homeport import errors
    from homeport.cli.main import COMMANDS
    from homeport.core import tools  # noqa: F401
    from homeport.core.catalog import CATALOG, COMPAT_GROUPS, GROUPS
    from homeport.core.settings import ServeSettings

    for spec in CATALOG.in_groups((*GROUPS, *COMPAT_GROUPS)):
        assert f"### `{spec.name}`" in pages["tools.md"], spec.name
    for name in COMMANDS:
        assert f"## `homeport {name}`" in pages["cli.md"], name
    for field in dataclasses.fields(ServeSettings):
        assert f"| `{field.name}` |" in pages["config.md"], field.name
    for name in errors.__all__:
        cls = getattr(errors, name)
        if isinstance(cls, type) and issubclass(cls, errors.HomeportError):
            assert f"| `{cls.code}` | `{name}` |" in pages["errors.md"], name


def test_the_config_keys_on_the_page_are_the_keys_the_readers_accept():
    from homeport.projectdb import discovery
    from homeport.workspace import project

    keys = _generator().PROJECT_KEYS
    assert set(keys["database"]) == set(discovery._SETTING_KEYS)
    assert set(keys["team"]) == set(project._TEAM_KEYS)


def test_a_tool_argument_shows_its_limits_and_default(pages):
    section = pages["tools.md"].split("### `log_decision`", 1)[1].split("\n### ", 1)[0]
    row = next(line for line in section.splitlines() if line.startswith("| `summary` |"))
    assert "| yes |" in row and "at most 1000 characters" in row
    section = pages["tools.md"].split("### `get_context`", 1)[1].split("\n### ", 1)[0]
    assert "| `budget_tokens` |" in section and "`2000`" in section
