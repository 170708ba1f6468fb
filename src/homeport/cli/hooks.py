"""`homeport hooks`: start an agent's session with the project's context.

`homeport hooks install claude-code` adds a SessionStart hook to Claude Code's settings that runs

    /abs/path/to/homeport context --task "..." --budget N

whose standard output Claude Code adds to the session's context. The command resolves the
project as `homeport serve` does over stdio (--workspace / HOMEPORT_WORKSPACE, then
CLAUDE_PROJECT_DIR, which Claude Code sets for hooks and MCP servers alike, then the current
directory), so the hook and the MCP tools always speak of the same project. The executable is
named by its absolute path because an editor starts hooks without the virtual environment on PATH.

The settings file is merged, never replaced: everything else in it is kept, a hook of ours
already there is replaced in place (installing twice leaves one), a file that is not a JSON
object is refused with nothing written, and the previous file is kept as `settings.json.bak`.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from homeport.cli._lazy import HelpfulGroup

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_TASK",
    "SESSION_START_MATCHER",
    "add_session_hook",
    "context_command",
    "homeport_executable",
    "hooks",
    "is_homeport_hook",
    "remove_session_hooks",
    "snippet",
]

DEFAULT_TASK = "session start: goals, current focus, recent decisions and open work"
DEFAULT_BUDGET = 2000
# New sessions, /clear and compaction start without the context; a resumed session still has it.
SESSION_START_MATCHER = "startup|clear|compact"
HOOK_TIMEOUT_SECONDS = 30
_EVENT = "SessionStart"
_EXECUTABLE_NAMES = ("homeport", "homeport.exe")

Settings = dict[str, Any]


# -- the settings document, as pure functions ----------------------------------------------------


def is_homeport_hook(hook: Any) -> bool:
    """Whether a hook entry is one `homeport hooks install` wrote: it runs `homeport context --task`."""
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    try:
        argv = shlex.split(hook["command"])
    except ValueError:
        return False
    return (
        len(argv) >= 2 and os.path.basename(argv[0]) in _EXECUTABLE_NAMES and argv[1] == "context" and "--task" in argv
    )


def _session_groups(settings: Settings, path: Path) -> list[Any]:
    """The SessionStart list of `settings` (not copied), checked for the shape Claude Code expects.

    Raises:
        ConfigError: `hooks` is not an object or `hooks.SessionStart` is not a list.
    """
    from homeport.errors import ConfigError

    hooks_table = settings.get("hooks", {})
    if not isinstance(hooks_table, dict):
        raise ConfigError(f'{path}: "hooks" is {type(hooks_table).__name__}, not an object; fix it by hand first')
    groups = hooks_table.get(_EVENT, [])
    if not isinstance(groups, list):
        raise ConfigError(f'{path}: "hooks.{_EVENT}" is {type(groups).__name__}, not a list; fix it by hand first')
    return groups


def remove_session_hooks(settings: Settings, path: Path = Path("settings.json")) -> Settings:
    """`settings` without the SessionStart hooks Homeport installed; groups and tables left empty by that go too.

    Raises:
        ConfigError: see `_session_groups`.
    """
    groups = _session_groups(settings, path)
    kept: list[Any] = []
    changed = False
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(inner, list) or not any(is_homeport_hook(h) for h in inner):
            kept.append(group)
            continue
        changed = True
        rest = [h for h in inner if not is_homeport_hook(h)]
        if rest:
            kept.append({**group, "hooks": rest})
    if not changed:
        return settings
    result = dict(settings)
    hooks_table = dict(result.get("hooks", {}))
    if kept:
        hooks_table[_EVENT] = kept
    else:
        hooks_table.pop(_EVENT, None)
    if hooks_table:
        result["hooks"] = hooks_table
    else:
        result.pop("hooks", None)
    return result


def add_session_hook(settings: Settings, command: str, path: Path = Path("settings.json")) -> Settings:
    """`settings` with one SessionStart hook running `command`, replacing any Homeport hook there was.

    Raises:
        ConfigError: see `_session_groups`.
    """
    groups = _session_groups(settings, path)
    ours = [h for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list) for h in g["hooks"]]
    ours = [h for h in ours if is_homeport_hook(h)]
    if len(ours) == 1 and ours[0].get("command") == command:
        return settings  # already installed as asked: nothing to write
    result = remove_session_hooks(settings, path)
    hooks_table = dict(result.get("hooks", {}))
    hooks_table[_EVENT] = [
        *hooks_table.get(_EVENT, []),
        {
            "matcher": SESSION_START_MATCHER,
            "hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECONDS}],
        },
    ]
    return {**result, "hooks": hooks_table}


def context_command(executable: str, task: str, budget: int) -> str:
    """The shell command the hook runs (Claude Code runs hook commands through a shell)."""
    return f"{shlex.quote(executable)} context --task {shlex.quote(task)} --budget {budget}"


# -- this installation ---------------------------------------------------------------------------


def homeport_executable() -> str | None:
    """The absolute path of the `homeport` executable running now, or installed beside this Python.

    `sys.argv[0]` is the script a shell or an editor started; under `python -m homeport` (or a test
    runner) the script beside the interpreter is the one of this installation.
    """
    started = Path(sys.argv[0])
    if started.name in _EXECUTABLE_NAMES and started.is_file():
        return str(started.absolute())
    for name in _EXECUTABLE_NAMES:
        beside = Path(sys.executable).parent / name
        if beside.is_file():
            return str(beside)
    return None


def _settings_path(scope: str) -> Path:
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    return _project_root() / ".claude" / "settings.json"


def _project_root() -> Path:
    """The project a hook started from here would serve: the stdio resolver's answer, as `homeport where`."""
    from homeport.cli._compose import workspace_from_here

    return workspace_from_here().root


