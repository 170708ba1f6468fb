"""The flags of `serve --own` and `status`, refused before anything starts when they do not fit."""

from __future__ import annotations

import json

from click.testing import CliRunner

from homeport.cli.main import cli


def test_own_needs_http(tmp_path):
    result = CliRunner().invoke(cli, ["serve", "--own", "--state-dir", str(tmp_path / "s")])
    assert result.exit_code == 2 and "--own needs --http" in result.output


def test_directories_without_own_are_refused(tmp_path):
    result = CliRunner().invoke(cli, ["serve", "--http", str(tmp_path)])
    assert result.exit_code == 2 and "go with --own" in result.output


def test_an_owned_directory_outside_the_allowed_roots_is_refused_and_nothing_registered(tmp_path):
    (tmp_path / "allowed").mkdir()
    (tmp_path / "other").mkdir()
    state = tmp_path / "s"
    args = ["serve", "--http", "--own", str(tmp_path / "other"), "--allow-root", str(tmp_path / "allowed")]
    result = CliRunner().invoke(cli, [*args, "--state-dir", str(state)])
    assert result.exit_code == 1 and "not inside the allowed roots" in result.output
    assert not (state / "registry.json").exists()


def test_status_of_an_empty_registry(tmp_path):
    result = CliRunner().invoke(cli, ["status", "--json", "--state-dir", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["instances"] == []
    plain = CliRunner().invoke(cli, ["status", "--state-dir", str(tmp_path / "s")])
    assert "no running instances" in plain.output
