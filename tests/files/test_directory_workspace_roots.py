"""Workspace roots in the directory: each organization lists the directories its agents may use."""

from __future__ import annotations

from pathlib import Path

import pytest

from homeport.errors import ConfigError
from homeport.files.directory import Directory, DirectoryFile

EXAMPLE = """
[organizations.acme]
workspace_roots = ["/srv/acme"]
read_only_workspace_roots = ["/srv/shared"]

[organizations.acme.agents.ada]
"""


def test_roots_load_from_toml_and_survive_a_rewrite() -> None:
    d = Directory.from_toml(EXAMPLE)
    org = d.organization("acme")
    assert org.workspace_roots == ("/srv/acme",)
    assert org.read_only_workspace_roots == ("/srv/shared",)
    again = Directory.from_toml(d.to_toml())
    assert again.organization("acme") == org


def test_an_org_without_roots_has_none_and_its_toml_does_not_change() -> None:
    d = Directory.from_toml("[organizations.acme]\n")
    assert d.organization("acme").workspace_roots == ()
    assert "workspace_roots" not in d.to_toml()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('"/srv/acme"', "must be a list of strings"),
        ('["srv/acme"]', "not an absolute path"),
        ('["/srv/../etc"]', "'..'"),
        ('["/srv/a\\u0000b"]', "control characters"),
        ('["/srv/acme", "/srv/acme/"]', "listed twice"),
    ],
)
def test_invalid_roots_are_refused_naming_the_value(value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Directory.from_toml(f"[organizations.acme]\nworkspace_roots = {value}\n")


def test_a_root_both_read_write_and_read_only_is_refused() -> None:
    with pytest.raises(ConfigError, match="both"):
        Directory.from_toml(
            '[organizations.acme]\nworkspace_roots = ["/srv/a"]\nread_only_workspace_roots = ["/srv/a"]\n'
        )


def test_adding_and_removing_roots_edits_the_file(tmp_path: Path) -> None:
    f = DirectoryFile(tmp_path / "directory.toml")
    f.add_organization("acme")
    f.add_workspace_root("acme", "/srv/acme")
    f.add_workspace_root("acme", "/srv/shared", read_only=True)
    org = f.load().organization("acme")
    assert (org.workspace_roots, org.read_only_workspace_roots) == (("/srv/acme",), ("/srv/shared",))
    # Granting writes on a read-only root moves it.
    f.add_workspace_root("acme", "/srv/shared")
    org = f.load().organization("acme")
    assert (org.workspace_roots, org.read_only_workspace_roots) == (("/srv/acme", "/srv/shared"), ())
    f.remove_workspace_root("acme", "/srv/acme")
    assert f.load().organization("acme").workspace_roots == ("/srv/shared",)
    with pytest.raises(ConfigError, match="not a workspace root"):
        f.remove_workspace_root("acme", "/srv/acme")
    with pytest.raises(ConfigError, match="already"):
        f.add_workspace_root("acme", "/srv/shared")
    with pytest.raises(ConfigError, match="unknown organization"):
        f.add_workspace_root("nope", "/srv/x")
