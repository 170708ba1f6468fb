"""`homeport directory` and `homeport tokens`: who the agents are, and how they prove it over HTTP."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from homeport.cli._compose import data_dir_option, default_data_dir, domain_errors
from homeport.cli._lazy import HelpfulGroup
from homeport.core.credentials import Directory, DirectoryFile, TokenStore, directory_file, token_store

__all__ = ["directory", "tokens"]


def _directory_file(data_dir: Path | None, path: Path | None) -> DirectoryFile:
    return directory_file(data_dir or default_data_dir(), path)


def _show(d: Directory, as_json: bool) -> None:
    rows: list[dict[str, Any]] = []
    for org in d.organizations:
        o = d.organization(org)
        for agent, team in sorted(d.agents_of(org).items()):
            rows.append({"org": org, "agent": agent, "team": team, "leadership": agent in o.leadership})
        for team in d.teams_of(org):
            if not any(r["team"] == team for r in rows if r["org"] == org):
                rows.append({"org": org, "agent": None, "team": team, "leadership": False})
    roots = {
        org: {
            "read_write": list(d.organization(org).workspace_roots),
            "read_only": list(d.organization(org).read_only_workspace_roots),
        }
        for org in d.organizations
    }
    if as_json:
        shown = {"organizations": list(d.organizations), "members": rows, "workspace_roots": roots}
        click.echo(json.dumps(shown, indent=2))
        return
    table = Table("org", "agent", "team", "leadership")
    for r in rows:
        table.add_row(r["org"], r["agent"] or "-", r["team"] or "-", "yes" if r["leadership"] else "")
    Console().print(table)
    grants = Table("org", "workspace root", "access")
    for org, listed in roots.items():
        for root in listed["read_write"]:
            grants.add_row(org, root, "read-write")
        for root in listed["read_only"]:
            grants.add_row(org, root, "read-only")
        if not listed["read_write"] and not listed["read_only"]:
            grants.add_row(org, "-", "none under --auth")
    Console().print(grants)


@click.group(cls=HelpfulGroup)
def directory() -> None:
    """The directory of organizations, teams and agents that the file-area policy reads.

    \b
    Example:
      homeport directory add-org acme
      homeport directory add-team acme platform
      homeport directory add-agent acme ada --team platform
      homeport directory set-leadership acme ada
      homeport directory set-name acme platform "Platform team"
      homeport directory add-workspace-root acme /srv/acme
    """


@directory.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@data_dir_option
@domain_errors
def directory_show(as_json: bool, data_dir: Path | None, directory_file: Path | None) -> None:
    """Print every organization, team and agent."""
    file = _directory_file(data_dir, directory_file)
    loaded = file.load_if_present()
    if loaded is None and not as_json:
        # A fresh setup: nothing is wrong, there is just nothing in it yet.
        click.echo(f"no directory yet ({file.path} does not exist); create one with: homeport directory add-org NAME")
        return
    _show(loaded or Directory(), as_json)


@directory.command("add-org")
@click.argument("org")
@data_dir_option
@domain_errors
def directory_add_org(org: str, data_dir: Path | None, directory_file: Path | None) -> None:
    """Add an organization."""
    _directory_file(data_dir, directory_file).add_organization(org)
    click.echo(f"added organization {org}")


@directory.command("add-team")
@click.argument("org")
@click.argument("team")
@data_dir_option
@domain_errors
def directory_add_team(org: str, team: str, data_dir: Path | None, directory_file: Path | None) -> None:
    """Add a team to an organization."""
    _directory_file(data_dir, directory_file).add_team(org, team)
    click.echo(f"added team {team} to {org}")


@directory.command("add-agent")
@click.argument("org")
@click.argument("agent")
@click.option("--team", help="The agent's team (at most one).")
@data_dir_option
@domain_errors
def directory_add_agent(
    org: str, agent: str, team: str | None, data_dir: Path | None, directory_file: Path | None
) -> None:
    """Add an agent to an organization, optionally in a team."""
    _directory_file(data_dir, directory_file).add_agent(org, agent, team)
    click.echo(f"added agent {agent} to {org}" + (f" in team {team}" if team else ""))


@directory.command("set-name")
@click.argument("org")
@click.argument("folder_id", metavar="FOLDER_ID")
@click.argument("name")
@data_dir_option
@domain_errors
def directory_set_name(org: str, folder_id: str, name: str, data_dir: Path | None, directory_file: Path | None) -> None:
    """Give an agent's or team's folders a display name (list_folders shows it); "" removes it."""
    _directory_file(data_dir, directory_file).set_name(org, folder_id, name or None)
    click.echo(f"{org}/{folder_id}: " + (f"display name {name!r}" if name else "no display name"))


@directory.command("set-leadership")
@click.argument("org")
@click.argument("agents", nargs=-1)
@data_dir_option
@domain_errors
def directory_set_leadership(
    org: str, agents: tuple[str, ...], data_dir: Path | None, directory_file: Path | None
) -> None:
    """Set the organization's leadership (replaces the list; none clears it)."""
    _directory_file(data_dir, directory_file).set_leadership(org, agents)
    click.echo(f"leadership of {org}: {', '.join(agents) or '(none)'}")


