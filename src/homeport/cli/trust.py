"""`homeport trust`: let a project's own configuration send data off this machine, once you have read it.

A cloned repository's `.homeport/config.toml` may name a team server (`[team] url`, `project`) and
an environment variable for its token (`token_env`); its config or `.env` may name a database on
another host. None of that is used until you trust the project here (`workspace/trust.py`): until
then its memory stays on this machine and its database must be local. This command shows what the
configuration asks for, and records your approval in your own config directory, bound to the
project's root, the team server, the key and the config file's exact content. The token's source is
yours to choose (`--token-env VAR`, `--keyring`, `--no-token`); the repository's token_env is only
shown as a suggestion.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from homeport.cli._compose import default_trust_file, domain_errors, serve_settings, shell_path
from homeport.errors import ConfigError, DatabaseNotConfiguredError, HomeportError
from homeport.workspace.trust import TrustBook, TrustRecord, config_digest, trust_command

__all__ = ["trust"]


@dataclass(frozen=True)
class _Asked:
    """What a project's configuration asks for that needs the user's trust."""

    root: Path
    config_path: Path
    digest: str | None
    team_url: str | None
    project_key: str | None
    project_key_detail: str
    suggested_token_env: str | None
    database: str | None  # the database off this machine, described without its password
    database_hosts: tuple[str, ...]
    database_note: str | None  # why the database could not be read, if it could not
    environment: tuple[str, ...]  # variables of the user's environment its database configuration reads

    @property
    def anything(self) -> bool:
        return self.team_url is not None or bool(self.database_hosts) or bool(self.environment)


@click.command()
@click.option(
    "--project",
    metavar="DIR",
    help="The project to trust (default: the one you are in, as a call from here would resolve it).",
)
@click.option(
    "--token-env",
    metavar="VAR",
    help="Read the team server's token from this environment variable of yours "
    "(the repository's token_env is only a suggestion).",
)
@click.option(
    "--keyring",
    "use_keyring",
    is_flag=True,
    help="Read the team server's token from your keyring (`keyring set homeport URL`); the default.",
)
@click.option("--no-token", is_flag=True, help="Send no token to the team server.")
@click.option("--revoke", is_flag=True, help="Withdraw your trust: the project is served locally again.")
@click.option("--list", "list_records", is_flag=True, help="List the projects you trust on this machine.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@domain_errors
def trust(
    project: str | None,
    token_env: str | None,
    use_keyring: bool,
    no_token: bool,
    revoke: bool,
    list_records: bool,
    as_json: bool,
) -> None:
    """Show what this project's .homeport/config.toml asks for that would leave this machine (a team
    server and the project key sent to it, a database on another host) and trust it on this machine.

    Until you do, Homeport serves the project locally: its memory stays here, no token is read for it,
    and its database must be on this machine. Your approval is kept in your own config directory and
    binds the project's directory, the team server, the key and the config file's exact content: if
    the repository changes the file, run this again. The token's source is your choice: --token-env
    VAR, --keyring (the default) or --no-token.

    \b
    Examples:
      homeport trust                                  # review and trust the project you are in
      homeport trust --token-env HOMEPORT_TEAM_TOKEN  # its token from that variable
      homeport trust --revoke                         # back to local
      homeport trust --list
    """
    book = TrustBook(default_trust_file())
    if list_records:
        if project or token_env or use_keyring or no_token or revoke:
            raise click.UsageError("--list takes no other option but --json")
        _list(book, as_json)
        return
    if sum((token_env is not None, use_keyring, no_token)) > 1:
        raise click.UsageError("choose one token source: --token-env VAR, --keyring or --no-token")
    if revoke:
        if token_env or use_keyring or no_token:
            raise click.UsageError("--revoke takes no token source")
        _revoke(book, _project_root(project, must_exist=False), as_json)
        return
    if token_env is not None and not token_env.strip():
        raise click.UsageError("--token-env needs the name of an environment variable")
    token = f"env:{token_env.strip()}" if token_env else "none" if no_token else "keyring"
    _grant(book, _asked(_project_root(project, must_exist=True)), token, as_json)


def _project_root(project: str | None, *, must_exist: bool) -> Path:
    """The project's root as the server resolves it (the nearest .homeport/ or git root, guards applied)."""
    from homeport.core.resolution import build_resolver
    from homeport.workspace import CallInputs

    path = shell_path(project) or os.getcwd()
    settings = serve_settings(transport="stdio", workspace=None, allow_roots=(), require_explicit_workspace=False)
    try:
        return build_resolver(settings).resolve(CallInputs(argument=path), write=False).workspace.root
    except HomeportError:
        if must_exist:
            raise
        return Path(os.path.realpath(path))  # revoking the trust of a directory that is gone


def _asked(root: Path) -> _Asked:
    """What the project's configuration asks for. Raises ConfigError when it cannot be read."""
    from homeport.workspace.project import CONFIG_FILE, project_key, read_project_config, team_config

    document = read_project_config(root)
    team = team_config(root, document)
    found = project_key(root, document)
    if team is not None and found.key is None:
        raise ConfigError(
            f"{team.config_path} names the team server {team.url} but the project has no key ({found.detail}); "
            'add project = "owner/name" to that file, then trust it'
        )
    database, hosts, note, environment = _database_off_this_machine(root)
    return _Asked(
        root=root,
        config_path=root / CONFIG_FILE,
        digest=config_digest(root),
        team_url=team.url if team else None,
        project_key=found.key if team else None,
        project_key_detail=found.detail,
        suggested_token_env=team.token_env if team else None,
        database=database,
        database_hosts=hosts,
        database_note=note,
        environment=environment,
    )


