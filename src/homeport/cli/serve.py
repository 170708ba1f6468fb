"""`homeport serve`: MCP over stdio, or Streamable HTTP for many clients."""

from __future__ import annotations

import dataclasses
import functools
import logging
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from homeport.cli._compose import (
    dashboard_app,
    data_dir_option,
    domain_errors,
    serve_settings,
    store_option,
    tools_option,
    workspace_options,
)
from homeport.cli.ownership import own_workspaces, state_dir_option
from homeport.workspace import CallInputs

if TYPE_CHECKING:
    from homeport.core.runtime import Runtime

__all__ = ["serve"]

_SECONDS = click.FloatRange(min=0.1, max=3600)


class _AuthMethod(click.ParamType):  # type: ignore[type-arg]  # generic only in newer click stubs
    """`tokens` or `jwt`; also the values HOMEPORT_AUTH had as a yes/no switch (1, true, yes, on: tokens)."""

    name = "auth"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> str | None:
        text = str(value).strip().lower()
        if text in ("tokens", "jwt"):
            return text
        if text in ("1", "true", "yes", "on"):
            return "tokens"
        if text in ("", "0", "false", "no", "off"):
            return None
        self.fail(f"{value!r} is not an auth method; use --auth tokens or --auth jwt", param, ctx)


