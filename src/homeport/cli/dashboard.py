"""`homeport ui`: the dashboard of this project's memory, on a local server only this machine reaches."""

from __future__ import annotations

import dataclasses
import threading
import webbrowser
from pathlib import Path
from urllib.parse import quote

import click

from homeport.cli._compose import dashboard_app, domain_errors, serve_settings, shell_path, workspace_from_here

__all__ = ["ui"]


@click.command()
@click.option(
    "--workspace",
    "-w",
    envvar="HOMEPORT_WORKSPACE",
    metavar="DIR",
    help="The project to show (env: HOMEPORT_WORKSPACE). Default: the one a call from here would use.",
)
@click.option(
    "--port",
    default=0,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port on 127.0.0.1; 0 picks a free one.",
)
@click.option("--no-browser", is_flag=True, help="Print the address only; do not open a browser.")
@click.option("--read-only", is_flag=True, help="Show the memory without the forms that change it.")
@domain_errors
def ui(workspace: str | None, port: int, no_browser: bool, read_only: bool) -> None:
    """Open the dashboard of this project's memory in a browser.

    It runs a server on 127.0.0.1 that serves this project only (the dashboard of `homeport serve
    --http` is at /ui on that server), prints the address, and opens it in a browser when this
    machine has one. Ctrl-C to stop.
    """
    from homeport.core import build_runtime
    from homeport.server import build_http_app, build_server
    from homeport.server.http_run import bind, run_http
    from homeport.workspace import CallInputs

    root = str(_resolve(shell_path(workspace)) if workspace else workspace_from_here().root)
    settings = serve_settings(
        transport="http",
        workspace=root,
        allow_roots=(root,),
        require_explicit_workspace=False,
        host="127.0.0.1",
        port=port,
    )
    runtime = build_runtime(dataclasses.replace(settings, read_only=read_only))
    try:
        runtime.resolve(CallInputs(), write=False)  # refused here, not on the first page
        sock = bind("127.0.0.1", port)
        runtime.settings = dataclasses.replace(runtime.settings, port=sock.getsockname()[1])
        app = build_http_app(build_server(runtime), runtime, dashboard=dashboard_app)
        address = f"http://127.0.0.1:{runtime.settings.port}/ui/w?ws={quote(root, safe='/')}"

        def ready() -> None:
            click.echo(f"homeport ui: {address}  (serving {root}{', read-only' if read_only else ''}; Ctrl-C to stop)")
            if not no_browser:
                _open_browser(address)

        run_http(app, sock, runtime.settings, ready)
    except KeyboardInterrupt:
        pass
    finally:
        runtime.close()


def _resolve(path: str | None) -> Path:
    from homeport.core.resolution import build_resolver
    from homeport.workspace import CallInputs

    settings = serve_settings(transport="stdio", workspace=path, allow_roots=(), require_explicit_workspace=False)
    return build_resolver(settings).resolve(CallInputs(), write=False).workspace.root


def _open_browser(address: str) -> None:
    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        click.echo("homeport ui: no browser found here; open the address above in one", err=True)
        return
    if isinstance(browser, webbrowser.GenericBrowser) and not isinstance(browser, webbrowser.BackgroundBrowser):
        # A text browser (lynx, w3m) would take over this terminal, which is printing the server's log.
        click.echo("homeport ui: only a text browser here; open the address above in another terminal", err=True)
        return
    threading.Thread(target=browser.open, args=(address,), daemon=True).start()
