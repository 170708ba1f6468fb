"""The composition root of a server process: resolver, handles and stores, built once, passed down."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from homeport.core.access import AccessRulesFile, WorkspaceAccess
from homeport.core.deployment import deployment_secret
from homeport.core.discovery import stores_under
from homeport.core.file_access import DirectoryCache, FileAreaService
from homeport.core.resolution import build_resolver
from homeport.core.semantic import SemanticSearch
from homeport.core.settings import ServeSettings, data_dir_of
from homeport.mesh.forwarding import Forwarder
from homeport.mesh.team import TeamRouter
from homeport.projectdb import ProjectDatabases
from homeport.registry import InstanceRegistry
from homeport.store import Store, StoreCache
from homeport.workspace import (
    CallInputs,
    HandleSigner,
    Workspace,
    WorkspaceResolver,
)
from homeport.workspace.trust import TrustBook

__all__ = ["CallCounts", "Runtime", "build_runtime", "tool_result"]


@dataclass
class CallCounts:
    """Tool calls this process answered since it started, and how many of them failed (for /healthz)."""

    started_at: float = field(default_factory=time.time)
    calls: int = 0
    errors: int = 0


@dataclass
class Runtime:
    settings: ServeSettings
    resolver: WorkspaceResolver
    handles: HandleSigner
    stores: StoreCache
    files: FileAreaService
    databases: ProjectDatabases
    access: WorkspaceAccess
    # The deployment's secret (server.deployment), read on first use: what lets processes verify each other.
    secret: Callable[[], bytes]
    forwarder: Forwarder | None = None  # None: every call is served here (no registry configured)
    team: TeamRouter | None = None  # stdio: memory calls of a project with [team] go to its team server
    semantic: SemanticSearch = field(default_factory=lambda: SemanticSearch(None, background=False))
    counts: CallCounts = field(default_factory=CallCounts)

    def resolve(self, inputs: CallInputs, *, write: bool) -> Workspace:
        """The workspace of a call (see `WorkspaceResolver.resolve`)."""
        return self.resolver.resolve(inputs, write=write).workspace

    def store_for(self, workspace: Workspace, *, write: bool, create: bool | None = None) -> Store | None:
        """Its store: None for reads of a workspace that has none; created on first write unless `create`
        says otherwise."""
        return self.stores.get(workspace.root, create=write if create is None else create, key=workspace.logical_key)

    def known_workspaces(self) -> dict[Path, str]:
        """The workspaces this process knows, each with why: `owned` in the instance registry, `recent`
        (its store is open: a client used it lately), or `found` (a project with a store under the allowed
        roots, see `discovery`). Known is not allowed: every use is checked.

        Raises:
            RegistryError: the instance registry cannot be read.
        """
        known: dict[Path, str] = {}
        if self.forwarder is not None:
            pid = os.getpid()
            for owned, owner in sorted(self.forwarder.registry.read().owners.items()):
                if owner.pid == pid:
                    known[Path(owned)] = "owned"
        for root in self.stores.roots():
            known.setdefault(root, "recent")
        # A PostgreSQL store has no files; a --store file holds one workspace, opened above once used.
        if self.settings.allow_roots and self.settings.store_url is None and self.settings.store_file is None:
            for root in stores_under(self.settings.allow_roots, self.resolver.settings.guard):
                known.setdefault(root, "found")
        return known

    def close(self) -> None:
        if self.forwarder is not None:
            self.forwarder.close()
        if self.team is not None:
            self.team.close()
        self.semantic.close()  # before the stores: its thread may be writing vectors
        self.stores.close()
        self.databases.close()


def tool_result(workspace: Workspace, result: Any, key: str | None = None) -> dict[str, Any]:
    """What a tool returns: a dict result as is, anything else under `key`, plus `workspace`.

    A listing tool may return its list under `key` beside counts (`{"decisions": [...], "hidden_expired": 2}`).
    """
    out = {key: result} if key is not None and not (isinstance(result, dict) and key in result) else dict(result)
    out["workspace"] = workspace.describe()
    return out


def build_runtime(settings: ServeSettings) -> Runtime:
    """Build what every tool call needs.

    Raises:
        ConfigError: an --allow-root that is not an existing directory.
    """
    stores = _stores(settings)
    try:
        secret = deployment_secret(settings, stores.postgres)
        resolver = build_resolver(settings, secret)
    except BaseException:
        stores.close()
        raise
    data_dir = data_dir_of(settings)
    trust = TrustBook(settings.trust_file)
    # One cache of the directory for file areas and workspace access: one reload per change.
    directory = DirectoryCache(settings.directory_file)
    files = FileAreaService(data_dir=data_dir, directory=directory, max_bytes=settings.max_file_bytes)
    return Runtime(
        settings=settings,
        resolver=resolver,
        handles=resolver.handles,
        stores=stores,
        files=files,
        databases=ProjectDatabases(
            settings.environ,
            trust_workspace_config=_trusts_workspace_config(settings),
            # stdio: the user's own workspaces, but a database off this machine only once they trusted it.
            approves_remote=trust.approves_database_hosts if settings.trust_workspace_config is None else None,
            approves_environment=trust.approves_environment if settings.trust_workspace_config is None else None,
            # Remote callers never get an account that reaches the host's files, unless the operator says so.
            refuse_host_file_access=settings.transport == "http" and not settings.allow_database_file_access,
        ),
        access=WorkspaceAccess(
            directory,
            # Over stdio, `serve --agent NAME --access-rules FILE` names the caller the rules apply to.
            auth=settings.auth
            or (settings.transport == "stdio" and bool(settings.agent and settings.access_rules_file)),
            rules=AccessRulesFile(settings.access_rules_file) if settings.access_rules_file else None,
        ),
        secret=secret,
        forwarder=(
            Forwarder(InstanceRegistry(settings.state_dir), use_daemon=settings.use_daemon)
            # A server given --store sqlite:///FILE serves that file itself: an owner would write its own store.
            if settings.state_dir and settings.store_file is None
            else None
        ),
        team=TeamRouter(settings.environ, trust) if settings.transport == "stdio" else None,
        semantic=SemanticSearch(data_dir, background=settings.background_embedding),
    )


def _stores(settings: ServeSettings) -> StoreCache:
    stores = StoreCache(capacity=settings.store_cache_size, url=settings.store_url, file=settings.store_file)
    if stores.postgres is not None:
        try:
            # Refuse at start a database that a newer Homeport migrated, not on some workspace's first call.
            stores.postgres.check_revisions()
        except BaseException:
            stores.close()
            raise
    return stores


def _trusts_workspace_config(settings: ServeSettings) -> bool:
    if settings.trust_workspace_config is not None:
        return settings.trust_workspace_config
    return settings.transport == "stdio"
