"""Memory tools from the shell, in this process, with the resolver `homeport serve` uses over stdio.

A memory command is a click command decorated with `memory_tool`: it gets the flags every such
command shares (--json, --workspace/-w, --allow-root, --require-explicit-workspace, --no-daemon,
--store) and a `ToolCall` that resolves the workspace (current directory, --workspace /
HOMEPORT_WORKSPACE, CLAUDE_PROJECT_DIR, as the stdio server does), opens the store `serve` would
(--store / HOMEPORT_STORE: PostgreSQL; else the project's SQLite file), runs the tool and prints:
a table or tree for people, or with --json exactly what the MCP tool returns, `workspace` included.
When a running instance owns the workspace (the daemon, a `serve --http --own`), the call is sent
there, as a stdio server would send it (`--no-daemon` keeps it here unless an HTTP owner has it).
In a project whose `.homeport/config.toml` names a team server (`[team] url`), memory calls go to
that server under the project's key, with `--no-daemon` too: a local store is not that project's
memory, so a team server that does not answer fails the command rather than writing here.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from homeport.cli._compose import domain_errors, serve_settings, store_option, workspace_options
from homeport.cli._output import workspace_line

if TYPE_CHECKING:
    from homeport.core.runtime import Runtime
    from homeport.core.settings import ServeSettings
    from homeport.workspace import Workspace

__all__ = ["JSON_OPTION_HELP", "ToolCall", "allow_secrets_option", "json_or_text", "memory_tool", "parse_json"]

Result = dict[str, Any]
Render = Callable[[Console, Result], None]
# Set to 1 in the user's environment: memory commands start `homeport daemon` when none is running.
_AUTOSTART_ENV = "HOMEPORT_DAEMON_AUTOSTART"
JSON_OPTION_HELP = "Print the result as JSON (what the MCP tool returns), for scripts."


class ToolCall:
    """One memory tool call made from the shell, through the same pipeline as the MCP tool."""

    def __init__(self, settings: ServeSettings, *, as_json: bool, allow_secrets: bool = False) -> None:
        self.settings = settings
        self.as_json = as_json
        self.allow_secrets = allow_secrets
        self.progress: Callable[[int, int], None] | None = None  # (done, total) from long tools (import_from)

    @property
    def cwd(self) -> Path:
        return self.settings.cwd or Path.cwd()

    def tool(
        self,
        name: str,
        /,
        *,
        confirm: Callable[[Workspace], None] | None = None,
        here: Callable[[dict[str, Any], Runtime], dict[str, Any]] | None = None,
        **arguments: Any,
    ) -> Result:
        """Run the MCP tool `name` with `arguments` (its own argument names) and return what it returns.

        The workspace comes from --workspace / HOMEPORT_WORKSPACE, CLAUDE_PROJECT_DIR and the
        current directory, as `homeport serve` resolves it over stdio. `confirm(workspace)` runs
        before anything is changed and may abort. `here(arguments, runtime)` gives the arguments to use
        when the call is to be served in this process rather than by the daemon or another owner (a shell
        command ends when it has answered: what a long-lived server keeps loaded, it must not load).

        Raises:
            HomeportError: resolution, a guard or the store refused it; `memory_tool` prints it as one line.
            click.ClickException: the file system refused a file the tool reads or writes.
        """
        # The server stack loads here, when a tool runs, not when `--help` is asked for.
        from homeport.core import tools as _tools  # noqa: F401  (declares every tool in CATALOG)
        from homeport.core.catalog import CATALOG
        from homeport.core.pipeline import CallPipeline, LocalRequest
        from homeport.core.runtime import build_runtime

        spec = CATALOG[name]
        if self.allow_secrets and "allow_secrets" in {p.name for p in spec.parameters}:
            arguments["allow_secrets"] = True
        runtime = build_runtime(self.settings)
        try:
            request = LocalRequest(agent=self.settings.agent, progress=self.progress)
            pipeline = CallPipeline(runtime)
            if here is not None:
                inputs = request.inputs(None) if spec.takes_workspace else None
                if pipeline.decide(spec, dict(arguments), request, inputs).to == "here":
                    arguments = here(arguments, runtime)
            try:
                result: Result = pipeline.call_blocking(spec, arguments, request, confirm=confirm)
            except OSError as exc:  # export/import files; the store translates its own errors
                where = f"{exc.filename}: " if exc.filename else ""
                raise click.ClickException(f"{where}{exc.strerror or exc}") from exc
            _say_what_waits_for_trust(runtime, result)
            return result
        finally:
            runtime.close()

    def show(self, result: Result, render: Render) -> None:
        """Print `result`: JSON with --json, else the workspace line and `render`'s output."""
        if self.as_json:
            click.echo(json.dumps(result, indent=2, ensure_ascii=False))
            return
        console = Console()
        if "workspace" in result:
            console.print(workspace_line(result["workspace"]), soft_wrap=True)
        render(console, result)
        if result.get("hidden_on_other_branches"):  # decisions and patterns of branches not merged here
            from homeport.cli._output import hidden_line

            console.print(hidden_line(result), style="dim", soft_wrap=True)
        if result.get("hidden_expired"):  # archived, superseded or expired items (homeport tidy)
            n = result["hidden_expired"]
            console.print(
                f"{n} hidden: archived, superseded or expired (homeport tidy list shows the changesets; "
                "homeport history TYPE ID still reads them)",
                style="dim",
                soft_wrap=True,
            )


