"""The `homeport` group loads a command's module when it runs, yet lists every command and completes them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from homeport import __version__
from homeport.cli.main import COMMANDS, cli


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_row_of_the_table_imports_the_command_it_names(name):
    command = cli.load(name)
    assert isinstance(command, click.Command) and command.name == name


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_help_line_is_one_short_sentence(name):
    line = COMMANDS[name].short_help
    assert line.endswith(".") and "\n" not in line and len(line) <= 60


def test_help_lists_every_command_with_its_line():
    out = CliRunner().invoke(cli, ["--help"], terminal_width=120).output
    for name, row in COMMANDS.items():
        assert any(line.split() == [name, *row.short_help.split()] for line in out.splitlines()), name


def test_version_is_the_package_version():
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and result.output == f"homeport, version {__version__}\n"


def test_an_unknown_command_is_a_usage_error():
    result = CliRunner().invoke(cli, ["decision"])
    assert result.exit_code == 2 and "No such command 'decision'" in result.output


def _complete(words: str) -> list[str]:
    env = {
        **os.environ,
        "_HOMEPORT_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
    }
    code = "from homeport.cli import main; main()"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_shell_completion_completes_command_names():
    assert _complete("homeport d") == [f"plain,{n}" for n in sorted(COMMANDS) if n.startswith("d")]


def test_shell_completion_completes_a_lazy_commands_subcommands():
    assert "plain,list" in _complete("homeport decisions l")


def test_shell_completion_script_is_printed_for_bash():
    env = {**os.environ, "_HOMEPORT_COMPLETE": "bash_source"}
    code = "from homeport.cli import main; main()"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert "_homeport_completion" in out and "complete " in out


def test_a_memory_command_runs_in_a_fresh_process(tmp_path):
    # In-process tests share a process where the whole server is already imported; a new process
    # loads only what the command imports, so a missing import shows up only here.
    (tmp_path / "app" / ".git").mkdir(parents=True)
    env = {**os.environ, "HOME": str(tmp_path), "HOMEPORT_STATE_DIR": str(tmp_path / "state")}
    env.pop("HOMEPORT_WORKSPACE", None)
    env.pop("CLAUDE_PROJECT_DIR", None)
    code = "from homeport.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "decisions", "list", "--json"],
        cwd=tmp_path / "app",
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["decisions"] == []


def test_commands_other_than_serve_get_every_tool_group_without_loading_the_catalog():
    from homeport.cli._compose import serve_settings
    from homeport.server import TOOL_GROUPS

    settings = serve_settings(transport="stdio", workspace=None, allow_roots=(), require_explicit_workspace=False)
    assert settings.tool_groups == TOOL_GROUPS
