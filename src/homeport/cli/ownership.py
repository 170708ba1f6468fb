"""`homeport serve --http --own`: register the served workspaces in the instance registry; `homeport status`."""

from __future__ import annotations

import atexit
import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource
from rich.console import Console
from rich.table import Table
from rich.text import Text

from homeport import __version__
from homeport.cli._compose import default_state_dir, domain_errors, shell_path
from homeport.errors import ConfigError
from homeport.registry import InstanceRegistry, Owner
from homeport.workspace import WorkspaceGuard, canonical_directory, default_denied, is_within

__all__ = ["own_workspaces", "state_dir_option", "status"]


def state_dir_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--state-dir",
        envvar="HOMEPORT_STATE_DIR",
        metavar="DIR",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Where the registry of running instances is kept (env: HOMEPORT_STATE_DIR). "
        "Default: the platform's user state directory (~/.local/state/homeport on Linux).",
    )(fn)


def registry_at(state_dir: Path | None) -> InstanceRegistry:
    return InstanceRegistry((state_dir or default_state_dir()).expanduser().absolute())


def own_workspaces(
    *,
    own: bool,
    dirs: tuple[str, ...],
    take_over: bool,
    use_http: bool,
    allow_roots: tuple[str, ...],
    host: str,
    port: int,
    state_dir: Path | None,
    auth: bool = False,
) -> tuple[int, Path | None]:
    """The port to listen on, and the owner's secret file (with --own). With --own, first make the
    owner's secret, then register DIRS (default: the project the current directory lies in, else the
    allowed roots) as owned by this process, on the
    port they had last time or the first free one from 28001, and remove the entries again when the
    process exits (SIGTERM and SIGINT end uvicorn cleanly).

    The secret (STATE_DIR/secrets/PID.key, only this user can read it) is how the owner proves to the
    user's other instances that it is the one registered, before they send it a call
    (`registry.proof`); with --auth they also present it as their bearer token, with the calling
    agent's name.

    Raises:
        click.UsageError: --own without --http, DIRS or --take-over without --own.
        ConfigError: a DIR is not a directory inside the allowed roots.
        WorkspaceOwnedError: another live instance owns one of them (without --take-over).
        UntrustedStateError: another user could change the state directory (the message names the fix).
    """
    if not own:
        if dirs or take_over:
            raise click.UsageError("DIR arguments and --take-over go with --own")
        return port, None
    if not use_http:
        raise click.UsageError("--own needs --http: an owner is reached over HTTP by other instances")
    allowed = [canonical_directory(shell_path(p) or p) for p in allow_roots] or [canonical_directory(os.getcwd())]
    owned = [canonical_directory(shell_path(d) or d) for d in dirs] or _project_here(allowed)
    outside = [str(d) for d in owned if not any(is_within(d, a) for a in allowed)]
    if outside:
        raise ConfigError(
            f"--own {', '.join(outside)}: not inside the allowed roots {', '.join(map(str, allowed))}; "
            "own directories this server may serve, or add --allow-root"
        )
    source = click.get_current_context().get_parameter_source("port")
    given = source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
    requested = port if given and port != 0 else None  # --port 0 means "choose one", and the registry does
    registry = registry_at(state_dir)
    secret_file = registry.mint_owner_secret()
    atexit.register(registry.release)  # also removes the secret if owning fails below
    owner = registry.own(
        owned, host=host, requested_port=requested, version=__version__, take_over=take_over, auth=auth
    )
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        # uvicorn stops on SIGTERM, then raises it again with this handler back in place: exiting
        # through SystemExit (not the default, which kills) is what runs the atexit release.
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    click.echo(f"homeport pid {owner.pid} owns {', '.join(map(str, owned))} at {owner.endpoint}", err=True)
    assert owner.port is not None
    return owner.port, secret_file


def _project_here(allowed: list[Path]) -> list[Path]:
    """What `--own` without DIR owns: the project the current directory lies in, found as a call from
    here finds it (the nearest .homeport/ or git repository, never above the allowed root); outside a
    project, or outside the allowed roots, the allowed roots themselves.

    Raises:
        WorkspaceDeniedError: the nearest .homeport is a symlink or not a directory.
    """
    here = canonical_directory(os.getcwd())
    if not any(is_within(here, a) for a in allowed):
        return allowed
    found = WorkspaceGuard(default_denied(Path.home()), allow_roots=tuple(allowed)).project_root(here)
    return [found.path] if found.is_project else allowed


def _exit_on_sigterm(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@state_dir_option
@domain_errors
def status(as_json: bool, state_dir: Path | None) -> None:
    """List the running Homeport instances: endpoint, pid, uptime and the workspaces each owns.

    Each is checked by asking its endpoint's /healthz for its pid; entries of instances that are
    gone are removed from the registry as they are found.
    """
    registry = registry_at(state_dir)
    found, live = registry.survey()
    now = time.time()
    instances = [_instance_json(owner, roots, alive, now) for owner, roots, alive in found]
    if as_json:
        report = {"registry": str(registry.path), "instances": instances, "ports": dict(sorted(live.ports.items()))}
        click.echo(json.dumps(report, indent=2))
        return
    console = Console(highlight=False, soft_wrap=True)
    if not instances:
        console.print(Text(f"no running instances (registry {registry.path})", style="dim"))
        return
    table = Table(box=None, pad_edge=False)
    for column in ("pid", "endpoint", "live", "uptime", "version", "owns"):
        table.add_column(column)
    for item in instances:
        table.add_row(
            Text(str(item["pid"])),
            Text(item["endpoint"]),
            Text("yes" if item["live"] else "no (pruned)", style="green" if item["live"] else "red"),
            Text(_duration(item["uptime_seconds"])),
            Text(item["version"]),
            Text("\n".join(item["owns"])),
        )
    console.print(table)


def _instance_json(owner: Owner, roots: list[str], alive: bool, now: float) -> dict[str, Any]:
    return {
        "pid": owner.pid,
        "endpoint": owner.endpoint,
        "live": alive,
        "started_at": owner.started_at,
        "uptime_seconds": round(max(0.0, now - owner.started_at), 1),
        "version": owner.version,
        "owns": roots,
    }


def _duration(seconds: float) -> str:
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