@directory.command("add-workspace-root")
@click.argument("org")
@click.argument("root", metavar="DIR")
@click.option("--read-only", is_flag=True, help="Reads only: writes under DIR stay refused.")
@data_dir_option
@domain_errors
def directory_add_workspace_root(
    org: str, root: str, read_only: bool, data_dir: Path | None, directory_file: Path | None
) -> None:
    """Let the agents of ORG use workspaces inside DIR under `serve --http --auth`.

    An organization without workspace roots may use no workspace; without --auth the local user
    is bounded by --allow-root alone. A relative DIR is taken from the current directory.

    \b
    Example:
      homeport directory add-workspace-root acme /srv/acme
      homeport directory add-workspace-root acme /srv/shared --read-only
    """
    absolute = os.path.abspath(root)
    _directory_file(data_dir, directory_file).add_workspace_root(org, absolute, read_only=read_only)
    click.echo(f"agents of {org} may use workspaces inside {absolute}" + (" (read-only)" if read_only else ""))


@directory.command("remove-workspace-root")
@click.argument("org")
@click.argument("root", metavar="DIR")
@data_dir_option
@domain_errors
def directory_remove_workspace_root(org: str, root: str, data_dir: Path | None, directory_file: Path | None) -> None:
    """Stop granting ORG's agents the workspaces inside DIR (a running server sees it at once)."""
    absolute = os.path.abspath(root)
    _directory_file(data_dir, directory_file).remove_workspace_root(org, absolute)
    click.echo(f"removed workspace root {absolute} of {org}")


@click.group(cls=HelpfulGroup)
def tokens() -> None:
    """Bearer tokens for `homeport serve --http --auth`: each names one agent.

    \b
    Example:
      homeport tokens add ada        # prints the token once; store it in the client's config
      homeport tokens list
      homeport tokens revoke tok_0123456789abcdef
    """


def _token_store(data_dir: Path | None) -> TokenStore:
    return token_store(data_dir or default_data_dir())


@tokens.command("add")
@click.argument("agent")
@data_dir_option
@domain_errors
def tokens_add(agent: str, data_dir: Path | None, directory_file: Path | None) -> None:
    """Create a token for AGENT and print it once (only its hash is kept)."""
    known = _directory_file(data_dir, directory_file)
    if known.path.exists():
        known.load().agent(agent)  # refuse tokens for agents the directory does not know
    click.echo(_token_store(data_dir).add(agent))
    click.echo(f"token for {agent} printed above; it is not shown again", err=True)


@tokens.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@data_dir_option
@domain_errors
def tokens_list(as_json: bool, data_dir: Path | None, directory_file: Path | None) -> None:
    """List tokens by id and agent (never the tokens themselves)."""
    entries = _token_store(data_dir).list()
    if as_json:
        click.echo(json.dumps(entries, indent=2))
        return
    table = Table("token_id", "agent", "created")
    for e in entries:
        table.add_row(e["token_id"], e["agent_id"], e["created_at"])
    Console().print(table)


@tokens.command("revoke")
@click.argument("token_id")
@data_dir_option
@domain_errors
def tokens_revoke(token_id: str, data_dir: Path | None, directory_file: Path | None) -> None:
    """Revoke a token by its id (from `homeport tokens list`)."""
    _token_store(data_dir).revoke(token_id)
    click.echo(f"revoked {token_id}")
