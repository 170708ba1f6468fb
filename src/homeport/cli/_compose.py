"""Turn flags and environment variables into settings: the only place that reads the environment."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import platformdirs

from homeport.core.credentials import DIRECTORY_FILENAME
from homeport.core.settings import ServeSettings
from homeport.errors import HomeportError
from homeport.workspace import CLIENT_ENV_VARS

if TYPE_CHECKING:
    from homeport.workspace import Workspace

__all__ = [
    "CLI_WORDS",
    "cli_message",
    "dashboard_app",
    "data_dir_option",
    "default_data_dir",
    "default_state_dir",
    "default_trust_file",
    "domain_errors",
    "serve_settings",
    "shell_error_message",
    "shell_path",
    "store_option",
    "tools_option",
    "workspace_from_here",
    "workspace_options",
]


def dashboard_app(runtime: Any, bearer: Any) -> Any:
    """The dashboard at /ui, built on its first request (the HTTP binding never imports it)."""
    from homeport.ui import build_dashboard

    return build_dashboard(runtime, bearer)


def workspace_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The flags every command that resolves a workspace shares."""
    fn = click.option(
        "--require-explicit-workspace",
        is_flag=True,
        envvar="HOMEPORT_REQUIRE_EXPLICIT_WORKSPACE",
        help="Writes refuse a workspace that came only from client roots, client environment "
        "hints or the current directory.",
    )(fn)
    fn = click.option(
        "--allow-root",
        "allow_roots",
        multiple=True,
        type=click.Path(file_okay=False),
        help="Only serve workspaces inside this directory (repeatable). Over HTTP the default "
        "is the directory the server starts in, and /, the home directory or a system directory is refused.",
    )(fn)
    fn = click.option(
        "--workspace",
        "-w",
        envvar="HOMEPORT_WORKSPACE",
        metavar="DIR",
        help="The server's default workspace, used when a call names none (env: HOMEPORT_WORKSPACE).",
    )(fn)
    return fn


def tools_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--tools",
        "tools",
        envvar="HOMEPORT_TOOLS",
        metavar="GROUPS",
        default="all",
        show_default=True,
        help="Comma-separated tool groups to expose: workspace, memory, files, db (env: HOMEPORT_TOOLS). "
        "Fewer tools cost the agent less context on every turn. conport or devdb (e.g. workspace,conport) "
        "offer ConPort's or DevDB's tool names for their clients.",
    )(fn)


