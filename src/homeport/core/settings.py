"""Settings of one server process, built by the CLI (the only place that reads the environment)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from homeport.core.credentials import TOKENS_FILENAME

__all__ = ["ServeSettings", "data_dir_of"]


@dataclass(frozen=True)
class ServeSettings:
    transport: Literal["stdio", "http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = 8765
    workspace: str | None = None
    allow_roots: tuple[Path, ...] = ()
    require_explicit_workspace: bool = False
    cwd: Path | None = None
    home: Path = field(default_factory=Path.home)
    client_env: Mapping[str, str] = field(default_factory=dict)
    store_cache_size: int = 64  # open stores (about 3 file descriptors each); more are reopened on demand
    # postgresql://...: every workspace's memory in that one database (a schema each) instead of SQLite files.
    store_url: str | None = None
    # --store sqlite:///FILE: one workspace's memory in that file (bound to it on first use) instead of its own.
    store_file: Path | None = None
    handle_ttl_seconds: float = 24 * 3600
    # HOMEPORT_HANDLE_KEY: the secret every process of a deployment signs handles with (see server.deployment).
    handle_key: str | None = field(default=None, repr=False)
    # How long a 2025-era client gets to answer roots/list before the connection goes on without roots.
    roots_timeout_seconds: float = 5.0
    tool_groups: tuple[str, ...] = ("workspace", "memory", "files", "db")
    # The process environment, for ${VAR} in project database URLs; only the CLI fills it.
    environ: Mapping[str, str] = field(default_factory=dict)
    # Whether a workspace's database configuration may read `environ` and name any host or file.
    # None: trusted over stdio (the user's own workspaces), not over HTTP (remote callers).
    trust_workspace_config: bool | None = None
    # HTTP: run_query on a project database whose account can read or write the database host's files
    # (MariaDB FILE or SUPER, a PostgreSQL superuser or pg_*_server_files member); refused by default.
    allow_database_file_access: bool = False
    data_dir: Path | None = None
    directory_file: Path | None = None
    agent: str | None = None
    # The instance registry: calls for a workspace another live instance owns are forwarded there.
    state_dir: Path | None = None
    # The user's trust records (`homeport trust`): which projects' configs may send data off this machine
    # (a team server, a database elsewhere) or read the user's secrets. None: no project's is trusted.
    trust_file: Path | None = None
    # False: never forward to the per-user daemon (an owner at a unix: endpoint); other owners still count.
    use_daemon: bool = True
    auth: bool = False
    # With --own --auth: the file holding the token this owner accepts from the user's other instances.
    owner_token_file: Path | None = None
    # HTTP: workspaces are logical keys (acme/api) kept under the data directory, never paths on this disk.
    logical_workspaces: bool = False
    # How bearer tokens are verified under `auth`: Homeport's own token file, or JWTs signed by an
    # issuer's keys (JWKS), whose audience must be `jwt_audience` (default: this server's /mcp URL).
    auth_method: Literal["tokens", "jwt"] = "tokens"
    jwks_url: str | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    # Under auth: who may call which tools and use which workspaces (TOML); None: the directory's roots.
    access_rules_file: Path | None = None
    # Every write tool is refused (`serve --read-only`, `homeport ui --read-only`): for looking, not changing.
    read_only: bool = False
    max_file_bytes: int = 10 * 1024 * 1024
    # HTTP: the URLs clients reach this server by (Host/Origin allowed besides loopback; the first is the
    # base of the auth metadata URLs), and serving beyond loopback without tokens, on purpose.
    public_urls: tuple[str, ...] = ()
    insecure_no_auth: bool = False
    # HTTP: a client gets this long to send its request headers, then this long for the body.
    header_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 30.0
    max_body_bytes: int = 4 * 1024 * 1024
    # HTTP: on SIGTERM or Ctrl-C, calls in flight get this long to finish before the process exits.
    shutdown_grace_seconds: float = 5.0
    # Embed written items on a background thread for search by meaning (with the `semantic` extra).
    # Off for one-shot shell commands, which exit before a model would have loaded.
    background_embedding: bool = True

    @property
    def tokens_file(self) -> Path | None:
        return self.data_dir / TOKENS_FILENAME if self.data_dir else None


def data_dir_of(settings: ServeSettings) -> Path:
    """Where file areas and tokens live: --data-dir, else ~/.local/share/homeport."""
    return settings.data_dir or Path(os.path.realpath(settings.home)) / ".local" / "share" / "homeport"
