"""The project's own development database, per workspace: find it, describe it, query it safely.

    ProjectDatabases(environ)          one per process, built by the composition root
      ├── discovery     which database a workspace uses, from files its framework already has
      ├── connections   engines per (workspace, URL, mode), read-only by construction, closed when idle
      ├── introspection tables, a table's shape, the server's kind and version
      └── query         one statement per call, read-only unless the workspace allows writes

Every method takes the workspace root explicitly (already resolved and checked by the caller)
and returns plain dicts ready for JSON. No MCP here: the server layer wraps these as tools.

The database drivers and the SQL parser (psycopg, PyMySQL, sqlglot: about a quarter of a second)
are imported on the first call that needs them, not when the server starts.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from homeport.projectdb._rules import DEFAULT_LIMIT
from homeport.projectdb.discovery import DatabaseSource, discover_database

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from homeport.projectdb.connections import EngineCache

__all__ = ["DatabaseSource", "ProjectDatabases", "discover_database"]


class ProjectDatabases:
    """The development databases of every workspace this process serves.

    `environ` is the environment used for ``${NAME}`` in `.homeport/config.toml` and for the ERB
    of a Rails `database.yml`; the composition root passes it, nothing here reads the process's.
    `trust_workspace_config` false (for remote callers, over HTTP) keeps a workspace's
    configuration from reading `environ` or naming a database off this machine (see
    `discover_database`); `approves_remote(root, hosts)` (stdio: the user's trust records) keeps
    it from naming a database off this machine the user has not allowed for that project.
    """

    def __init__(
        self,
        environ: Mapping[str, str],
        *,
        trust_workspace_config: bool = True,
        approves_remote: Callable[[Path, tuple[str, ...]], bool] | None = None,
        max_idle_seconds: float = 300,
        max_engines: int = 32,
    ) -> None:
        self._environ = dict(environ)
        self.trust_workspace_config = trust_workspace_config
        self.approves_remote = approves_remote
        self._max_idle_seconds, self._max_engines = max_idle_seconds, max_engines
        self._engine_cache: EngineCache | None = None
        self._lock = threading.Lock()

    def discover(self, root: Path) -> DatabaseSource:
        """Which database the workspace at `root` uses, and its settings.

        Raises:
            DatabaseNotConfiguredError: no database found (the message says where it looked).
            ConfigError: a configuration file names one but is malformed.
            DatabaseNotAllowedError: untrusted configuration names a database off this machine.
        """
        return discover_database(
            root,
            self._environ,
            trust_workspace_config=self.trust_workspace_config,
            approves_remote=self.approves_remote,
        )

    def get_tables(self, root: Path) -> dict[str, Any]:
        """``{"tables": [str], "views": [str], "database_type": str}``.

        Raises:
            DatabaseNotConfiguredError, ConfigError: see `discover`.
            ProjectDatabaseError: the database cannot be reached or read.
        """
        from homeport.projectdb import introspection

        source, engine = self._open(root)
        return introspection.get_tables(engine, source)

    def get_schema(self, root: Path, table: str) -> dict[str, Any]:
        """Columns, primary key, indexes, foreign keys, unique constraints and a CREATE statement.

        Raises:
            DatabaseNotConfiguredError, ConfigError: see `discover`.
            ProjectDatabaseError: no such table (close matches named), or the database failed.
        """
        from homeport.projectdb import introspection

        source, engine = self._open(root)
        return introspection.get_schema(engine, source, table)

    def get_database_type(self, root: Path) -> dict[str, Any]:
        """The kind of database, its version, and where its URL came from (no password).

        Raises:
            DatabaseNotConfiguredError, ConfigError: see `discover`.
            ProjectDatabaseError: the database cannot be reached.
        """
        from homeport.projectdb import introspection

        source, engine = self._open(root)
        return introspection.get_database_type(engine, source)

    def run_query(
        self,
        root: Path,
        query: str,
        params: Mapping[str, Any] | None = None,
        limit: int = DEFAULT_LIMIT,
        *,
        read_only: bool = False,
    ) -> dict[str, Any]:
        """Run one statement; read-only unless the workspace's config sets ``allow_writes`` (and always
        read-only with `read_only`: a server started with --read-only).

        `params` fills ``:name`` placeholders. At most ``min(limit, row_limit)`` rows and
        ``max_result_bytes`` of JSON return; ``truncated_by`` names the cap that cut the result.

        Raises:
            DatabaseNotConfiguredError, ConfigError: see `discover`.
            QueryRejectedError: refused before reaching the database (the reason and what to do).
            QuerySyntaxError: the query is not valid SQL for the database.
            ProjectDatabaseError: the database refused or failed it, or it ran past the timeout.
        """
        from homeport.projectdb.query import run_query

        source, engine = self._open(root)
        if read_only and source.allow_writes:
            source = dataclasses.replace(
                source, allow_writes=False, writes_off_because="this server was started with --read-only"
            )
        return run_query(engine, source, query, params, limit)

    def close(self) -> None:
        """Close every engine; the object stays usable and reopens engines on demand."""
        if self._engine_cache is not None:
            self._engine_cache.close_all()

    def __enter__(self) -> ProjectDatabases:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _open(self, root: Path) -> tuple[DatabaseSource, Engine]:
        source = self.discover(root)
        return source, self._engines().engine_for(root, source)

    def _engines(self) -> EngineCache:
        with self._lock:
            if self._engine_cache is None:
                from homeport.projectdb.connections import EngineCache

                self._engine_cache = EngineCache(max_idle_seconds=self._max_idle_seconds, max_engines=self._max_engines)
            return self._engine_cache
