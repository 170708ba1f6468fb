"""`homeport access check` as a person types it, and the `serve --auth` command lines old and new."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from homeport.cli import cli
from homeport.cli.serve import serve

RULES = """
[[tools]]
name = "reviewers"
who = "group:reviewers"
allow = ["workspace", "get_decisions"]

[[workspaces]]
name = "acme"
who = ["ada", "group:reviewers"]
paths = ["{root}/**"]
access = "write"

[[workspaces]]
name = "acme docs"
who = "*"
paths = ["{root}/docs"]
access = "read"
"""


@pytest.fixture
def rules(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "docs").mkdir()
    path = tmp_path / "rules.toml"
    path.write_text(RULES.format(root=tmp_path.resolve()))
    return path


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, list(args), env=env)


def test_access_check_explains_an_allowed_call_and_exits_0(rules, tmp_path):
    result = run("access", "check", "ada", str(tmp_path / "app"), "--access-rules", str(rules))
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"ada may read {tmp_path.resolve()}/app")
    assert "workspaces rule 1 'acme'" in result.output


def test_access_check_names_the_tool_allowlist_that_refuses_and_exits_1(rules, tmp_path):
    args = ["access", "check", "rita", str(tmp_path / "app"), "--tool", "log_decision", "--group", "reviewers"]
    result = run(*args, "--access-rules", str(rules), "--json")
    assert result.exit_code == 1
    shown = json.loads(result.output)
    assert shown["allowed"] is False and shown["action"] == "write"
    assert shown["steps"] == [
        {
            "step": "tool",
            "allowed": False,
            "rules": [f"tools rule 1 'reviewers' of {rules}"],
            "why": shown["steps"][0]["why"],
        }
    ]
    assert "'log_decision'" in shown["steps"][0]["why"]


def test_access_check_says_a_write_to_a_read_only_workspace_is_refused_by_the_more_specific_rule(rules, tmp_path):
    docs = str(tmp_path / "docs")
    result = run("access", "check", "ada", docs, "--tool", "log_decision", "--access-rules", str(rules))
    assert result.exit_code == 1
    assert "may not write" in result.output and "'acme docs'" in result.output and "read-only" in result.output


def test_access_check_refuses_a_broken_rules_file_in_one_line(tmp_path):
    bad = tmp_path / "rules.toml"
    bad.write_text("[[workspaces]]\nwho='a'\npaths='/x'\naccess='admin'\n")
    result = run("access", "check", "ada", str(tmp_path), "--access-rules", str(bad))
    assert result.exit_code == 1
    assert "access must be one of none, read, write" in result.output and "Traceback" not in result.output


def _params(*args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    runner = CliRunner()
    with runner.isolation(env=env):
        return serve.make_context("serve", list(args)).params


@pytest.mark.parametrize(
    ("args", "auth", "own_dirs"),
    [
        (["--http", "--auth", "--data-dir", "d"], "tokens", ()),  # the command line before --auth took a value
        (["--http", "--auth"], "tokens", ()),
        (["--http", "--own", "--auth", "/srv/app"], "tokens", ("/srv/app",)),
        (["--http", "--auth", "tokens"], "tokens", ()),
        (["--http", "--auth=jwt"], "jwt", ()),
        (["--http", "--auth", "jwt", "/srv/app"], "jwt", ("/srv/app",)),
        (["--http"], None, ()),
    ],
)
def test_auth_takes_a_method_and_alone_still_means_tokens(args, auth, own_dirs):
    params = _params(*args)
    assert params["auth"] == auth
    assert params["own_dirs"] == own_dirs


@pytest.mark.parametrize(("value", "auth"), [("1", "tokens"), ("true", "tokens"), ("jwt", "jwt"), ("0", None)])
def test_homeport_auth_keeps_its_switch_values(value, auth):
    assert _params("--http", env={"HOMEPORT_AUTH": value})["auth"] == auth


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--http", "--auth", "jwt"], "--auth jwt needs --jwks-url URL and --issuer ISS"),
        (["--http", "--jwks-url", "http://x/jwks"], "apply to --auth jwt"),
        (["--http", "--access-rules", "rules.toml"], "--access-rules needs --auth"),
        (["--access-rules", "rules.toml"], "--access-rules over stdio applies to the agent named with --agent"),
        (["--http", "--auth=oauth"], "'oauth' is not an auth method"),
    ],
)
def test_serve_refuses_auth_flags_that_do_not_fit(args, said):
    result = run("serve", *args)
    assert result.exit_code == 2
    assert said in result.output
