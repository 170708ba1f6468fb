"""`homeport doctor`: check the install, this directory's workspace and store, the registry, the
project database and the client configurations, and say what to fix.

Every check is read-only: the store is opened read-only (never created or migrated), the
registry file is read without pruning it, the project database gets one `SELECT 1`. The store is
the one `homeport serve` would use (`core/stores.py`): a team server gets one read of the project's
decisions with the project's token, a PostgreSQL store (--store, HOMEPORT_STORE) is asked for the
workspace's schema and every workspace's revision.
Exit status 0 when nothing failed (warnings allowed), 1 otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import click

__all__ = ["Check", "doctor"]

Status = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class Check:
    """One finding: what was checked, how it went, what was found and (unless ok) what to do."""

    name: str
    status: Status
    detail: str
    fix: str | None = None


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@click.option(
    "--store",
    "store_url",
    envvar="HOMEPORT_STORE",
    metavar="URL",
    help="Check this PostgreSQL store, or SQLite file (sqlite:///FILE), as `homeport serve --store URL` would use "
    "it (env: HOMEPORT_STORE).",
)
def doctor(as_json: bool, store_url: str | None) -> None:
    """Check the install, this directory's workspace and store, the instance registry, the project
    database and the MCP client configurations found; each says ok, warn or fail and what to fix.

    The store checked is the one `homeport serve` would use: the project's team server ([team] url in
    .homeport/config.toml; one read with its token), else the PostgreSQL database of --store /
    HOMEPORT_STORE (reachable, the workspace's schema at a revision this Homeport knows), else the
    project's SQLite file.

    Nothing is changed. Exit status 1 when a check failed.

    \b
    Example: homeport doctor --json
    """
    checks = run_checks(store_url or None)
    if as_json:
        failed = any(c.status == "fail" for c in checks)
        click.echo(json.dumps({"ok": not failed, "checks": [asdict(c) for c in checks]}, indent=2))
    else:
        colours = {"ok": "green", "warn": "yellow", "fail": "red"}
        for check in checks:
            mark = click.style(f"{check.status:<4}", fg=colours[check.status], bold=True)
            # Driver messages span lines; a report line is one line.
            click.echo(f"{mark} {check.name:<10} {' '.join(check.detail.split())}")
            if check.fix:
                click.echo(f"{'':<16}fix: {check.fix}")
    if any(c.status == "fail" for c in checks):
        click.get_current_context().exit(1)


def run_checks(store_url: str | None = None) -> list[Check]:
    from homeport.cli.hooks import homeport_executable

    executable = homeport_executable()
    checks = install_checks(executable)
    root, workspace = workspace_check()
    checks.append(workspace)
    if root is not None:
        checks += trust_checks(root)
        checks.append(store_check(root, store_url))
    checks.append(registry_check())
    if root is not None:
        checks.append(database_check(root))
    checks += client_checks(root, executable)
    return checks


# -- install -------------------------------------------------------------------------------------


def install_checks(executable: str | None) -> list[Check]:
    from homeport import __version__

    python = ".".join(map(str, sys.version_info[:3]))
    checks = [Check("version", "ok", f"homeport {__version__} on Python {python} ({sys.executable})")]
    if executable is None:
        checks.append(
            Check(
                "executable",
                "warn",
                "no homeport executable found for this installation",
                "install with `pipx install homeport` or `pip install homeport` in a virtual environment",
            )
        )
        return checks
    on_path = shutil.which("homeport")
    if on_path is None:
        checks.append(
            Check(
                "executable",
                "warn",
                f"{executable} is not on PATH",
                f"name it by absolute path in client configs ({executable}), or install with pipx",
            )
        )
    elif not _same_file(on_path, executable):
        checks.append(
            Check(
                "executable",
                "warn",
                f"this is {executable}, but `homeport` on PATH is {on_path} (another installation)",
                "use one installation, or name this one by absolute path in client configs",
            )
        )
    else:
        checks.append(Check("executable", "ok", f"{executable} (on PATH)"))
    return checks


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


# -- workspace and store -------------------------------------------------------------------------


def workspace_check() -> tuple[Path | None, Check]:
    """The workspace a stdio call from here would use, as `homeport where` finds it."""
    from homeport.cli._compose import workspace_from_here
    from homeport.errors import HomeportError

    try:
        ws = workspace_from_here()
    except HomeportError as exc:
        return None, Check(
            "workspace", "fail", exc.message, "run from inside a project, or set HOMEPORT_WORKSPACE to one"
        )
    return ws.root, Check("workspace", "ok", f"{ws.root} (from {ws.source.said})")


def store_check(root: Path, store_url: str | None = None) -> Check:
    """The store `homeport serve` would use for `root`: its team server, a PostgreSQL store, or its SQLite file."""
    from homeport.cli._compose import default_trust_file
    from homeport.core.stores import locate_store, split_store_option
    from homeport.errors import HomeportError

    try:
        store_url, named_file = split_store_option(store_url, Path.cwd())
    except HomeportError as exc:
        return Check("store", "fail", exc.message, "fix --store / HOMEPORT_STORE")
    location = locate_store(root, store_url, default_trust_file(), named_file)
    if location.kind == "unknown":
        return Check("store", "fail", location.error or "unknown", "fix the configuration it names")
    if location.kind == "team":
        return team_check(root)
    if location.kind == "postgresql":
        assert store_url is not None
        return postgres_check(location, store_url)
    if named_file is not None and location.error is not None:
        return Check(
            "store",
            "fail",
            f"{named_file}: {location.error}",
            "give this project its own --store file, or leave --store out (each project keeps its own store)",
        )
    return sqlite_check(root, named_file)


def trust_checks(root: Path) -> list[Check]:
    """A team server the project's config names: trusted by this user here, or waiting (and the command)."""
    from homeport.cli._compose import default_trust_file
    from homeport.errors import HomeportError
    from homeport.mesh.team import TeamRouter
    from homeport.workspace.trust import TrustBook

    router = TeamRouter(dict(os.environ), TrustBook(default_trust_file()))
    try:
        waiting = router.waiting(root)
        trusted = router.trusted_url(root)
    except HomeportError as exc:
        return [Check("trust", "fail", exc.message, "fix the file it names")]
    if waiting is not None:
        fix = f"if you trust that server for this project: `{waiting.command}`"
        return [Check("trust", "warn", waiting.situation(), fix)]
    if trusted is not None:
        return [Check("trust", "ok", f"the team server {trusted} is trusted for this project on this machine")]
    return []


def team_check(root: Path) -> Check:
    """One read of the project's decisions on its team server, with the token a stdio server would send."""
    from homeport.cli._compose import default_trust_file
    from homeport.core.pipeline import owners_answer
    from homeport.errors import HomeportError
    from homeport.mesh.team import KEYRING_SERVICE, TeamRouter
    from homeport.workspace.project import team_config
    from homeport.workspace.trust import TrustBook, trust_command

    book = TrustBook(default_trust_file())
    router = TeamRouter(dict(os.environ), book)
    try:
        route = router.route(root)
        assert route is not None
        owners_answer(router.forward_blocking(route, "get_decisions", {"limit": 1}))
    except HomeportError as exc:
        team = team_config(root)
        assert team is not None
        record = book.record_for(root)
        token_env = record.token_env if record is not None else None
        token_hint = (
            f"set {token_env} (or `{trust_command(root)} --keyring`) to a token the team server accepts"
            if token_env
            else f"`keyring set {KEYRING_SERVICE} {team.url}` with a token the team server accepts"
        )
        if exc.code == "team_server_unavailable" and not any(f"HTTP {s}" in exc.message for s in (401, 403)):
            fix = f"start the team server at {team.url}, or correct [team] url in {team.config_path}"
        else:
            fix = token_hint
        return Check("store", "fail", exc.message, fix)
    finally:
        router.close()
    return Check(
        "store", "ok", f"team server {route.url}, project {route.key}: answers (token from {route.token_from})"
    )


def postgres_check(location: Any, store_url: str) -> Check:
    """The PostgreSQL store, read-only: reachable, this workspace's schema and revision, and no workspace
    at a revision this Homeport does not know (`serve` refuses such a database at start)."""
    from homeport.core.stores import check_known_revision, database_workspaces, schema_revision
    from homeport.errors import StoreTooNewError

    if location.error is not None:
        return Check(
            "store",
            "fail",
            location.error,
            "start PostgreSQL there, or correct the URL given with --store or HOMEPORT_STORE",
        )
    try:
        registered = database_workspaces(store_url)
    except Exception as exc:  # the database went away since `locate_store` asked it
        return Check("store", "fail", str(exc), "start PostgreSQL there, or correct --store / HOMEPORT_STORE")
    where = f"{location.where}, schema {location.schema}"
    for key, (_, revision) in sorted(registered.items()):
        try:
            check_known_revision(revision, f"{location.where} (workspace {key})")
        except StoreTooNewError as exc:
            return Check(
                "store",
                "fail",
                exc.message,
                "upgrade Homeport (pip install -U homeport) on every machine that uses this store",
            )
    if not location.exists:
        return Check("store", "ok", f"{where} not created yet (the first write creates it)")
    if location.revision != schema_revision():
        return Check(
            "store",
            "warn",
            f"{where} is at schema revision {location.revision}; this Homeport uses {schema_revision()}",
            "run `homeport migrate --store URL` (or let the next call migrate it)",
        )
    return Check("store", "ok", f"{where} (schema revision {location.revision})")


def sqlite_check(root: Path, named_file: Path | None = None) -> Check:
    """The store opened read-only: a regular file, `PRAGMA integrity_check`, the schema revision."""
    import sqlite3

    from homeport.core.stores import schema_revision, store_file

    path = named_file or store_file(root)
    try:
        if path.is_symlink() or (path.exists() and not path.is_file()):
            return Check(
                "store", "fail", f"{path} is not a regular file", "remove it; a project's store must be its own file"
            )
        if not path.exists():
            return Check("store", "ok", f"{path} not created yet (the first write creates it)")
        with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=5) as conn:
            verdict = [row[0] for row in conn.execute("PRAGMA integrity_check").fetchall()]
            try:
                row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
            except sqlite3.OperationalError:
                row = None
    except sqlite3.Error as exc:
        return Check(
            "store",
            "fail",
            f"{path} cannot be read: {exc}",
            "move it aside (homeport creates a new one) and re-import an export if you have one",
        )
    if verdict != ["ok"]:
        return Check(
            "store",
            "fail",
            f"{path} is damaged: {'; '.join(verdict[:3])}",
            "move it aside and re-import an export (`homeport import`), or recover it with `sqlite3 .recover`",
        )
    revision = row[0] if row else None
    if revision is None:
        return Check("store", "fail", f"{path} is not a Homeport store (no schema revision)", "move it aside")
    if revision != schema_revision():
        return Check(
            "store",
            "warn",
            f"{path} is at schema revision {revision}; this Homeport uses {schema_revision()}",
            "an older store is migrated on the next write; a newer one needs a newer Homeport",
        )
    return Check("store", "ok", f"{path} (integrity ok, schema revision {revision})")