def _say_what_waits_for_trust(runtime: Any, result: Result) -> None:
    """A team server the project's config names that the user has not trusted: said on stderr, where the
    user sees it and a session hook's agent does not take it for part of the project's memory."""
    from homeport.errors import HomeportError

    root = result.get("workspace", {}).get("root") if isinstance(result.get("workspace"), dict) else None
    if runtime.team is None or not root:
        return
    try:
        waiting = runtime.team.waiting(Path(root))
    except HomeportError:
        return  # a broken [team] table: the call itself said so, or was not a memory call
    if waiting is not None:
        click.echo(f"homeport: {waiting.line()}", err=True)


def memory_tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Give a command the shared flags and call it as `fn(call: ToolCall, *args, **kwargs)`.

    Put it below the command's own arguments and options, right above the function.
    """

    @functools.wraps(fn)
    def command(
        *args: Any,
        as_json: bool,
        workspace: str | None,
        allow_roots: tuple[str, ...],
        require_explicit_workspace: bool,
        no_daemon: bool,
        store_url: str | None,
        **kwargs: Any,
    ) -> Any:
        settings = serve_settings(
            transport="stdio",
            workspace=workspace,
            allow_roots=allow_roots,
            require_explicit_workspace=require_explicit_workspace,
            store_url=store_url,
        )
        # background_embedding off: the command exits right away, before a model would have loaded.
        settings = dataclasses.replace(settings, use_daemon=not no_daemon, background_embedding=False)
        if not no_daemon and not store_url and os.environ.get(_AUTOSTART_ENV) == "1":  # either kind of --store
            # The user's own opt-in, never a repository's: a project's config cannot start processes here.
            from homeport.cli.daemon import autostart

            autostart(Path(workspace) if workspace and Path(workspace).is_absolute() else Path.cwd())
        allow_secrets = bool(kwargs.pop("allow_secrets", False))
        return fn(ToolCall(settings, as_json=as_json, allow_secrets=allow_secrets), *args, **kwargs)

    wrapped = workspace_options(domain_errors(command))
    wrapped = click.option(
        "--no-daemon",
        is_flag=True,
        envvar="HOMEPORT_NO_DAEMON",
        help="Open the store in this process even when a running `homeport daemon` owns the workspace "
        "(by default the command is sent to it, the workspace's one writer; with HOMEPORT_DAEMON_AUTOSTART=1 "
        "in your environment one is started on first use). Other owners still count, and "
        "a project with a team server ([team] url in .homeport/config.toml) still sends its memory there.",
    )(wrapped)
    wrapped = store_option(
        "Read and write the memory in this PostgreSQL store, as `homeport serve --store URL` does "
        "(env: HOMEPORT_STORE); a project with a team server still sends its memory there."
    )(wrapped)
    return click.option("--json", "as_json", is_flag=True, help=JSON_OPTION_HELP)(wrapped)


def allow_secrets_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`--allow-secrets` for a command that writes memory text: put it right above `@memory_tool`."""
    return click.option(
        "--allow-secrets",
        is_flag=True,
        help="Write even if the text looks like it holds a secret (API key, token, private key, password); "
        "the override is recorded in the memory.",
    )(fn)


def parse_json(text: str, *, what: str, expect: type | None = None) -> Any:
    """Parse JSON given on the command line or a file, refusing NaN and Infinity as the store does.

    Raises:
        click.BadParameter: not JSON, or not of type `expect`.
    """
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except ValueError as exc:
        raise click.BadParameter(f"{what} is not JSON: {exc}") from None
    if expect is not None and not isinstance(value, expect):
        names: dict[type, str] = {dict: "an object", list: "a list"}
        kind = names.get(expect, expect.__name__)
        raise click.BadParameter(f"{what} must be {kind}, not {type(value).__name__}")
    return value


def json_or_text(text: str) -> Any:
    """A value typed on the command line: JSON when it parses (42, true, [1, 2], {"a": 1}), else the text."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except ValueError:
        return text


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")
