"""`homeport serve`: MCP over stdio, or Streamable HTTP for many clients."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from homeport.cli._compose import (
    data_dir_option,
    domain_errors,
    serve_settings,
    tools_option,
    workspace_options,
)
from homeport.cli.ownership import own_workspaces, state_dir_option
from homeport.server import build_http_app, build_runtime, build_server
from homeport.workspace import CallInputs

__all__ = ["serve"]


@click.command()
@click.option("--http", "use_http", is_flag=True, help="Serve Streamable HTTP at /mcp instead of stdio.")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="HTTP address to bind. Keep the default unless clients on other machines must connect.",
)
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="HTTP port.")
@click.option(
    "--auth",
    is_flag=True,
    envvar="HOMEPORT_AUTH",
    help="HTTP: require a bearer token from `homeport tokens add AGENT` on every request; the token "
    "names the calling agent for the file tools.",
)
@click.option(
    "--agent",
    envvar="HOMEPORT_AGENT",
    metavar="ID",
    help="stdio: the agent this server acts for in the file tools (env: HOMEPORT_AGENT).",
)
@click.option(
    "--own",
    is_flag=True,
    help="HTTP: register DIR... (default: the allowed roots) as owned by this server in the instance registry, "
    "on the port they had last time or the first free one from 50001 (unless --port is given).",
)
@click.option("--take-over", is_flag=True, help="With --own: replace a live owner of the same directory.")
@click.argument("own_dirs", metavar="[DIR...]", nargs=-1)
@state_dir_option
@workspace_options
@tools_option
@data_dir_option
@domain_errors
def serve(
    use_http: bool,
    host: str,
    port: int,
    auth: bool,
    agent: str | None,
    workspace: str | None,
    allow_roots: tuple[str, ...],
    require_explicit_workspace: bool,
    tools: str,
    data_dir: Path | None,
    directory_file: Path | None,
    own: bool,
    take_over: bool,
    own_dirs: tuple[str, ...],
    state_dir: Path | None,
) -> None:
    """Run the MCP server.

    Without --http it speaks MCP on stdin/stdout, which is what Claude Code, Cursor, VS Code
    and Gemini CLI launch. With --http one process serves every project under the allowed
    roots; clients name theirs with the X-Workspace-Id header, ?project_path= or the
    workspace argument. Health: GET /healthz.
    """
    port = own_workspaces(
        own=own,
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
        auth=auth,
        state_dir=state_dir,
    )
    if auth and not use_http:
        raise click.UsageError("--auth applies to --http; over stdio name the agent with --agent")
    runtime = build_runtime(settings)
    try:
        if settings.workspace:
            # Fail at start, not on the first call, when the configured default cannot be served.
            runtime.resolve(CallInputs(), write=False)
        mcp = build_server(runtime)
        if not use_http:
            mcp.run("stdio")
            return
        import uvicorn

        app = build_http_app(mcp, runtime)
        roots = ", ".join(str(p) for p in runtime.resolver.settings.guard.allow_roots)
        click.echo(
            f"homeport {host}:{port}: MCP at http://{_url_host(host)}:{port}/mcp, health at /healthz; "
            f"serving workspaces under {roots}; {'bearer tokens required' if auth else 'no auth'}",
            err=True,
        )
        uvicorn.run(app, host=host, port=port, log_level="warning", lifespan="on")
    finally:
        runtime.close()
        sys.stderr.flush()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