# -- registry ------------------------------------------------------------------------------------


def registry_check() -> Check:
    """The instance registry read as it is, without the lock and without pruning (`homeport status` prunes).

    Read as every reader reads it (a FIFO is not waited on, a state directory another user could
    change is refused), and an entry counts as live only when its endpoint proves it is the owner
    that registered there: a pid answered on /healthz is public.
    """
    from homeport.cli._compose import default_state_dir
    from homeport.errors import RegistryError, UntrustedStateError
    from homeport.registry import InstanceRegistry, Liveness

    state_dir = default_state_dir().expanduser().absolute()
    path = state_dir / "registry.json"
    registry = InstanceRegistry(state_dir)
    try:
        state = registry.peek()
    except UntrustedStateError as exc:
        return Check(
            "registry", "fail", exc.message, "fix the state directory as the message says, or pass --state-dir"
        )
    except RegistryError as exc:
        return Check(
            "registry",
            "warn",
            f"{path} is unreadable ({exc.message})",
            "the next `homeport serve --own` or `homeport status` rebuilds it from the live instances",
        )
    if not state.owners:
        return Check("registry", "ok", f"no instances registered ({path})")
    is_live = Liveness(registry.owner_secret)
    live: list[str] = []
    stale: list[str] = []
    for (pid, endpoint), (owner, roots) in state.instances().items():
        (live if is_live(owner) else stale).append(f"pid {pid} at {endpoint} ({len(roots)} dir)")
    if stale:
        return Check(
            "registry",
            "warn",
            f"{len(live)} live, {len(stale)} stale or unproven: {', '.join(stale)}",
            "run `homeport status` to remove the entries that are gone or cannot prove they are their owner",
        )
    return Check("registry", "ok", f"{len(live)} live instance(s): {', '.join(live)} ({path})")


