"""`homeport serve`: MCP over stdio, or Streamable HTTP for many clients."""

from __future__ import annotations

import sys

import click

from homeport.cli._compose import domain_errors, serve_settings, tools_option, workspace_options
from homeport.server import build_http_app, build_runtime, build_server

__all__ = ["serve"]


@click.command()
@click.option("--http", "use_http", is_flag=True, help="Serve Streamable HTTP at /mcp instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="HTTP address to bind. Keep the default unless clients on other machines must connect.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="HTTP port.")
@workspace_options
@tools_option
@domain_errors
def serve(use_http: bool, host: str, port: int, workspace: str | None, allow_roots: tuple[str, ...],
          require_explicit_workspace: bool, tools: str) -> None:
    """Run the MCP server.

    Without --http it speaks MCP on stdin/stdout, which is what Claude Code, Cursor, VS Code
    and Gemini CLI launch. With --http one process serves every project under the allowed
    roots; clients name theirs with the X-Workspace-Id header, ?project_path= or the
    workspace argument. Health: GET /healthz.
    """
    settings = serve_settings(transport="http" if use_http else "stdio", workspace=workspace,
                              allow_roots=allow_roots, require_explicit_workspace=require_explicit_workspace,
                              host=host, port=port, tools=tools)
    runtime = build_runtime(settings)
    if settings.workspace:
        # Fail at start, not on the first call, when the configured default cannot be served.
        from homeport.workspace import CallInputs

        runtime.resolver.resolve(CallInputs())
    mcp = build_server(runtime)
    try:
        if not use_http:
            mcp.run("stdio")
            return
        import uvicorn

        app = build_http_app(mcp, runtime)
        roots = ", ".join(str(p) for p in runtime.resolver.settings.guard.allow_roots)
        click.echo(f"homeport {host}:{port}: MCP at http://{_url_host(host)}:{port}/mcp, health at /healthz; "
                   f"serving workspaces under {roots}", err=True)
        uvicorn.run(app, host=host, port=port, log_level="warning", lifespan="on")
    finally:
        runtime.close()
        sys.stderr.flush()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