def _read_settings(path: Path) -> tuple[Settings, str | None]:
    """The settings in `path` and its text ({} and None when there is no file).

    Raises:
        ConfigError: the file is not a JSON object, or cannot be read.
    """
    from homeport.errors import ConfigError

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}; nothing was written") from exc
    if not text.strip():
        return {}, text
    try:
        settings = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); fix or move it, nothing was written") from exc
    if not isinstance(settings, dict):
        raise ConfigError(f"{path} holds {type(settings).__name__}, not a JSON object; nothing was written")
    return settings, text


def _write_settings(path: Path, settings: Settings, previous: str | None) -> Path | None:
    """Write `settings` to `path`, keeping `previous` as PATH.bak; returns the backup's path, if any.

    Raises:
        ConfigError: the file or its backup cannot be written.
    """
    from homeport._replace import replace_file
    from homeport.errors import ConfigError

    backup = path.with_name(path.name + ".bak") if previous is not None else None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if previous is not None else 0o644
        if backup is not None:
            replace_file(backup, previous or "", mode)
        replace_file(path, json.dumps(settings, indent=2, ensure_ascii=False) + "\n", mode)
    except OSError as exc:
        raise ConfigError(f"cannot write {exc.filename or path}: {exc.strerror or exc}") from exc
    return backup


# -- the commands --------------------------------------------------------------------------------

_SCOPE = click.option(
    "--scope",
    type=click.Choice(["user", "project"]),
    default="user",
    show_default=True,
    help="user: ~/.claude/settings.json (every project); project: .claude/settings.json in this project "
    "(shared with the team if committed).",
)
_DRY_RUN = click.option("--dry-run", is_flag=True, help="Print what would change; write nothing.")


@click.group(cls=HelpfulGroup)
def hooks() -> None:
    """Start an agent's session with the project's context (`homeport context --task`)."""


@hooks.command("install")
@click.argument("client", type=click.Choice(["claude-code", "git"]))
@_SCOPE
@click.option("--task", default=DEFAULT_TASK, show_default=True, help="What the context is chosen for.")
@click.option(
    "--budget",
    default=DEFAULT_BUDGET,
    show_default=True,
    type=click.IntRange(100, 32_000),
    help="Most tokens injected.",
)
@_DRY_RUN
def install(client: str, scope: str, task: str, budget: int, dry_run: bool) -> None:
    """Add a SessionStart hook to CLIENT's settings that prints the project's context.

    The settings file is merged (everything else in it is kept; installing again replaces the
    hook, never adds a second) and the previous file is kept as settings.json.bak.

    \b
    `git` instead adds post-commit and post-merge hooks to this clone that run `homeport sync` in the
    background after every commit, merge and pull (`homeport sync --help`).

    \b
    Example: homeport hooks install claude-code --scope project --budget 1500
             homeport hooks install git
    """
    from homeport.cli._compose import domain_errors

    if client == "git":
        _install_git(dry_run)
        return
    domain_errors(_install)(scope, task, budget, dry_run)