# -- project database ----------------------------------------------------------------------------


def database_check(root: Path) -> Check:
    from homeport.cli._compose import default_trust_file
    from homeport.errors import DatabaseNotAllowedError, DatabaseNotConfiguredError, HomeportError
    from homeport.projectdb import ProjectDatabases
    from homeport.workspace.trust import TrustBook, trust_command

    book = TrustBook(default_trust_file())
    with ProjectDatabases(dict(os.environ), approves_remote=book.approves_database_hosts) as databases:
        try:
            source = databases.discover(root)
        except DatabaseNotConfiguredError:
            return Check("database", "ok", "no project database configured (the db tools stay unused)")
        except DatabaseNotAllowedError as exc:  # a host off this machine, waiting for the user's trust
            return Check("database", "warn", exc.message, f"if you trust it: `{trust_command(root)}`")
        except HomeportError as exc:
            return Check("database", "fail", exc.message, "fix the configuration it names")
        try:
            databases.run_query(root, "SELECT 1")
            access = databases.host_access(root)
        except HomeportError as exc:
            return Check(
                "database",
                "fail",
                exc.message,
                f"start the database server, or correct the URL in {source.origin}",
            )
    writes = f"; its account may also write ({', '.join(access.writes)})" if access and access.writes else ""
    if access is not None and access.touches_host_files:
        # The guard is one line, the read-only transaction another; the account is the one that holds.
        return Check(
            "database",
            "warn",
            f"{source.describe()} answers SELECT 1, but its account {access.account} can read or write files on "
            f"the database host ({', '.join(access.host_files)}){writes}: a server for remote callers (--http) "
            "refuses run_query on it unless started with --allow-database-file-access, and over stdio the first "
            "result of a session says so",
            access.advice,
        )
    return Check("database", "ok", f"{source.describe()} answers SELECT 1{writes}")


