"""Where a workspace's memory is, as `homeport serve` over stdio would pick it: for `where` and `doctor`.

    the project's .homeport/config.toml names [team] url  -> that team server, under the project's key,
      and the user trusted it there (`homeport trust`)        (else the project is served as below)
    --store URL / HOMEPORT_STORE (ServeSettings.store_url)  -> a schema in that PostgreSQL database
    otherwise                                              -> <root>/.homeport/homeport.db

The same order as the server's: the team step comes before any store is opened (core/pipeline.py),
and a store URL replaces the SQLite files (core/runtime.py). Nothing is created or migrated here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from homeport.errors import HomeportError
from homeport.store.location import store_path_for
from homeport.workspace.project import project_key, read_project_config, team_config

__all__ = ["StoreLocation", "locate_store"]


@dataclass(frozen=True)
class StoreLocation:
    """The store of one workspace. `exists` is None when it cannot be known from here."""

    kind: Literal["sqlite", "postgresql", "team", "unknown"]
    where: str  # the file, the database URL with its password hidden, or the team server's URL
    exists: bool | None
    schema: str | None = None  # postgresql
    revision: str | None = None  # postgresql: as recorded in homeport.workspaces
    key: str | None = None  # postgresql: the workspace's key there; team: the project's key
    error: str | None = None  # why it could not be read (unreachable database, a bad config)

    def describe(self) -> dict[str, Any]:
        """The `store*` fields of `homeport where --json`."""
        shown = {f"store_{name}": value for name, value in asdict(self).items() if name not in ("where", "exists")}
        return {"store": self.where, "store_exists": self.exists, **shown}

    def line(self) -> str:
        """One line for a person."""
        if self.kind == "team":
            return f"team server {self.where}, project {self.key or '-'}"
        if self.kind == "unknown":
            return f"unknown: {self.error}"
        if self.kind == "sqlite":
            return self.where + ("" if self.exists else " (not created yet)")
        if self.error is not None:
            return f"{self.where}, schema {self.schema} ({self.error})"
        state = f"revision {self.revision}" if self.exists else "not created yet"
        return f"{self.where}, schema {self.schema}, {state}"


def locate_store(root: Path, store_url: str | None, trust_file: Path | None = None) -> StoreLocation:
    """The store a stdio server with `store_url` and `trust_file` (its settings') would use for the
    workspace at `root`. Asks the PostgreSQL database (read-only) for the workspace's schema and
    revision; never raises."""
    from homeport.mesh.team import TeamRouter
    from homeport.workspace.trust import TrustBook

    try:
        document = read_project_config(root)
        team = team_config(root, document)
        key = project_key(root, document).key if team is not None else None
        # A team server this user has not trusted for the project is not where its memory goes (yet).
        trusted = team is not None and TeamRouter({}, TrustBook(trust_file)).trusted_url(root) == team.url
    except HomeportError as exc:
        return StoreLocation("unknown", "", None, error=exc.message)
    if team is not None and trusted:
        return StoreLocation("team", team.url, None, key=key)
    if store_url:
        return _postgres(store_url, str(root))
    path = store_path_for(root)
    return StoreLocation("sqlite", str(path), path.exists())


def _postgres(url: str, key: str) -> StoreLocation:
    from homeport.store.postgres import PostgresStores, schema_for, shown_url

    try:
        stores = PostgresStores(url, pool_size=1)
    except HomeportError as exc:  # not a PostgreSQL URL
        return StoreLocation("unknown", shown_url(url), None, error=exc.message)
    try:
        found = stores.registered().get(key)
    except HomeportError as exc:
        return StoreLocation("postgresql", shown_url(url), None, schema_for(key), key=key, error=exc.message)
    finally:
        stores.close()
    if found is None:
        return StoreLocation("postgresql", shown_url(url), False, schema_for(key), key=key)
    schema, revision = found
    return StoreLocation("postgresql", shown_url(url), True, schema, revision, key=key)
