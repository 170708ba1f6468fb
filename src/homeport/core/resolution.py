"""The workspace resolver of a server process, built from its settings without the stores or the MCP SDK.

`build_runtime` uses it for every call; `homeport where` uses it alone, so that asking where a
call would land does not load SQLAlchemy or the tool models.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

from homeport.core.deployment import deployment_secret
from homeport.core.settings import ServeSettings, data_dir_of
from homeport.errors import ConfigError, InvalidWorkspaceError
from homeport.store.logical import logical_store_for
from homeport.workspace import (
    HandleSigner,
    ResolverSettings,
    WorkspaceGuard,
    WorkspaceResolver,
    canonical_directory,
    default_denied,
)

__all__ = ["build_resolver"]


def build_resolver(settings: ServeSettings, secret: Callable[[], bytes] | None = None) -> WorkspaceResolver:
    """The resolver with its guard (denied directories, --allow-root, Homeport's own data) and handles
    signed with `secret` (default: `HOMEPORT_HANDLE_KEY`, else the data directory's key file).

    Raises:
        ConfigError: an --allow-root that is not an existing directory; a HOMEPORT_HANDLE_KEY too short.
    """
    home = Path(os.path.realpath(settings.home))
    allow = tuple(_allowed_root(p) for p in settings.allow_roots)
    # Homeport's own data (file areas, tokens) is never a workspace, whatever the allowlist says.
    guard = WorkspaceGuard(
        denied=default_denied(home),
        allow_roots=allow,
        private_trees=(Path(os.path.realpath(data_dir_of(settings))),),
    )
    return WorkspaceResolver(
        ResolverSettings(
            guard=guard,
            transport=settings.transport,
            config_workspace=settings.workspace,
            client_env=dict(settings.client_env),
            cwd=settings.cwd,
            require_explicit=settings.require_explicit_workspace,
            logical_root=(
                functools.partial(logical_store_for, Path(os.path.realpath(data_dir_of(settings))))
                if settings.logical_workspaces
                else None
            ),
        ),
        HandleSigner(secret or deployment_secret(settings), ttl_seconds=settings.handle_ttl_seconds),
    )


def _allowed_root(path: Path) -> Path:
    try:
        return canonical_directory(str(path))
    except InvalidWorkspaceError as exc:
        raise ConfigError(f"--allow-root {path}: {exc.message}") from None