# -- client configurations -----------------------------------------------------------------------


def client_checks(root: Path | None, executable: str | None) -> list[Check]:
    """Each MCP server entry that mentions homeport in the client configurations found, and its command."""
    home = Path.home()
    places: list[tuple[str, Path]] = [("Claude Code", home / ".claude.json"), ("Cursor", home / ".cursor" / "mcp.json")]
    if root is not None:
        places += [
            ("Claude Code", root / ".mcp.json"),
            ("VS Code", root / ".vscode" / "mcp.json"),
            ("Cursor", root / ".cursor" / "mcp.json"),
        ]
    checks: list[Check] = []
    for client, path in places:
        if not path.is_file():
            continue
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            checks.append(Check("client", "warn", f"{client}: {path} is not readable JSON ({exc})", "fix the file"))
            continue
        for where, server in _homeport_servers(document):
            check = _server_check(client, path, where, server, executable)
            if check.status == "ok" and root is not None and path.is_relative_to(root):
                check = _project_check(check, client, root, server)
            checks.append(check)
    if not checks:  # a SessionStart hook alone gives the agent context, not the memory tools
        checks.append(
            Check(
                "client",
                "warn",
                "no MCP client configuration found that starts homeport",
                "connect a client: `homeport setup claude-code|vscode|cursor` in the project, "
                "or `homeport hooks show codex`",
            )
        )
    return checks + _hook_checks(root)


