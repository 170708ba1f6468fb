"""A project's key: from `.homeport/config.toml`, else its git remote origin, the same in every clone and
worktree (real `git`); a token in the config is refused; `homeport where` shows the key and its source."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from homeport.cli.main import cli
from homeport.errors import ConfigError
from homeport.workspace.project import project_key, team_config

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def repo(path: Path, origin: str | None) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    if origin is not None:
        git(path, "remote", "add", "origin", origin)
    return path.resolve()


def write_config(root: Path, text: str) -> None:
    (root / ".homeport").mkdir(exist_ok=True)
    (root / ".homeport" / "config.toml").write_text(text, encoding="utf-8")


def test_clones_with_different_remote_spellings_share_one_key(tmp_path: Path) -> None:
    https = repo(tmp_path / "laptop" / "api", "https://ada:ghp_secret@github.com/acme/api.git")
    scp = repo(tmp_path / "desktop" / "api-copy", "git@github.com:acme/api.git")
    ssh = repo(tmp_path / "ci" / "x", "ssh://git@github.com/acme/api")
    found = [project_key(root) for root in (https, scp, ssh)]
    assert {f.key for f in found} == {"github.com/acme/api"}
    assert {f.source for f in found} == {"git_remote"}
    assert "ghp_secret" not in found[0].detail and "ada" not in found[0].detail


def test_a_git_worktree_has_the_key_of_its_main_checkout(tmp_path: Path) -> None:
    main = repo(tmp_path / "api", "git@github.com:acme/api.git")
    (main / "README").write_text("x", encoding="utf-8")
    git(main, "add", "README")
    git(main, "commit", "-qm", "first")
    git(main, "worktree", "add", "-q", str(tmp_path / "api-feature"), "-b", "feature")
    worktree = (tmp_path / "api-feature").resolve()
    assert (worktree / ".git").is_file()  # a worktree's .git names its git directory
    assert project_key(worktree).key == project_key(main).key == "github.com/acme/api"


def test_the_config_key_wins_over_the_remote(tmp_path: Path) -> None:
    root = repo(tmp_path / "api", "git@github.com:acme/api.git")
    write_config(root, 'project = "acme/api"\n')
    found = project_key(root)
    assert (found.key, found.source) == ("acme/api", "config")


def test_an_invalid_config_key_is_refused_with_its_reason(tmp_path: Path) -> None:
    root = repo(tmp_path / "api", None)
    write_config(root, 'project = "../etc"\n')
    with pytest.raises(ConfigError, match=r"'\.\.' segment"):
        project_key(root)


def test_a_project_without_config_or_origin_has_no_key_and_says_why(tmp_path: Path) -> None:
    root = repo(tmp_path / "api", None)
    found = project_key(root)
    assert found.key is None and found.source == "none" and "no git remote origin" in found.detail


def test_a_token_in_the_repository_config_is_refused(tmp_path: Path) -> None:
    root = repo(tmp_path / "api", None)
    write_config(root, '[team]\nurl = "https://mem.example.com"\ntoken = "hp_live_abc"\n')
    with pytest.raises(ConfigError, match="never be kept in the repository") as caught:
        team_config(root)
    assert "hp_live_abc" not in caught.value.message and "token_env" in caught.value.message


def test_team_config_is_read_and_checked(tmp_path: Path) -> None:
    root = repo(tmp_path / "api", None)
    write_config(root, '[team]\nurl = "https://mem.example.com/"\ntoken_env = "HOMEPORT_TEAM_TOKEN"\n')
    team = team_config(root)
    assert team is not None and (team.url, team.token_env) == ("https://mem.example.com", "HOMEPORT_TEAM_TOKEN")
    write_config(root, '[team]\nurl = "ftp://mem.example.com"\n')
    with pytest.raises(ConfigError, match="http"):
        team_config(root)


def test_homeport_where_shows_the_key_and_where_it_came_from(tmp_path: Path, shell_home) -> None:
    root = repo(tmp_path / "api", "https://ada:ghp_secret@github.com/acme/api.git")
    runner = CliRunner()
    shown = runner.invoke(cli, ["where", str(root), "--json"])
    assert shown.exit_code == 0, shown.output
    report = json.loads(shown.output)
    assert report["project_key"] == "github.com/acme/api"
    assert report["project_key_source"] == "git_remote"
    assert "ghp_secret" not in shown.output
    write_config(root, 'project = "acme/api"\n[team]\nurl = "https://mem.example.com"\n')
    text = runner.invoke(cli, ["where", str(root)])
    assert text.exit_code == 0, text.output
    assert "acme/api" in text.output and "https://mem.example.com" in text.output


def test_a_git_config_with_bare_keys_and_other_remotes_still_gives_origin(tmp_path: Path) -> None:
    root = tmp_path / "api"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text(
        "[core]\n\tbare = false\n\tfsmonitor\n"
        '[remote "upstream"]\n\turl = git@github.com:other/api.git\n'
        '[remote "origin"]\n\turl = https://github.com/acme/api.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n',
        encoding="utf-8",
    )
    assert project_key(root.resolve()).key == "github.com/acme/api"
