"""`homeport setup claude-code|vscode|cursor`: write the client's MCP configuration for this project.

Editors start MCP servers with their own PATH and no shell, so a `homeport` inside a virtual
environment is not found by name; the entry written names this installation's executable by its
absolute path (the one `homeport doctor` and `homeport hooks` find). One file per client, in the
project, which `homeport doctor` reads back:

    claude-code  .mcp.json           {"mcpServers": {"homeport": {"type": "stdio", "command": ..., "args": ["serve"]}}}
    vscode       .vscode/mcp.json    {"servers": {"homeport": {..., "--workspace", "${workspaceFolder}"}}}
    cursor       .cursor/mcp.json    {"mcpServers": {"homeport": {..., "--workspace", "/abs/project"}}}

Claude Code's `.mcp.json` is what `claude mcp add --scope project` writes (Claude Code sets
CLAUDE_PROJECT_DIR, which the server reads); VS Code expands `${workspaceFolder}`; Cursor sends no
roots, so its entry names the project by absolute path.

The file is merged, never replaced: every other key and server entry is kept in its order, an
entry named `homeport` is replaced in place, and the indentation of the file is kept. A file that
is not a plain JSON object (comments, which VS Code allows, would be lost), a server table that is
not an object, a symlink, or a folder on the way that is a symlink, is refused with nothing written
and the snippet to paste by hand.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

__all__ = ["CLIENTS", "ClientFile", "merge_entry", "server_entry", "setup"]

SERVER_NAME = "homeport"


@dataclass(frozen=True)
class ClientFile:
    """Where a client reads a project's MCP servers, and the name of its server table."""

    label: str
    relative: tuple[str, ...]
    table: str


CLIENTS: dict[str, ClientFile] = {
    "claude-code": ClientFile("Claude Code", (".mcp.json",), "mcpServers"),
    "vscode": ClientFile("VS Code", (".vscode", "mcp.json"), "servers"),
    "cursor": ClientFile("Cursor", (".cursor", "mcp.json"), "mcpServers"),
}

_NEXT_STEP = {
    "claude-code": "start `claude` in the project and approve the project's MCP server `homeport` when asked",
    "vscode": "open the project in VS Code; `MCP: List Servers` shows homeport (start it there if it is stopped)",
    "cursor": "open the project in Cursor; Settings > MCP lists homeport (enable it there if it is off)",
}


def server_entry(client: str, executable: str, project: Path) -> dict[str, Any]:
    """The server entry `client` needs to start this installation's stdio server for `project`."""
    if client == "claude-code":
        return {"type": "stdio", "command": executable, "args": ["serve"]}
    if client == "vscode":
        return {"type": "stdio", "command": executable, "args": ["serve", "--workspace", "${workspaceFolder}"]}
    return {"command": executable, "args": ["serve", "--workspace", str(project)]}


def merge_entry(document: dict[str, Any], table: str, entry: dict[str, Any], path: Path) -> dict[str, Any]:
    """`document` with `entry` as its server `homeport` in `table`; every other key kept, in order.

    Raises:
        ConfigError: `table` holds something other than an object.
    """
    from homeport.errors import ConfigError

    servers = document.get(table, {})
    if not isinstance(servers, dict):
        raise ConfigError(
            f'{path}: "{table}" is {_json_type(servers)}, not an object; nothing was written. '
            f"Fix it by hand, then run the command again"
        )
    return {**document, table: {**servers, SERVER_NAME: entry}}


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _snippet(client: str, entry: dict[str, Any]) -> str:
    return json.dumps({CLIENTS[client].table: {SERVER_NAME: entry}}, indent=2)


def config_path(client: str, project: Path) -> Path:
    """The client's configuration file in `project`.

    Raises:
        ConfigError: the file, or a folder between the project and it, is a symlink (it would lead
            the write elsewhere), or the file is not a regular file.
    """
    from homeport.errors import ConfigError

    path = project
    for name in CLIENTS[client].relative:
        path = path / name
        if path.is_symlink():
            raise ConfigError(
                f"{path} is a symlink (to {os.readlink(path)}); Homeport does not write through it, "
                f"nothing was written. Replace it with a plain file or folder, or add the entry by hand"
            )
    if path.exists() and not path.is_file():
        raise ConfigError(f"{path} is not a regular file; nothing was written. Move it aside and run this again")
    return path