def _install_git(dry_run: bool) -> None:
    from homeport.cli.git_hooks import install_git_hooks

    executable = homeport_executable()
    if executable is None:
        raise click.ClickException("cannot find the homeport executable of this installation; see `homeport setup`")
    paths = install_git_hooks(executable, Path.cwd(), dry_run)
    verb = "would add" if dry_run else "added"
    if not paths:
        click.echo("the sync hooks are already installed in this clone")
    for path in paths:
        click.echo(f"{verb} the sync hook to {path}")


def _install(scope: str, task: str, budget: int, dry_run: bool) -> None:
    executable = homeport_executable()
    if executable is None:
        raise click.ClickException(
            "cannot find the homeport executable of this installation; install Homeport with pipx or "
            "`pip install` in a virtual environment and run this command from it"
        )
    path = _settings_path(scope)
    settings, previous = _read_settings(path)
    command = context_command(executable, task, budget)
    updated = add_session_hook(settings, command, path)
    if updated == settings and previous is not None:
        click.echo(f"already installed in {path}: {command}")
        return
    if dry_run:
        click.echo(f"would add to {path} (nothing written):")
        click.echo(json.dumps({"hooks": {_EVENT: updated["hooks"][_EVENT]}}, indent=2))
        return
    backup = _write_settings(path, updated, previous)
    click.echo(f"installed in {path}: {command}")
    if backup is not None:
        click.echo(f"previous settings kept in {backup}")
    click.echo("new Claude Code sessions in a project start with its context; check with: " + command)


@hooks.command("uninstall")
@click.argument("client", type=click.Choice(["claude-code", "git"]))
@_SCOPE
@_DRY_RUN
def uninstall(client: str, scope: str, dry_run: bool) -> None:
    """Remove the hooks `homeport hooks install` added to CLIENT's settings; nothing else is touched.

    \b
    Example: homeport hooks uninstall claude-code
    """
    from homeport.cli._compose import domain_errors

    if client == "git":
        from homeport.cli.git_hooks import uninstall_git_hooks

        for path in uninstall_git_hooks(Path.cwd(), dry_run):
            click.echo(f"{'would remove' if dry_run else 'removed'} the sync hook from {path}")
        return
    domain_errors(_uninstall)(scope, dry_run)


def _uninstall(scope: str, dry_run: bool) -> None:
    path = _settings_path(scope)
    settings, previous = _read_settings(path)
    updated = remove_session_hooks(settings, path)
    if updated == settings:
        click.echo(f"no Homeport hook in {path}")
        return
    if dry_run:
        click.echo(f"would remove the Homeport SessionStart hook from {path} (nothing written)")
        return
    backup = _write_settings(path, updated, previous)
    click.echo(f"removed the Homeport SessionStart hook from {path} (previous settings kept in {backup})")


@hooks.command("show")
@click.argument("client", type=click.Choice(["claude-code", "cursor", "vscode", "gemini-cli", "codex"]))
@click.option("--task", default=DEFAULT_TASK, show_default=True, help="What the context is chosen for.")
@click.option("--budget", default=DEFAULT_BUDGET, show_default=True, type=click.IntRange(100, 32_000))
def show(client: str, task: str, budget: int) -> None:
    """Print a snippet that gives CLIENT the project's context at session start, for clients without an installer.

    Each says which parts were checked against the client's documentation and which were not.

    \b
    Example: homeport hooks show gemini-cli
    """
    executable = homeport_executable() or "homeport"
    shown = snippet(client, executable=executable, python=sys.executable, task=task, budget=budget, project=_project())
    click.echo(shown, nl=False)