class _ServeCommand(click.Command):
    """`--auth` was a switch: `serve --http --auth DIR` still means tokens, with DIR as a directory to own."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        rewritten: list[str] = []
        for i, arg in enumerate(args):
            following = args[i + 1] if i + 1 < len(args) else None
            if arg == "--auth" and following not in ("tokens", "jwt"):
                arg = "--auth=tokens"
            rewritten.append(arg)
        return super().parse_args(ctx, rewritten)


@click.command(cls=_ServeCommand)
@click.option("--http", "use_http", is_flag=True, help="Serve Streamable HTTP at /mcp instead of stdio.")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="HTTP address to bind. Any address beyond loopback (0.0.0.0, a LAN address) needs --auth, "
    "or --insecure-no-auth.",
)
@click.option(
    "--port",
    default=8765,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="HTTP port; 0 picks a free one (printed on stderr).",
)
@click.option(
    "--public-url",
    "public_urls",
    multiple=True,
    metavar="URL",
    help="HTTP: a URL clients on other machines use to reach this server, e.g. https://mem.example.com "
    "(repeatable). Its host is accepted in the Host and Origin headers besides loopback; the first "
    "one names the server in the auth metadata.",
)
@click.option(
    "--auth",
    type=_AuthMethod(),
    is_flag=False,
    flag_value="tokens",
    default=None,
    envvar="HOMEPORT_AUTH",
    metavar="[tokens|jwt]",
    help="HTTP: require a bearer token on every request. `--auth` alone or `--auth tokens`: tokens from "
    "`homeport tokens add AGENT`, each naming an agent. `--auth jwt`: JWTs signed by an issuer's keys "
    "(--jwks-url, --issuer, --audience); the token's `sub` is the principal.",
)
@click.option("--jwks-url", metavar="URL", help="--auth jwt: where the issuer publishes its signing keys (JWKS).")
@click.option("--issuer", "jwt_issuer", metavar="ISS", help="--auth jwt: the `iss` every token must carry.")
@click.option(
    "--audience",
    "jwt_audience",
    metavar="URL",
    help="--auth jwt: the `aud` every token must hold: this server's MCP URL, as clients reach it "
    "(default: the first --public-url, else the bound address, followed by /mcp).",
)
@click.option(
    "--access-rules",
    "access_rules",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="With --auth: a TOML file saying which principals may call which tools and read or write which "
    "workspaces (docs/access-rules.md); re-read when it changes. Without it, the directory's workspace roots. "
    "Over stdio with --agent: the rules naming that agent apply to it (a policy for your own agents).",
)
@click.option(
    "--insecure-no-auth",
    is_flag=True,
    help="HTTP: serve other machines without tokens (anyone who can reach the port can read and write "
    "every project under the allowed roots).",
)
@click.option(
    "--trust-workspace-config",
    is_flag=True,
    help="HTTP: read each workspace's database configuration as over stdio: ${VAR} from this server's "
    "environment, any database host, allow_writes honoured. Only for workspaces you control, such as "
    "an owner (--own) started with a project's database credentials.",
)
@click.option(
    "--allow-database-file-access",
    is_flag=True,
    help="HTTP: let run_query use a project database account that can read or write files on the database "
    "host (MariaDB FILE or SUPER, a PostgreSQL superuser or pg_read_server_files member); refused by default, "
    "since callers are remote. Better: give the workspace a read-only account (docs/project-database.md).",
)
@click.option(
    "--logical-workspaces",
    is_flag=True,
    help="HTTP: workspaces are project keys such as github.com/acme/api (X-Workspace-Id, ?project_path=, the "
    "workspace argument), never paths on this machine; their memory is kept under the data directory. For a "
    "team server that projects on other machines name with [team] url in their .homeport/config.toml.",
)
@click.option(
    "--header-timeout",
    default=10.0,
    show_default=True,
    type=_SECONDS,
    metavar="SECONDS",
    help="HTTP: a client that has not sent its request headers by then gets 408 and is disconnected.",
)
@click.option(
    "--body-timeout",
    default=30.0,
    show_default=True,
    type=_SECONDS,
    metavar="SECONDS",
    help="HTTP: the same for the request body, counted from the end of the headers.",
)
@click.option(
    "--read-only",
    is_flag=True,
    help="Refuse every tool that writes, over MCP and in the dashboard at /ui: for looking, not changing.",
)
@click.option(
    "--agent",
    envvar="HOMEPORT_AGENT",
    metavar="ID",
    help="stdio: the agent this server acts for in the file tools, and the principal --access-rules "
    "applies to (env: HOMEPORT_AGENT).",
)
@click.option(
    "--own",
    is_flag=True,
    help="HTTP: register DIR... as owned by this server in the instance registry, on the port they had last "
    "time or the first free one from 28001 (unless --port is given). Without DIR: the project the current "
    "directory lies in (its .homeport/ or git root), else the allowed roots.",
)
@click.option("--take-over", is_flag=True, help="With --own: replace a live owner of the same directory.")
@click.option(
    "--no-daemon",
    "no_daemon",
    is_flag=True,
    envvar="HOMEPORT_NO_DAEMON",
    help="Serve the workspaces of a running `homeport daemon` here instead of forwarding their calls to it "
    "(env: HOMEPORT_NO_DAEMON).",
)
@store_option(
    "Keep every workspace's memory in this PostgreSQL database (postgresql://user@host/db), one schema "
    "per workspace, instead of a SQLite file in each (env: HOMEPORT_STORE). Apply migrations first with "
    "`homeport migrate --store URL`, or let the first call to a workspace do it. Or keep one project's "
    "memory in one SQLite file: sqlite:///path/to/file.db (four slashes for an absolute path); the first "
    "project served is recorded in it and others are refused. A project whose .homeport/config.toml names "
    "a team server sends its memory there instead (stdio)."
)
@click.argument("own_dirs", metavar="[DIR...]", nargs=-1)
@state_dir_option
@click.option("--quiet", "-q", is_flag=True, help="Print nothing on stderr at start.")
@workspace_options
@tools_option
@data_dir_option
@domain_errors
def serve(
    use_http: bool,
    host: str,
    port: int,
    public_urls: tuple[str, ...],
    auth: str | None,
    jwks_url: str | None,
    jwt_issuer: str | None,
    jwt_audience: str | None,
    access_rules: Path | None,
    insecure_no_auth: bool,
    trust_workspace_config: bool,
    allow_database_file_access: bool,
    logical_workspaces: bool,
    header_timeout: float,
    body_timeout: float,
    read_only: bool,
    agent: str | None,
    quiet: bool,
    workspace: str | None,
    allow_roots: tuple[str, ...],
    require_explicit_workspace: bool,
    tools: str,
    data_dir: Path | None,
    directory_file: Path | None,
    own: bool,
    take_over: bool,
    no_daemon: bool,
    store_url: str | None,
    own_dirs: tuple[str, ...],
    state_dir: Path | None,
) -> None:
    """Run the MCP server.

    Without --http it speaks MCP on stdin/stdout, which is what Claude Code, Cursor, VS Code
    and Gemini CLI launch; it says on stderr which workspace calls default to and why.
    With --http one process serves every project under the allowed roots; clients name theirs
    with the X-Workspace-Id header, ?project_path= or the workspace argument. Health: GET /healthz.
    Ctrl-C or SIGTERM stops it: calls in flight get 5 s to finish; any still running then are
    abandoned unanswered (never acknowledged) and it exits within 3 s more.
    """
    # The server stack loads when it is started, not for `homeport serve --help`.
    from mcp import MCPDeprecationWarning

    from homeport.core import build_runtime
    from homeport.server import build_http_app, build_server
    from homeport.server.http_exposure import check_exposure, parse_public_url
    from homeport.server.http_run import bind, run_http
    from homeport.server.stdio import describe_default_workspace, serve_stdio

    # Homeport asks 2025-era clients for their roots on purpose; the SDK's deprecation notice for that
    # capability (SEP-2577) would otherwise land in the user's editor log on every call that reads them.
    warnings.filterwarnings("ignore", message="The roots capability is deprecated", category=MCPDeprecationWarning)
    if not sys.stderr.isatty():
        # Editors and service managers keep stderr in a file. The SDK logs through Rich, which wraps
        # each message (and boxes tracebacks) to a narrow width there; plain lines stay whole and
        # greppable. The SDK only sets up logging when nothing has yet, so this comes first.
        logging.basicConfig(
            level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
        )

    if not use_http and (auth or public_urls or insecure_no_auth):
        raise click.UsageError(
            "--auth, --public-url and --insecure-no-auth apply to --http; over stdio name the agent with --agent"
        )
    if not use_http and access_rules is not None and not agent:
        raise click.UsageError(
            "--access-rules over stdio applies to the agent named with --agent NAME (or HOMEPORT_AGENT): "
            "the rules that name it bound its tools and workspaces"
        )
    if logical_workspaces and (not use_http or own):
        raise click.UsageError(
            "--logical-workspaces applies to --http without --own: a stdio server serves the project it runs in, "
            "and forwards its memory calls to a team server named by [team] url in .homeport/config.toml"
        )
    if use_http and access_rules is not None and not auth:
        raise click.UsageError("--access-rules needs --auth over HTTP: the rules name verified principals")
    if auth != "jwt" and (jwks_url or jwt_issuer or jwt_audience):
        raise click.UsageError("--jwks-url, --issuer and --audience apply to --auth jwt")
    if auth == "jwt" and not (jwks_url and jwt_issuer):
        raise click.UsageError("--auth jwt needs --jwks-url URL and --issuer ISS (and takes --audience URL)")
    for url in public_urls:
        parse_public_url(url)
    port, owner_token_file = own_workspaces(
        own=own,
        auth=auth is not None,
        dirs=own_dirs,
        take_over=take_over,
        use_http=use_http,
        allow_roots=allow_roots,
        host=host,
        port=port,
        state_dir=state_dir,
    )
    settings = serve_settings(
        transport="http" if use_http else "stdio",
        workspace=workspace,
        allow_roots=allow_roots,
        require_explicit_workspace=require_explicit_workspace,
        host=host,
        port=port,
        tools=tools,
        data_dir=data_dir,
        directory_file=directory_file,
        agent=agent,
        auth=auth is not None,
        state_dir=state_dir,
        store_url=store_url,
    )
    settings = dataclasses.replace(
        settings,
        public_urls=public_urls,
        insecure_no_auth=insecure_no_auth,
        trust_workspace_config=True if trust_workspace_config else None,
        allow_database_file_access=allow_database_file_access,
        header_timeout_seconds=header_timeout,
        body_timeout_seconds=body_timeout,
        use_daemon=not no_daemon,
        owner_token_file=owner_token_file,
        logical_workspaces=logical_workspaces,
        auth_method="jwt" if auth == "jwt" else "tokens",
        jwks_url=jwks_url,
        jwt_issuer=jwt_issuer,
        jwt_audience=jwt_audience,
        access_rules_file=access_rules.absolute() if access_rules is not None else None,
        read_only=read_only,
    )
    runtime = build_runtime(settings)
    try:
        if not use_http and runtime.access.rules is not None:
            runtime.access.rules.get()  # a broken rules file stops the start here, with one clear line
        if settings.workspace:
            # Fail at start, not on the first call, when the configured default cannot be served.
            runtime.resolve(CallInputs(), write=False)
        if not use_http:
            mcp = build_server(runtime)
            if not quiet:
                kept = f"; memory in {settings.store_file}" if settings.store_file is not None else ""
                click.echo(f"homeport: stdio; {describe_default_workspace(runtime)}{kept}", err=True)
                if sys.stdin.isatty():
                    click.echo(
                        "homeport: reading MCP messages (JSON-RPC, one per line) on stdin, as editors and agents "
                        "launch it; `homeport serve --http` serves many clients; Ctrl-C to stop",
                        err=True,
                    )
            serve_stdio(mcp, on_initialize=None if quiet else functools.partial(_say_roots, runtime))
            return
        check_exposure(settings, runtime.resolver.settings.guard)
        sock = bind(host, port)
        runtime.settings = settings = dataclasses.replace(settings, port=sock.getsockname()[1])
        mcp = build_server(runtime)
        from homeport.server.devdb_rest import devdb_routes

        app = build_http_app(mcp, runtime, dashboard=dashboard_app, rest=devdb_routes)

        def ready() -> None:
            if not quiet:
                click.echo(_banner(runtime), err=True)

        run_http(app, sock, settings, ready)
    except KeyboardInterrupt:
        pass  # Ctrl-C while starting or over stdio: nothing was being answered that a traceback would help
    finally:
        runtime.close()
        sys.stderr.flush()


def _say_roots(runtime: Runtime, params: dict[str, Any]) -> None:
    from homeport.server.stdio import roots_change_the_default

    said = roots_change_the_default(runtime, params)
    if said is not None:
        click.echo(f"homeport: {said}", err=True)


def _banner(runtime: Runtime) -> str:
    from homeport.core.credentials import has_tokens

    s = runtime.settings
    serving = "serving workspaces under " + ", ".join(str(p) for p in runtime.resolver.settings.guard.allow_roots)
    if s.logical_workspaces:
        serving = f"serving workspaces named by key (--logical-workspaces), kept in {s.data_dir}"
    bound = f"[{s.host}]" if ":" in s.host else s.host
    urls = [f"http://{bound}:{s.port}/mcp", *(f"{u.rstrip('/')}/mcp" for u in s.public_urls)]
    dashboard = f"http://{bound}:{s.port}/ui/"
    access = "bearer tokens required" if s.auth else "no auth"
    if s.auth and s.auth_method == "jwt":
        access = f"JWTs from {s.jwt_issuer} required"
    if s.access_rules_file is not None:
        access += f", access rules {s.access_rules_file}"
    if s.auth and s.auth_method == "tokens" and s.tokens_file is not None and not has_tokens(s.tokens_file):
        access += " (none minted yet: `homeport tokens add AGENT`)"
    note = ""
    if s.store_url:
        from homeport.core.stores import shown_url

        access += f"; memory in {shown_url(s.store_url)}"
    elif s.store_file is not None:
        access += f"; memory in {s.store_file}"
    if s.host in ("0.0.0.0", "::") and not s.public_urls:
        note = f"; other machines are answered only by a name given with --public-url http://NAME:{s.port}"
    return (
        f"homeport {bound}:{s.port}: MCP at {', '.join(urls)}, dashboard at {dashboard}, health at /healthz; "
        f"{serving}; {access}{'; read-only' if s.read_only else ''}{note}; Ctrl-C to stop"
    )