def read_config(path: Path, client: str, entry: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The JSON object in `path` and its text ({} and None when there is no file).

    Raises:
        ConfigError: the file cannot be read, or is not a plain JSON object (the message carries the
            snippet to add by hand).
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
    by_hand = f"add this to it by hand:\n{_snippet(client, entry)}"
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ConfigError(
            f"{path} is not plain JSON ({exc}); nothing was written (comments and trailing commas would be "
            f"lost). Fix it, or {by_hand}"
        ) from exc
    if not isinstance(document, dict):
        raise ConfigError(f"{path} holds {_json_type(document)}, not a JSON object; nothing was written. {by_hand}")
    return document, text


def _indent(text: str | None) -> int:
    """The indentation the file uses (its first indented line), 2 for a new or one-line file."""
    match = re.search(r"^( +)\S", text or "", re.M)
    return len(match.group(1)) if match else 2


def _project(project: str | None) -> Path:
    """The project root for `--project DIR` (a person's path), else the workspace of this shell, as `homeport where`."""
    from homeport.cli._compose import serve_settings, workspace_from_here
    from homeport.core.resolution import build_resolver
    from homeport.workspace import CallInputs

    if project is None:
        return workspace_from_here().root
    settings = serve_settings(transport="stdio", workspace=project, allow_roots=(), require_explicit_workspace=False)
    return build_resolver(settings).resolve(CallInputs(), write=False).workspace.root


@click.command()
@click.argument("client", type=click.Choice(sorted(CLIENTS)))
@click.option(
    "--project",
    metavar="DIR",
    help="The project to set up (default: the one `homeport where` names here).",
)
@click.option("--dry-run", is_flag=True, help="Print the file as it would be written; write nothing.")
def setup(client: str, project: str | None, dry_run: bool) -> None:
    """Add Homeport to CLIENT's MCP servers for this project, by this installation's absolute path.

    Writes .mcp.json (claude-code), .vscode/mcp.json (vscode) or .cursor/mcp.json (cursor) in the
    project, merged: other servers and keys are kept, an entry named homeport is replaced. A file
    that is not a plain JSON object, or a symlink, is refused with nothing written.
    `homeport doctor` checks the entry afterwards.

    \b
    Example: homeport setup vscode --project ~/src/shop --dry-run
    """
    from homeport.cli._compose import domain_errors

    domain_errors(_setup)(client, project, dry_run)


def _setup(client: str, project_dir: str | None, dry_run: bool) -> None:
    from homeport._replace import replace_file
    from homeport.cli.hooks import homeport_executable
    from homeport.errors import ConfigError

    executable = homeport_executable()
    if executable is None:
        raise ConfigError(
            "cannot find the homeport executable of this installation; install Homeport with pipx or "
            "`pip install` in a virtual environment and run this command from it"
        )
    project = _project(project_dir)
    spec = CLIENTS[client]
    path = config_path(client, project)
    entry = server_entry(client, executable, project)
    document, previous = read_config(path, client, entry)
    updated = merge_entry(document, spec.table, entry, path)
    text = json.dumps(updated, indent=_indent(previous), ensure_ascii=False) + "\n"
    if previous is not None and updated == document:
        click.echo(f"{spec.label}: {path} already starts {executable} for {project}; nothing to change")
        return
    if dry_run:
        click.echo(f"{spec.label}: would write {path} (nothing written):")
        click.echo(text, nl=False)
        return
    replaced = isinstance(document.get(spec.table), dict) and SERVER_NAME in document[spec.table]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if previous is not None else 0o644
        replace_file(path, text, mode)
    except OSError as exc:
        raise ConfigError(f"cannot write {exc.filename or path}: {exc.strerror or exc}") from exc
    kept = len(updated[spec.table]) - 1
    click.echo(
        f"{spec.label}: {'replaced the' if replaced else 'added a'} homeport server in {path} "
        f"({executable} serve){f'; {kept} other server(s) kept' if kept else ''}"
    )
    click.echo(f"next: {_NEXT_STEP[client]}; `homeport doctor` checks the entry")
