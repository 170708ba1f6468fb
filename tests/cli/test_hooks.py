"""`homeport hooks`: a SessionStart hook merged into Claude Code's settings, then run as Claude Code runs it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from homeport.cli import cli
from homeport.cli.hooks import (
    DEFAULT_TASK,
    _read_settings,
    add_session_hook,
    context_command,
    homeport_executable,
    is_homeport_hook,
    remove_session_hooks,
)
from homeport.errors import ConfigError

OURS = context_command("/opt/venv/bin/homeport", DEFAULT_TASK, 2000)


@pytest.fixture
def home(shell_home) -> Path:
    return shell_home


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def session_hooks(settings: dict) -> list[dict]:
    return [h for g in settings.get("hooks", {}).get("SessionStart", []) for h in g["hooks"]]


# -- the settings document -----------------------------------------------------------------------

_json = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2))
_other_hook = st.builds(
    lambda cmd: {"type": "command", "command": cmd}, st.sampled_from(["echo hi", "./start.sh", "homeport where"])
)
_group = st.builds(
    lambda matcher, hooks: {"matcher": matcher, "hooks": hooks},
    st.sampled_from(["", "startup", "resume"]),
    st.lists(_other_hook, min_size=1, max_size=2),
)
_hooks_table = st.dictionaries(
    st.sampled_from(["SessionStart", "PreToolUse", "Stop"]), st.lists(_group, min_size=1, max_size=2), min_size=1
)
_settings = st.fixed_dictionaries({}, optional={"model": _json, "env": _json, "hooks": _hooks_table})


@given(_settings)
def test_installing_twice_adds_one_hook_and_keeps_everything_else(settings):
    once = add_session_hook(settings, OURS)
    twice = add_session_hook(once, OURS)
    assert twice == once
    assert [h["command"] for h in session_hooks(once) if is_homeport_hook(h)] == [OURS]
    assert {k: v for k, v in once.items() if k != "hooks"} == {k: v for k, v in settings.items() if k != "hooks"}


@given(_settings)
def test_uninstalling_gives_back_the_settings_as_they_were(settings):
    assert remove_session_hooks(add_session_hook(settings, OURS)) == settings


@given(_settings, st.sampled_from(["/old/venv/bin/homeport", "/home/ada/.local/bin/homeport"]))
def test_installing_from_another_installation_replaces_the_hook(settings, old_executable):
    old = add_session_hook(settings, context_command(old_executable, "old task", 500))
    assert [h["command"] for h in session_hooks(add_session_hook(old, OURS)) if is_homeport_hook(h)] == [OURS]


def test_only_homeport_context_commands_count_as_ours():
    assert is_homeport_hook({"command": OURS})
    assert is_homeport_hook({"command": "'/path with space/homeport' context --task x --budget 9"})
    assert not is_homeport_hook({"command": "homeport where"})
    assert not is_homeport_hook({"command": "echo homeport context --task"})
    assert not is_homeport_hook({"command": "unbalanced 'quote"})
    assert not is_homeport_hook("homeport context --task x")


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"hooks": []}', '{"hooks": {"SessionStart": {}}}'])
def test_a_malformed_settings_file_is_a_config_error_naming_it(tmp_path, text):
    path = tmp_path / "settings.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        add_session_hook(_read_settings(path)[0], OURS, path)
    assert caught.value.code == "config_error"
    assert str(path) in caught.value.message


# -- the commands --------------------------------------------------------------------------------


def test_install_merges_into_user_settings_and_keeps_a_backup(home, project):
    path = home / ".claude" / "settings.json"
    path.parent.mkdir()
    original = {"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}
    path.write_text(json.dumps(original))

    assert run("hooks", "install", "claude-code").exit_code == 0
    assert run("hooks", "install", "claude-code").exit_code == 0

    settings = json.loads(path.read_text())
    assert settings["model"] == "opus" and settings["hooks"]["Stop"] == original["hooks"]["Stop"]
    (hook,) = session_hooks(settings)
    assert hook["command"].startswith(homeport_executable() + " context --task ")
    assert os.path.isabs(homeport_executable())
    assert json.loads((home / ".claude" / "settings.json.bak").read_text()) == original


def test_a_malformed_settings_file_is_refused_and_left_alone(home, project):
    path = home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"model": "opus",}')
    result = CliRunner().invoke(cli, ["hooks", "install", "claude-code"])
    assert result.exit_code == 1
    assert str(path) in result.output
    assert path.read_text() == '{"model": "opus",}'
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.json"]


def test_dry_run_writes_nothing(home, project):
    result = run("hooks", "install", "claude-code", "--dry-run")
    assert result.exit_code == 0 and "SessionStart" in result.output
    assert not (home / ".claude").exists()


def test_project_scope_writes_the_project_settings_from_a_subdirectory(home, project, monkeypatch):
    (project / "api").mkdir()
    monkeypatch.chdir(project / "api")
    assert run("hooks", "install", "claude-code", "--scope", "project").exit_code == 0
    assert len(session_hooks(json.loads((project / ".claude" / "settings.json").read_text()))) == 1
    assert not (home / ".claude").exists()


def test_uninstall_removes_only_the_homeport_hook(home, project):
    path = home / ".claude" / "settings.json"
    path.parent.mkdir()
    mine = {"matcher": "startup", "hooks": [{"type": "command", "command": "echo mine"}]}
    path.write_text(json.dumps({"hooks": {"SessionStart": [mine]}}))
    run("hooks", "install", "claude-code")
    assert run("hooks", "uninstall", "claude-code").exit_code == 0
    assert json.loads(path.read_text()) == {"hooks": {"SessionStart": [mine]}}
    assert "no Homeport hook" in run("hooks", "uninstall", "claude-code").output


def _seed_memory(project: Path) -> None:
    assert run("context", "set", "product", '{"goal": "a shop that sells tea"}').exit_code == 0
    assert run("decisions", "add", "Use SQLite in WAL mode").exit_code == 0


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPORT_") and k != "CLAUDE_PROJECT_DIR"}
    return {**env, "HOME": str(home), "PATH": "/usr/bin:/bin", **extra}


def test_the_installed_hook_prints_the_project_context_as_claude_code_runs_it(home, project, tmp_path):
    _seed_memory(project)
    run("hooks", "install", "claude-code")
    (hook,) = session_hooks(json.loads((home / ".claude" / "settings.json").read_text()))
    # Claude Code runs the command through a shell, with CLAUDE_PROJECT_DIR set, from wherever it was
    # started, and without the virtual environment on PATH.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run(
        hook["command"],
        shell=True,
        cwd=elsewhere,
        env=_env(home, CLAUDE_PROJECT_DIR=str(project)),
        input='{"hook_event_name": "SessionStart", "source": "startup"}',
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert f"Workspace {project}" in done.stdout
    assert "goal: a shop that sells tea" in done.stdout
    assert "Use SQLite in WAL mode" in done.stdout


def test_the_gemini_snippet_prints_the_json_gemini_cli_reads(home, project):
    _seed_memory(project)
    snippet = run("hooks", "show", "gemini-cli").output
    settings = json.loads(snippet[snippet.index("{") :])
    command = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    done = subprocess.run(
        command, shell=True, cwd=project, env=_env(home), capture_output=True, text=True, timeout=60, check=True
    )
    assert "Use SQLite in WAL mode" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("client", ["claude-code", "cursor", "vscode", "gemini-cli", "codex"])
def test_every_snippet_names_the_absolute_executable(home, project, client):
    output = run("hooks", "show", client).output
    assert homeport_executable() in output
    assert client == "claude-code" or "Not checked" in output


@pytest.mark.parametrize("module", ["hooks", "doctor"])
def test_the_hook_and_doctor_modules_import_only_light_modules_at_load(module):
    # Start-up time: the server stack, SQLAlchemy and rich load inside the command that needs them.
    import ast

    import homeport.cli

    tree = ast.parse((Path(homeport.cli.__file__).parent / f"{module}.py").read_text(encoding="utf-8"))
    top = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            top.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            top.add(node.module)
    light = {"__future__", "json", "os", "shlex", "shutil", "sys", "pathlib", "typing", "dataclasses", "click"}
    assert top <= light | {"homeport.cli._lazy"}  # the group class, loaded by `homeport` itself already