def store_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--store URL` (env HOMEPORT_STORE): the PostgreSQL store (or the one SQLite file, sqlite:///FILE)
    `serve` keeps memory in, that the memory commands use, `where` shows and `migrate` migrates (`doctor`
    spells the same option out: it loads no module of the CLI at import); `help_text` says what the
    command does with it."""
    return click.option("--store", "store_url", envvar="HOMEPORT_STORE", metavar="URL", help=help_text)


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("homeport", appauthor=False))


def default_state_dir() -> Path:
    """The instance registry's directory: HOMEPORT_STATE_DIR, else the platform's user state directory."""
    return Path(os.environ.get("HOMEPORT_STATE_DIR") or platformdirs.user_state_dir("homeport", appauthor=False))


def default_trust_file() -> Path:
    """The user's trust records (`homeport trust`), in the user's own config directory."""
    from homeport.workspace.trust import TRUST_FILE_NAME

    return Path(platformdirs.user_config_dir("homeport", appauthor=False)) / TRUST_FILE_NAME


def data_dir_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Where file areas, the directory and the tokens live."""
    fn = click.option(
        "--directory",
        "directory_file",
        envvar="HOMEPORT_DIRECTORY",
        metavar="FILE",
        type=click.Path(dir_okay=False, path_type=Path),
        help="The directory of organizations, teams and agents (TOML; env: HOMEPORT_DIRECTORY). "
        "Default: DATA_DIR/directory.toml.",
    )(fn)
    return click.option(
        "--data-dir",
        envvar="HOMEPORT_DATA_DIR",
        metavar="DIR",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help=f"Where file areas and tokens are kept (env: HOMEPORT_DATA_DIR). Default: {default_data_dir()}.",
    )(fn)


def shell_path(value: str | None) -> str | None:
    """A path a person typed: `~` expanded and relative paths taken from the shell's directory.

    Only the CLI does this. An MCP argument must be absolute, because a server's own directory
    says nothing about where the calling agent works; a person at a shell means where they stand.
    URIs (`file:///...`) are left as they are.
    """
    if value is None or not value.strip():
        return None
    if "://" in value:
        return value
    return os.path.abspath(os.path.expanduser(value))


def serve_settings(
    *,
    transport: str,
    workspace: str | None,
    allow_roots: tuple[str, ...],
    require_explicit_workspace: bool,
    host: str = "127.0.0.1",
    port: int = 8765,
    tools: str | None = None,
    data_dir: Path | None = None,
    directory_file: Path | None = None,
    agent: str | None = None,
    auth: bool = False,
    state_dir: Path | None = None,
    store_url: str | None = None,
) -> ServeSettings:
    from homeport.core.stores import split_store_option

    cwd = Path(os.getcwd())
    store_url, store_file = split_store_option(store_url, cwd)
    roots = tuple(Path(os.path.abspath(os.path.expanduser(p))) for p in allow_roots)
    if transport == "http" and not roots:
        roots = (cwd,)
    return ServeSettings(
        transport=transport,  # type: ignore[arg-type]
        host=host,
        port=port,
        workspace=shell_path(workspace),
        allow_roots=roots,
        require_explicit_workspace=require_explicit_workspace,
        cwd=cwd,
        client_env={k: os.environ[k] for k in CLIENT_ENV_VARS if os.environ.get(k)},
        tool_groups=_tool_groups(tools),
        data_dir=(data_dir or default_data_dir()).absolute(),
        directory_file=(directory_file or (data_dir or default_data_dir()) / DIRECTORY_FILENAME).absolute(),
        agent=agent or None,
        auth=auth,
        environ=dict(os.environ),
        state_dir=(state_dir or default_state_dir()).expanduser().absolute(),
        trust_file=default_trust_file().absolute(),
        # The secret every process of a deployment signs workspace handles with (else the store's or a file's).
        handle_key=os.environ.get("HOMEPORT_HANDLE_KEY") or None,
        store_url=store_url or None,
        store_file=store_file,
    )


def workspace_from_here() -> Workspace:
    """The workspace a stdio call from this shell would get (HOMEPORT_WORKSPACE, client hints, the
    current directory), by the server's own resolver: what `homeport context` in a hook, `hooks
    install --scope project` and `doctor` must agree on.

    Raises:
        WorkspaceError: nothing here names a workspace, or the one named is refused.
    """
    from homeport.core.resolution import build_resolver
    from homeport.workspace import CallInputs

    settings = serve_settings(
        transport="stdio",
        workspace=os.environ.get("HOMEPORT_WORKSPACE"),
        allow_roots=(),
        require_explicit_workspace=False,
    )
    return build_resolver(settings).resolve(CallInputs(), write=False).workspace


def _tool_groups(spec: str | None) -> tuple[str, ...]:
    if spec is None:  # commands other than `serve`: no need to load the tool catalog to list its groups
        return ServeSettings.tool_groups
    from homeport.server.app import parse_tool_groups

    return parse_tool_groups(spec)


# The lower layers speak to an agent: a tool's name, `argument=value`. At a shell the same hint names
# the command and the flag. Phrases, not single words, so a value a person typed is never rewritten;
# longer phrases come before the shorter ones they contain.
CLI_WORDS: tuple[tuple[str, str], ...] = (
    ("pass cascade=true", "pass --cascade"),
    ("update_progress(parent_id=...)", "`homeport progress update ID --parent PARENT`"),
    ("call again with allow_secrets=true (shell: --allow-secrets)", "run it again with --allow-secrets"),
    ("allow_empty=true (CLI: --allow-empty)", "--allow-empty"),
    ("pass allow_empty=true", "pass --allow-empty"),
    ("use patch to change keys", "use `homeport context patch` to change keys"),
    ("import with mode=replace", "import with --mode replace"),
    ("with get_decisions", "with `homeport decisions list`"),
    ("with get_progress", "with `homeport progress list`"),
    ("with get_system_patterns", "with `homeport patterns list`"),
    ("with get_custom_data", "with `homeport data get`"),
    ("with get_item_history", "with `homeport history`"),
    ("pass the workspace argument, call use_workspace, or send X-Workspace-Id", "pass -w/--workspace DIR"),
    (
        "Set one of: the workspace argument (absolute path, file:// URI or a handle from use_workspace); the "
        "X-Workspace-Id header or ?project_path= on the URL (HTTP); use_workspace (sessions); homeport serve "
        "--workspace DIR or HOMEPORT_WORKSPACE; client roots; CLAUDE_PROJECT_DIR; or start the server in the "
        "project directory (stdio).",
        "Pass -w/--workspace DIR (or set HOMEPORT_WORKSPACE), or run the command inside the project.",
    ),
)


def cli_message(message: str) -> str:
    """A domain error's message as a person at a shell reads it: commands and flags, not tools and arguments."""
    for tool_words, cli_words in CLI_WORDS:
        message = message.replace(tool_words, cli_words)
    return message


# The sources of a workspace a person at a shell sets, in the words they set them with; the others
# (the argument, a header, the URL, a session, client roots) belong to MCP clients.
_SHELL_SOURCES = {
    "config": "--workspace/HOMEPORT_WORKSPACE",
    "client_env": "client environment",
    "cwd": "current directory",
}


def shell_error_message(exc: HomeportError) -> str:
    """`exc`'s message for a shell: `cli_message`, and a "no workspace" error that lists only what a shell
    user can set (not the ~300 characters of MCP-only sources the server's message lists)."""
    from homeport.errors import WorkspaceUnresolvedError

    if isinstance(exc, WorkspaceUnresolvedError) and exc.seen:
        saw = "; ".join(
            f"{_SHELL_SOURCES[source]}: {value or '-'}{f' ({note})' if note else ''}"
            for source, value, note in exc.seen
            if source in _SHELL_SOURCES and (source != "client_env" or value)
        )
        return (
            "no workspace for this call. Pass -w/--workspace DIR (or set HOMEPORT_WORKSPACE), or run the "
            f"command inside the project. Seen: {saw}"
        )
    return cli_message(exc.message)


def domain_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn a Homeport error into one line on stderr and exit status 1, never a traceback.

    Usage errors (a missing argument, an unknown flag, a value that does not parse) stay click's:
    exit status 2.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except HomeportError as exc:
            raise click.ClickException(shell_error_message(exc)) from exc

    return wrapper
