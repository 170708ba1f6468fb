"""The directory file: loading, validation messages, edits and their atomic rewrite."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pytest

from homeport.errors import ConfigError, FileAreaError
from homeport.files import directory as directory_module
from homeport.files.directory import AgentRef, Directory, DirectoryFile, FolderOwner

EXAMPLE = """
[organizations.acme]
leadership = ["ada"]
teams = ["platform", "data"]

[organizations.acme.agents.ada]
team = "platform"

[organizations.acme.agents.bob]
team = "platform"

[organizations.acme.agents.carl]

[organizations.globex]
teams = ["platform"]

[organizations.globex.agents.gus]
team = "platform"
"""


@pytest.fixture
def directory() -> Directory:
    return Directory.from_toml(EXAMPLE)


def test_an_agent_is_looked_up_with_its_org_team_and_leadership(directory: Directory) -> None:
    assert directory.agent("ada") == AgentRef("ada", "acme", "platform", True)
    assert directory.agent("bob") == AgentRef("bob", "acme", "platform", False)
    assert directory.agent("carl") == AgentRef("carl", "acme", None, False)
    assert directory.agent("gus") == AgentRef("gus", "globex", "platform", False)


def test_folder_owners_are_found_by_org_and_folder_id(directory: Directory) -> None:
    assert directory.folder_owner("acme", "bob") == FolderOwner("acme", "bob", "agent", "platform")
    assert directory.folder_owner("acme", "carl") == FolderOwner("acme", "carl", "agent", None)
    assert directory.folder_owner("acme", "data") == FolderOwner("acme", "data", "team", "data")


def test_a_folder_of_another_organization_is_not_found_in_this_one(directory: Directory) -> None:
    with pytest.raises(FileAreaError, match=r"'gus'.*'acme'"):
        directory.folder_owner("acme", "gus")


def test_the_org_snapshot_lists_agents_with_teams_and_the_teams(directory: Directory) -> None:
    assert directory.agents_of("acme") == {"ada": "platform", "bob": "platform", "carl": None}
    assert directory.teams_of("acme") == ["platform", "data"]
    assert directory.organizations == ("acme", "globex")


def test_unknown_agent_and_unknown_org_are_errors_naming_them(directory: Directory) -> None:
    with pytest.raises(ConfigError, match="'zed'"):
        directory.agent("zed")
    with pytest.raises(ConfigError, match=r"unknown organization 'initech'.*acme, globex"):
        directory.folder_owner("initech", "ada")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[organizations.acme.agents.ada]\nteam = 'ghost'\n", "unknown team 'ghost'"),
        (
            "[organizations.a.agents.ada]\n[organizations.b.agents.ada]\n",
            "agent 'ada' is in organizations 'a' and 'b'",
        ),
        (
            "[organizations.acme]\nteams = ['ada']\n[organizations.acme.agents.ada]\n",
            "'ada' is both an agent and a team",
        ),
        ("[organizations.acme]\nteams = ['x', 'x']\n", "team 'x' is listed twice"),
        ("[organizations.acme]\nleadership = ['nobody']\n", "unknown agent 'nobody'"),
        (
            "[organizations.acme]\nleadership = ['ada', 'ada']\n[organizations.acme.agents.ada]\n",
            "listed twice",
        ),
        ('[organizations.acme.agents."../etc"]\n', "agent id '../etc' is not valid"),
        ('[organizations."a b"]\n', "organization id 'a b' is not valid"),
        ("[organizations.acme]\nteams = 'platform'\n", "organizations.acme.teams must be a list of strings"),
        ("[organizations.acme]\nmembers = []\n", "unknown key 'members' in organizations.acme"),
        ("[organizations.acme.agents.ada]\nteam = 3\n", "team must be a string"),
        ("[orgs.acme]\n", "unknown key 'orgs' in the top level"),
        ("[organizations.acme\n", "not valid TOML"),
    ],
)
def test_an_invalid_directory_is_refused_with_a_message_naming_the_bad_value(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        Directory.from_toml(text, source="dir.toml")
    assert info.value.message.startswith("dir.toml")


def test_the_format_documented_in_the_module_docstring_loads() -> None:
    doc = directory_module.__doc__ or ""
    example = doc.split("Format::")[1].split("Rules,")[0]
    loaded = Directory.from_toml(example)
    assert loaded.agent("ada") == AgentRef("ada", "acme", "platform", True)
    assert loaded.agent("carl").team is None


def test_a_snapshot_cannot_be_changed_through_what_it_hands_out(directory: Directory) -> None:
    with pytest.raises(TypeError):
        directory.organization("acme").agents["eve"] = None  # type: ignore[index]
    directory.agents_of("acme")["eve"] = None
    with pytest.raises(ConfigError):
        directory.agent("eve")


def test_a_missing_directory_file_is_an_error_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist") as info:
        DirectoryFile(tmp_path / "directory.toml").load()
    assert str(tmp_path) in info.value.message


def test_edits_create_the_file_and_round_trip_through_toml(tmp_path: Path) -> None:
    file = DirectoryFile(tmp_path / "directory.toml")
    file.add_organization("acme")
    file.add_team("acme", "platform")
    file.add_agent("acme", "ada", team="platform")
    file.add_agent("acme", "carl")
    returned = file.set_leadership("acme", ["ada"])

    loaded = file.load()
    assert loaded.agent("ada") == AgentRef("ada", "acme", "platform", True)
    assert loaded.agent("carl") == AgentRef("carl", "acme", None, False)
    assert loaded.to_toml() == returned.to_toml()
    assert Directory.from_toml(loaded.to_toml()).to_toml() == loaded.to_toml()


def test_the_example_survives_a_rewrite(directory: Directory) -> None:
    again = Directory.from_toml(directory.to_toml())
    for agent in ("ada", "bob", "carl", "gus"):
        assert again.agent(agent) == directory.agent(agent)
    assert sorted(again.teams_of("acme")) == sorted(directory.teams_of("acme"))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda f: f.add_agent("acme", "gus"), "agent 'gus' exists already in organization 'globex'"),
        (lambda f: f.add_agent("acme", "dora", team="ghost"), "unknown team 'ghost'"),
        (lambda f: f.add_agent("initech", "dora"), "unknown organization 'initech'"),
        (lambda f: f.add_agent("acme", "platform"), "'platform' is both an agent and a team"),
        (lambda f: f.add_team("acme", "data"), "team 'data' exists already"),
        (lambda f: f.add_team("acme", "carl"), "'carl' is both an agent and a team"),
        (lambda f: f.set_leadership("acme", ["gus"]), "unknown agent 'gus'"),
        (lambda f: f.add_organization("acme"), "organization 'acme' exists already"),
        (lambda f: f.add_agent("acme", "bad/id"), "agent id 'bad/id' is not valid"),
    ],
)
def test_an_invalid_edit_raises_and_leaves_the_file_unchanged(tmp_path: Path, edit, message: str) -> None:
    path = tmp_path / "directory.toml"
    path.write_text(EXAMPLE, encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(message)):
        edit(DirectoryFile(path))
    assert path.read_text(encoding="utf-8") == EXAMPLE


def test_an_edit_writes_through_a_temp_file_and_rename(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "directory.toml"
    path.write_text(EXAMPLE, encoding="utf-8")
    replaced: list[tuple[str, str]] = []
    real_replace = os.replace

    def spy(src, dst, *args, **kwargs):
        # At the moment of the rename the old file is still whole: readers never see a mix.
        assert Directory.from_toml(Path(dst).read_text(encoding="utf-8")).agents_of("acme") == {
            "ada": "platform",
            "bob": "platform",
            "carl": None,
        }
        replaced.append((os.fspath(src), os.fspath(dst)))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", spy)
    DirectoryFile(path).add_agent("acme", "dora")
    assert [dst for _, dst in replaced] == [str(path)]
    assert Path(replaced[0][0]).parent == tmp_path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["directory.toml", "directory.toml.lock"]
    assert DirectoryFile(path).load().agent("dora").org == "acme"


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "directory.toml"
    path.write_text(EXAMPLE, encoding="utf-8")

    def broken_replace(src, dst, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(ConfigError, match="No space left on device"):
        DirectoryFile(path).add_agent("acme", "dora")
    assert path.read_text(encoding="utf-8") == EXAMPLE
    assert sorted(p.name for p in tmp_path.iterdir()) == ["directory.toml", "directory.toml.lock"]


def test_concurrent_edits_from_threads_are_all_kept(tmp_path: Path) -> None:
    path = tmp_path / "directory.toml"
    DirectoryFile(path).add_organization("acme")
    errors: list[BaseException] = []

    def add(i: int) -> None:
        try:
            DirectoryFile(path).add_agent("acme", f"agent{i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    assert sorted(DirectoryFile(path).load().agents_of("acme")) == sorted(f"agent{i}" for i in range(8))


def test_exports_are_pinned() -> None:
    assert sorted(directory_module.__all__) == [
        "AgentRef",
        "Directory",
        "DirectoryFile",
        "FolderOwner",
        "Organization",
        "check_display_name",
        "check_id",
        "check_workspace_root",
    ]