def _project_check(check: Check, client: str, root: Path, server: dict[str, Any]) -> Check:
    """A project's own entry whose `--workspace` names another directory serves that one, not this project."""
    args = server.get("args")
    if not isinstance(args, list) or "--workspace" not in args[:-1]:
        return check
    named = args[args.index("--workspace") + 1]
    if not isinstance(named, str) or not os.path.isabs(named) or _same_file(named, str(root)):
        return check
    setup = {"Claude Code": "claude-code", "VS Code": "vscode", "Cursor": "cursor"}[client]
    return Check(
        "client",
        "warn",
        f"{check.detail}, but for the workspace {named}, not this project {root}",
        f"run `homeport setup {setup}` in {root} (or correct --workspace by hand)",
    )


def _hook_checks(root: Path | None) -> list[Check]:
    """The Claude Code SessionStart hooks `homeport hooks install` wrote, and whether their executable exists."""
    import shlex

    from homeport.cli.hooks import is_homeport_hook

    paths = [Path.home() / ".claude" / "settings.json"]
    if root is not None:
        paths.append(root / ".claude" / "settings.json")
    checks = []
    for path in paths:
        try:
            hooks_table = json.loads(path.read_text(encoding="utf-8")).get("hooks", {})
            groups = hooks_table.get("SessionStart", [])
            commands = [h["command"] for g in groups for h in g.get("hooks", []) if is_homeport_hook(h)]
        except (OSError, ValueError, AttributeError, TypeError):
            continue  # no file, or one Claude Code itself will complain about
        for command in commands:
            program = shlex.split(command)[0]
            if os.path.isfile(program) and os.access(program, os.X_OK):
                checks.append(Check("hook", "ok", f"Claude Code: {path} SessionStart runs {program}"))
            else:
                checks.append(
                    Check(
                        "hook",
                        "fail",
                        f"Claude Code: {path} SessionStart runs {program}, which does not exist",
                        "run `homeport hooks install claude-code` again from the installation you use",
                    )
                )
    return checks


def _homeport_servers(document: Any) -> list[tuple[str, dict[str, Any]]]:
    """(location, entry) of each server entry mentioning homeport: `mcpServers`, `servers`, and
    Claude Code's per-project `projects.<dir>.mcpServers`."""
    if not isinstance(document, dict):
        return []
    tables: list[tuple[str, Any]] = [("mcpServers", document.get("mcpServers")), ("servers", document.get("servers"))]
    projects = document.get("projects")
    if isinstance(projects, dict):
        tables += [
            (f"projects.{d}.mcpServers", p.get("mcpServers")) for d, p in projects.items() if isinstance(p, dict)
        ]
    found = []
    for table_name, table in tables:
        if not isinstance(table, dict):
            continue
        for name, entry in table.items():
            if isinstance(entry, dict) and "homeport" in f"{name} {json.dumps(entry)}".lower():
                found.append((f"{table_name}.{name}", entry))
    return found


def _server_check(client: str, path: Path, where: str, server: dict[str, Any], executable: str | None) -> Check:
    label = f"{client}: {path} {where}"
    if "url" in server:
        return Check("client", "ok", f"{label} connects to {server['url']}")
    command = server.get("command")
    if not isinstance(command, str) or not command:
        return Check("client", "fail", f"{label} names no command", f'set "command": "{executable or "homeport"}"')
    better = f'set "command" to {executable}' if executable else "install homeport and name it by absolute path"
    if os.path.isabs(command):
        if os.path.isfile(command) and os.access(command, os.X_OK):
            return Check("client", "ok", f"{label} runs {command}")
        return Check("client", "fail", f"{label} runs {command}, which does not exist", better)
    found = shutil.which(command)
    if found is None:
        return Check("client", "fail", f"{label} runs `{command}`, which is not on PATH", better)
    if (Path(found).parent.parent / "pyvenv.cfg").is_file():
        return Check(
            "client",
            "warn",
            f"{label} runs `{command}` by name, found here only in the virtual environment {Path(found).parent.parent}",
            f"an editor started outside this shell will not find it; {better}",
        )
    return Check("client", "ok", f"{label} runs `{command}` ({found})")