def _database_off_this_machine(
    root: Path,
) -> tuple[str | None, tuple[str, ...], str | None, tuple[str, ...]]:
    """The database off this machine (described), its hosts, why it could not be read, and the variables
    of the user's environment its configuration reads."""
    from homeport.projectdb import discover_database
    from homeport.projectdb._trust import hosts_off_this_machine

    try:
        source = discover_database(root, dict(os.environ))
    except DatabaseNotConfiguredError:
        return None, (), None, ()
    except HomeportError as exc:
        return None, (), exc.message, ()
    hosts = hosts_off_this_machine(source.url)
    return (source.describe() if hosts else None), hosts, None, source.environment


def _grant(book: TrustBook, asked: _Asked, token: str, as_json: bool) -> None:
    if not asked.anything:
        message = (
            f"Nothing to trust in {asked.root}: its configuration names no team server, no database off "
            "this machine and no variable of your environment, so it is used as it is."
        )
        if asked.database_note:
            message += f" (The project database could not be read: {asked.database_note})"
        if as_json:
            click.echo(json.dumps({"root": str(asked.root), "trusted": None, "note": message}, indent=2))
        else:
            click.echo(message)
        return
    record = TrustRecord(
        root=str(asked.root),
        config_sha256=asked.digest,
        team_url=asked.team_url,
        project_key=asked.project_key,
        token=token if asked.team_url else "none",
        database_hosts=asked.database_hosts,
        trusted_at=datetime.now(UTC).isoformat(timespec="seconds"),
        environment=asked.environment,
    )
    book.grant(record)
    if as_json:
        click.echo(json.dumps({"root": str(asked.root), "trusted": record.describe()}, indent=2))
        return
    for label, value in _what(asked, record):
        click.echo(f"  {label:<12}{value}")
    click.echo(
        f"Trusted on this machine. Undo with `{trust_command(asked.root)} --revoke`; a change to "
        f"{asked.config_path} needs trust again."
    )


def _what(asked: _Asked, record: TrustRecord) -> list[tuple[str, str]]:
    rows = [("project", str(asked.root))]
    digest = f" (sha256 {asked.digest[:16]}…)" if asked.digest else " (none)"
    rows.append(("config", f"{asked.config_path}{digest}"))
    if asked.team_url:
        rows.append(("team server", f"{asked.team_url}: this project's memory calls go there"))
        rows.append(("project key", f"{asked.project_key} ({asked.project_key_detail})"))
        rows.append(("token", _token_line(record, asked)))
    if asked.database:
        rows.append(("database", f"{asked.database}: its credentials go to {', '.join(asked.database_hosts)}"))
    if asked.environment:
        named = ", ".join(f"${{{name}}}" for name in asked.environment)
        rows.append(("environment", f"its database configuration reads {named} from your environment"))
    return rows


def _token_line(record: TrustRecord, asked: _Asked) -> str:
    assert asked.team_url is not None
    if record.token_env:
        line = f"from your environment variable {record.token_env}"
        if not os.environ.get(record.token_env):
            line += " (not set in this shell: set it where your editor starts Homeport)"
    elif record.token == "keyring":
        line = f"from your keyring (`keyring set homeport {asked.team_url}`)"
    else:
        line = "none is sent"
    if asked.suggested_token_env and asked.suggested_token_env != record.token_env:
        line += (
            f"; the repository suggests token_env = {asked.suggested_token_env}, not used unless you pass "
            f"--token-env {asked.suggested_token_env}"
        )
    return line


def _revoke(book: TrustBook, root: Path, as_json: bool) -> None:
    removed = book.revoke(root)
    if as_json:
        click.echo(json.dumps({"root": str(root), "revoked": removed.describe() if removed else None}, indent=2))
    elif removed is None:
        click.echo(f"{root} was not trusted on this machine; nothing changed.")
    else:
        click.echo(f"No longer trusted: {root} is served locally; nothing more goes to {removed.team_url or 'it'}.")


def _list(book: TrustBook, as_json: bool) -> None:
    rows: list[dict[str, Any]] = []
    for root, record in sorted(book.records().items()):
        rows.append({**record.describe(), "state": _state(Path(root), record)})
    if as_json:
        click.echo(json.dumps({"trust_file": str(book.path), "projects": rows}, indent=2))
        return
    if not rows:
        click.echo(f"No project is trusted on this machine ({book.path}).")
        return
    for row in rows:
        parts = [f"team {row['team_url']} as {row['project_key']}, token {row['token']}"] if row["team_url"] else []
        if row["database_hosts"]:
            parts.append(f"database hosts {', '.join(row['database_hosts'])}")
        click.echo(f"{row['root']}: {'; '.join(parts)} (trusted {row['trusted_at']}; {row['state']})")


def _state(root: Path, record: TrustRecord) -> str:
    try:
        digest = config_digest(root)
    except ConfigError as exc:
        return exc.message
    if not root.is_dir():
        return "the directory is gone"
    return "current" if digest == record.config_sha256 else "config changed since: waiting for trust again"
