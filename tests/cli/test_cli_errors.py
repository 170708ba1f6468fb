"""Errors at the shell speak CLI: commands and flags, not MCP tools and arguments; exit 1 or 2, never a traceback."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from hypothesis import assume, given
from hypothesis import strategies as st

import homeport
from homeport.cli import cli
from homeport.cli._compose import CLI_WORDS, cli_message
from homeport.cli._lazy import HelpfulGroup

GITHUB_TOKEN = "ghp_" + "x7Gh2kLmQ9" * 3 + "AbCdEf"


@pytest.fixture
def runner(shell_home, monkeypatch, tmp_path) -> CliRunner:
    monkeypatch.setenv("HOMEPORT_STATE_DIR", str(tmp_path / "state"))
    return CliRunner()


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root.resolve()


def ok(runner: CliRunner, *args: str) -> dict:
    result = runner.invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def fails(runner: CliRunner, *args: str, says: tuple[str, ...], never: tuple[str, ...]) -> str:
    result = runner.invoke(cli, list(args))
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for words in says:
        assert words in lines[0], lines[0]
    for words in never:
        assert words not in lines[0], lines[0]
    return lines[0]


# -- one test per row of CLI_WORDS, through the real command ------------------------------------


def test_deleting_a_parent_names_cascade_and_progress_update(runner, project):
    parent = ok(runner, "progress", "add", "TODO", "ship")["id"]
    ok(runner, "progress", "add", "TODO", "test", "--parent", str(parent))
    fails(
        runner,
        *("progress", "delete", str(parent)),
        says=("pass --cascade", "homeport progress update ID --parent"),
        never=("cascade=true", "update_progress"),
    )


def test_a_secret_names_the_allow_secrets_flag(runner, project):
    fails(
        runner,
        *("decisions", "add", f"token {GITHUB_TOKEN}"),
        says=("run it again with --allow-secrets",),
        never=("allow_secrets=true", "shell:"),
    )


def test_emptying_a_context_names_allow_empty_and_context_patch(runner, project):
    ok(runner, "context", "set", "product", '{"goal": "shop"}')
    fails(
        runner,
        *("context", "set", "product", "{}"),
        says=("pass --allow-empty", "homeport context patch"),
        never=("allow_empty=true", "use patch"),
    )


def test_a_replace_import_of_nothing_names_allow_empty(runner, project):
    ok(runner, "export", "--output", "empty-export")  # the memory is empty yet
    ok(runner, "decisions", "add", "keep me")
    fails(
        runner,
        *("import", "--input", "empty-export", "--mode", "replace", "--yes"),
        says=("pass --allow-empty",),
        never=("allow_empty=true", "CLI:"),
    )


def test_a_cycle_on_merge_import_names_the_mode_flag():
    message = "parents would form a cycle (1 -> 2 -> 1) ...; fix parent_id in the export, or import with mode=replace"
    assert cli_message(message).endswith("or import with --mode replace")


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (("decisions", "delete", "99"), "homeport decisions list"),
        (("progress", "update", "99", "--status", "DONE"), "homeport progress list"),
        (("patterns", "delete", "99"), "homeport patterns list"),
        (("data", "delete", "cat", "key"), "homeport data get"),
        (("history", "product_context", "--version", "99"), "homeport history"),
    ],
)
def test_a_missing_item_names_the_command_that_lists_them(runner, project, args, command):
    ok(runner, "context", "set", "product", '{"goal": "shop"}')
    tool = {
        "homeport decisions list": "get_decisions",
        "homeport progress list": "get_progress",
        "homeport patterns list": "get_system_patterns",
        "homeport data get": "get_custom_data",
        "homeport history": "get_item_history",
    }[command]
    fails(runner, *args, says=(f"`{command}`",), never=(f" {tool}",))


def test_an_explicit_workspace_requirement_names_the_w_flag(runner, project):
    fails(
        runner,
        *("decisions", "add", "x", "--require-explicit-workspace"),
        says=("pass -w/--workspace DIR",),
        never=("use_workspace", "X-Workspace-Id", "workspace argument"),
    )


def test_no_workspace_names_the_w_flag_and_not_the_http_ways(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path / "home")
    fails(
        runner,
        "where",
        says=("Pass -w/--workspace DIR (or set HOMEPORT_WORKSPACE), or run the command inside the project.", "Seen:"),
        never=("use_workspace", "X-Workspace-Id", "?project_path=", "workspace argument"),
    )


def test_every_phrase_of_the_table_is_still_said_by_the_lower_layers():
    # A phrase no module says any more is a row that quietly stopped working.
    src = Path(homeport.__file__).parent
    said = " ".join(" ".join(_string_literals(path)) for path in src.rglob("*.py") if path.parent.name != "cli")
    for tool_words, _ in CLI_WORDS:
        assert tool_words.split(" (")[0].split(";")[0] in said, tool_words


def _string_literals(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


# -- the rewrite itself ----------------------------------------------------------------------------

PHRASES = st.sampled_from([tool_words for tool_words, _ in CLI_WORDS])
PLAIN = st.text(alphabet=st.characters(blacklist_characters="=_`(;?"), max_size=30)


@given(st.lists(st.one_of(PLAIN, PHRASES), max_size=6))
def test_the_rewrite_leaves_no_tool_phrase(parts):
    out = cli_message(" ".join(parts))
    assert not any(tool_words in out for tool_words, _ in CLI_WORDS)


@given(PLAIN)
def test_text_without_tool_phrases_is_unchanged(text):
    assume(not any(tool_words in text for tool_words, _ in CLI_WORDS))
    assert cli_message(text) == text


# -- exit status -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["decisions", "add"],  # a missing argument
        ["decisions", "list", "--no-such-flag"],
        ["progress", "delete", "one"],  # not an integer
        ["context", "set", "product", "[1]"],  # JSON, but not an object
        ["no-such-command"],
    ],
)
def test_usage_errors_exit_2(runner, project, args):
    result = runner.invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_domain_errors_exit_1_and_success_exits_0(runner, project):
    assert runner.invoke(cli, ["decisions", "list"]).exit_code == 0
    assert runner.invoke(cli, ["decisions", "delete", "7"]).exit_code == 1


def _groups(group: click.Group, path: tuple[str, ...] = ("homeport",)) -> list[tuple[tuple[str, ...], click.Group]]:
    ctx = click.Context(group)
    found = [(path, group)]
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        if isinstance(sub, click.Group):
            found += _groups(sub, (*path, name))
    return found


def test_every_command_group_answers_a_mistyped_command_with_what_it_has():
    """A new group cannot forget: each is a HelpfulGroup, lazy or not."""
    for path, group in _groups(cli):
        assert isinstance(group, HelpfulGroup), " ".join(path)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("decision", "list"), "Did you mean 'decisions'?"),  # a lazy command, imported only when used
        (("serach", "wal"), "Did you mean 'search'?"),
        (("decisions", "log", "Use WAL"), "The commands of homeport decisions are add, delete, list, update;"),
        (("log_decision", "Use WAL"), "Did you mean 'decisions'?"),
        (("tokns",), "Did you mean 'tokens'"),
        (("nothing_like_it",), "The commands of homeport are access, activity, batch,"),
    ],
)
def test_a_mistyped_command_is_answered_with_the_nearest_one_or_the_list(runner, args, says):
    result = runner.invoke(cli, list(args), prog_name="homeport")
    assert result.exit_code == 2, result.output
    assert f"No such command '{args[0] if args[0] != 'decisions' else args[1]}'." in result.output
    assert says in result.output, result.output