def _project() -> Path | None:
    """The project a call from here would use, for the snippets that must name it; None outside one."""
    from homeport.cli._compose import workspace_from_here
    from homeport.errors import WorkspaceError

    try:
        found = workspace_from_here()
    except WorkspaceError:
        return None
    return found.root if found.is_project else None


def snippet(client: str, *, executable: str, python: str, task: str, budget: int, project: Path | None = None) -> str:
    """What to add to `client`'s configuration, with what was checked against its documentation and what was not;
    `project` fills the places that must name the project (a placeholder without it)."""
    command = context_command(executable, task, budget)
    project_path = str(project) if project is not None else "/absolute/path/to/project"
    if client == "claude-code":
        group = add_session_hook({}, command)["hooks"]
        return (
            "# Claude Code: ~/.claude/settings.json or .claude/settings.json (`homeport hooks install claude-code`\n"
            "# merges this for you). Standard output of a SessionStart hook is added to the session's context.\n"
            + json.dumps({"hooks": group}, indent=2)
            + "\n"
        )
    # Clients whose hooks want JSON on standard output: the Markdown wrapped by this Python.
    wrap = f"{command} | {shlex.quote(python)} -c " + shlex.quote(
        'import json,sys; print(json.dumps({"hookSpecificOutput": {"additionalContext": sys.stdin.read()}}))'
    )
    if client == "gemini-cli":
        hook = {
            "matcher": "startup",
            "hooks": [{"type": "command", "name": "homeport-context", "command": wrap, "timeout": 30000}],
        }
        return (
            '# Gemini CLI: ~/.gemini/settings.json or .gemini/settings.json, under "hooks".\n'
            "# Checked against Gemini CLI's hooks reference (docs/hooks/reference.md): a hook prints JSON only, and\n"
            "# SessionStart's hookSpecificOutput.additionalContext is added to the session; timeout is in ms.\n"
            "# Not checked: the directory Gemini CLI starts hooks in. Homeport takes the project from\n"
            "# CLAUDE_PROJECT_DIR, else the current directory; if the context is another project's, add\n"
            "# --workspace /absolute/path/to/project to the homeport command.\n"
            + json.dumps({"hooks": {"SessionStart": [hook]}}, indent=2)
            + "\n"
        )
    if client == "codex":
        return (
            "# Codex: add Homeport as an MCP server in ~/.codex/config.toml (its documented [mcp_servers] table):\n"
            f'[mcp_servers.homeport]\ncommand = {json.dumps(executable)}\nargs = ["serve"]\n\n'
            "# Not checked: Codex's SessionStart hooks are experimental ([features] codex_hooks = true, then\n"
            "# ~/.codex/hooks.json in Claude Code's shape); whether plain output or JSON is injected was not\n"
            "# verified. Until then, an agent gets the same context by calling the get_context tool, or run:\n"
            f"#   {command}\n"
        )
    if client == "cursor":
        server = {"mcpServers": {"homeport": {"command": executable, "args": ["serve", "--workspace", project_path]}}}
        return (
            "# Cursor: .cursor/mcp.json in the project (Cursor sends no roots, so name the project):\n"
            + json.dumps(server, indent=2)
            + "\n# Not checked: Cursor's sessionStart hook (.cursor/hooks.json) is documented by Cursor but has been\n"
            "# reported as refused by some versions, and its output shape was not verified. Ask the agent to call\n"
            "# get_context first (a rule in .cursor/rules), or paste the output of:\n"
            f"#   {command}\n"
        )
    server = {
        "servers": {
            "homeport": {"type": "stdio", "command": executable, "args": ["serve", "--workspace", "${workspaceFolder}"]}
        }
    }
    return (
        "# VS Code: .vscode/mcp.json in the project:\n"
        + json.dumps(server, indent=2)
        + "\n# Not checked: VS Code's agent hooks are in preview and their format differs by agent harness.\n"
        "# For the Claude harness, `homeport hooks install claude-code --scope project` may serve; otherwise ask\n"
        f"# the agent to call get_context first, or run:\n#   {command}\n"
    )
