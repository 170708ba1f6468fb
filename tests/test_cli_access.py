"""`homeport directory` and `homeport tokens` as a person types them."""

from __future__ import annotations

import json
import stat

from click.testing import CliRunner

from homeport.cli import cli
from homeport.files.tokens import TokenStore


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_directory_is_built_and_shown(tmp_path):
    data = str(tmp_path)
    assert run("directory", "add-org", "acme", "--data-dir", data).exit_code == 0
    assert run("directory", "add-team", "acme", "platform", "--data-dir", data).exit_code == 0
    assert run("directory", "add-agent", "acme", "ada", "--team", "platform", "--data-dir", data).exit_code == 0
    assert run("directory", "set-leadership", "acme", "ada", "--data-dir", data).exit_code == 0
    shown = json.loads(run("directory", "show", "--json", "--data-dir", data).output)
    assert shown["members"] == [{"org": "acme", "agent": "ada", "team": "platform", "leadership": True}]


def test_directory_errors_are_one_line_naming_the_value(tmp_path):
    run("directory", "add-org", "acme", "--data-dir", str(tmp_path))
    result = run("directory", "add-agent", "acme", "ada", "--team", "nosuchteam", "--data-dir", str(tmp_path))
    assert result.exit_code == 1 and "nosuchteam" in result.output and "Traceback" not in result.output


def test_tokens_are_shown_once_stored_hashed_and_revocable(tmp_path):
    data = str(tmp_path)
    run("directory", "add-org", "acme", "--data-dir", data)
    run("directory", "add-agent", "acme", "ada", "--data-dir", data)
    result = CliRunner().invoke(cli, ["tokens", "add", "ada", "--data-dir", data])
    token = result.output.splitlines()[0]
    assert token.startswith("hp_")
    store_file = tmp_path / "tokens.json"
    assert token not in store_file.read_text()
    assert stat.S_IMODE(store_file.stat().st_mode) == 0o600
    assert TokenStore(store_file).verify(token) == "ada"
    listed = json.loads(run("tokens", "list", "--json", "--data-dir", data).output)
    assert [e["agent_id"] for e in listed] == ["ada"]
    assert run("tokens", "revoke", listed[0]["token_id"], "--data-dir", data).exit_code == 0
    assert TokenStore(store_file).verify(token) is None


def test_tokens_for_agents_outside_the_directory_are_refused(tmp_path):
    run("directory", "add-org", "acme", "--data-dir", str(tmp_path))
    result = run("tokens", "add", "ghost", "--data-dir", str(tmp_path))
    assert result.exit_code == 1 and "ghost" in result.output


def test_serve_refuses_auth_over_stdio(tmp_path):
    result = run("serve", "--auth", "--data-dir", str(tmp_path))
    assert result.exit_code == 2 and "--http" in result.output


def test_workspace_roots_are_granted_shown_and_removed(tmp_path, monkeypatch):
    data = str(tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    run("directory", "add-org", "acme", "--data-dir", data)
    assert run("directory", "add-workspace-root", "acme", "srv/acme", "--data-dir", data).exit_code == 0
    added = run("directory", "add-workspace-root", "acme", "/srv/shared", "--read-only", "--data-dir", data)
    assert added.exit_code == 0 and "read-only" in added.output
    shown = json.loads(run("directory", "show", "--json", "--data-dir", data).output)
    # A relative DIR is taken from where the command runs.
    assert shown["workspace_roots"] == {
        "acme": {"read_write": [str(tmp_path / "srv" / "acme")], "read_only": ["/srv/shared"]}
    }
    assert run("directory", "remove-workspace-root", "acme", "/srv/shared", "--data-dir", data).exit_code == 0
    shown = json.loads(run("directory", "show", "--json", "--data-dir", data).output)
    assert shown["workspace_roots"]["acme"]["read_only"] == []


def test_a_workspace_root_for_an_unknown_org_is_one_line_naming_it(tmp_path):
    result = run("directory", "add-workspace-root", "nope", "/srv/x", "--data-dir", str(tmp_path))
    assert result.exit_code == 1 and "nope" in result.output and "Traceback" not in result.output
