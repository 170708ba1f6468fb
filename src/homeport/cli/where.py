"""`homeport where`: which workspace a call from here would use, and why."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from homeport.cli._compose import domain_errors, serve_settings, shell_path, store_option, workspace_options
from homeport.core.resolution import build_resolver
from homeport.core.stores import locate_store
from homeport.errors import HomeportError
from homeport.mesh.forwarding import Forwarder
from homeport.registry import InstanceRegistry
from homeport.workspace import CallInputs
from homeport.workspace.project import project_key, read_project_config, team_config

__all__ = ["where"]


@click.command()
@click.argument("path", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@store_option(
    "Show the workspace's place in this PostgreSQL store (its schema and revision), or this one SQLite "
    "file (sqlite:///FILE), as `homeport serve --store URL` would use it (env: HOMEPORT_STORE). The password "
    "is never shown."
)
@workspace_options
@domain_errors
def where(
    path: str | None,
    as_json: bool,
    store_url: str | None,
    workspace: str | None,
    allow_roots: tuple[str, ...],
    require_explicit_workspace: bool,
) -> None:
    """Show the workspace a stdio call from here would use: root, source, store, why, and the
    project's key (from .homeport/config.toml `project`, else the git remote origin) with the team
    server its memory calls go to when [team] url names one.

    The store is the one `homeport serve` would use: the team server and the project's key when the
    project names one, else the PostgreSQL database of --store / HOMEPORT_STORE (schema and revision,
    password hidden), else the project's SQLite file.

    PATH plays the part of a tool's workspace argument (relative paths and ~ are taken from
    here, as everywhere on the command line); without it the server default
    (--workspace, HOMEPORT_WORKSPACE), client hints (CLAUDE_PROJECT_DIR) and the current
    directory are tried, as `homeport serve` does.
    """
    settings = serve_settings(
        transport="stdio",
        workspace=workspace,
        allow_roots=allow_roots,
        require_explicit_workspace=require_explicit_workspace,
        store_url=store_url,
    )
    # The resolver and the registry alone, as `homeport serve` builds them: no store is opened (a
    # PostgreSQL store is asked, read-only, for the workspace's schema and revision).
    ws = build_resolver(settings).resolve(CallInputs(argument=shell_path(path)), write=False).workspace
    served_by: dict[str, Any] = {"process": "this", "pid": os.getpid()}
    if settings.state_dir:
        forwarder = Forwarder(InstanceRegistry(settings.state_dir))
        try:
            served_by = forwarder.served_by(ws.root)
        finally:
            forwarder.close()
    store = locate_store(ws.root, settings.store_url, settings.trust_file, settings.store_file)
    report = {
        "workspace": str(ws.root),
        "source": ws.source.value,
        **store.describe(),
        "why": ws.reason,
        "served_by": served_by,
        **_identity(ws.root, settings.trust_file),
    }
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    rows = [("workspace", str(ws.root)), ("source", ws.source.value), ("store", store.line()), ("why", ws.reason)]
    if served_by["process"] == "owner":
        rows.append(("served by", f"pid {served_by['pid']} at {served_by['endpoint']} (owns {served_by['owns']})"))
    rows.append(("project key", f"{report['project_key'] or '-'} ({report['project_key_detail']})"))
    if report["team"] is not None:
        rows.append(("team server", report["team"]))
    if report["trust"] is not None:
        rows.append(("trust", report["trust"]["line"]))
    # Plain lines, one per field: a table pads every cell to the terminal's width and wraps long paths,
    # which leaves trailing spaces and splits a path a person copies.
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        click.echo(f"{label:<{width}}  {value}".rstrip())


def _identity(root: Any, trust_file: Any) -> dict[str, Any]:
    """The project's key and where it came from; the team server its memory calls go to, if any, and
    (`trust`) one its config names that waits for this user's trust."""
    from homeport.mesh.team import TeamRouter
    from homeport.workspace.trust import TrustBook

    try:
        document = read_project_config(root)
        found = project_key(root, document).describe()
        team = team_config(root, document)
        waiting = TeamRouter({}, TrustBook(trust_file)).waiting(root) if team else None
    except HomeportError as exc:
        return {
            "project_key": None,
            "project_key_source": "error",
            "project_key_detail": exc.message,
            "team": None,
            "trust": None,
        }
    if waiting is not None:
        return {**found, "team": None, "trust": {**waiting.describe(), "line": waiting.line()}}
    went = f"{team.url} (memory calls go there; see {team.config_path})" if team else None
    return {**found, "team": went, "trust": None}
