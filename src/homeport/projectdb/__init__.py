"""The project's own development database, per workspace: find it, describe it, query it safely.

    ProjectDatabases(environ)          one per process, built by the composition root
      ├── discovery     which database a workspace uses, from files its framework already has
      ├── connections   engines per (workspace, URL, mode), read-only by construction, closed when idle
      ├── introspection tables, a table's shape, the server's kind and version
      └── query         one statement per call, read-only unless the workspace allows writes

Every method takes the workspace root explicitly (already resolved and checked by the caller)
and returns plain dicts ready for JSON. No MCP here: the server layer wraps these as tools.

Each workspace has at most four calls on its database at once and four waiting (`_workspace_slots`:
a flood of slow queries for one workspace cannot take every worker thread of the process). The
first query of a workspace reads what its database account may do (`_privileges`): an account
that can read or write files on the database host is refused when `refuse_host_file_access`
(remote callers, over HTTP, unless the operator allows it), and named in a ``warning`` otherwise.

The database drivers and the SQL parser (psycopg, PyMySQL, sqlglot: about a quarter of a second)
are imported on the first call that needs them, not when the server starts.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from homeport.errors import DatabaseNotAllowedError
from homeport.projectdb._rules import DEFAULT_LIMIT
from homeport.projectdb._workspace_slots import WorkspaceSlots
from homeport.projectdb.discovery import DatabaseSource, discover_database

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from homeport.projectdb._privileges import HostAccess
    from homeport.projectdb.connections import EngineCache

__all__ = ["DatabaseSource", "ProjectDatabases", "discover_database"]

_HOST_ACCESS_TTL_S = 60.0  # an operator who fixes the account's grants sees it within a minute


class ProjectDatabases:
    """The development databases of every workspace this process serves.

    `environ` is the environment used for ``${NAME}`` in `.homeport/config.toml` and for the ERB
    of a Rails `database.yml`; the composition root passes it, nothing here reads the process's.
    `trust_workspace_config` false (for remote callers, over HTTP) keeps a workspace's
    configuration from reading `environ` or naming a database off this machine (see
    `discover_database`); `approves_remote(root, hosts)` (stdio: the user's trust records) keeps
    it from naming a database off this machine the user has not allowed for that project.
    `refuse_host_file_access` (remote callers, unless the operator allows it) refuses run_query on
    an account that can read or write files on the database host; otherwise the first result of a
    workspace carries a ``warning`` naming the privilege.
    """

    def __init__(
        self,
        environ: Mapping[str, str],
        *,
        trust_workspace_config: bool = True,
        approves_remote: Callable[[Path, tuple[str, ...]], bool] | None = None,
        approves_environment: Callable[[Path, tuple[str, ...]], bool] | None = None,
        refuse_host_file_access: bool = False,
        max_idle_seconds: float = 300,
        max_engines: int = 32,
        max_calls_per_workspace: int = 4,
    ) -> None:
        self._environ = dict(environ)
        self.trust_workspace_config = trust_workspace_config
        self.approves_remote = approves_remote
        self.approves_environment = approves_environment
        self._max_idle_seconds, self._max_engines = max_idle_seconds, max_engines
        self.refuse_host_file_access = refuse_host_file_access
        self._engine_cache: EngineCache | None = None
        self._lock = threading.Lock()
        # As many running calls as an engine's pool has connections, and as many waiting.
        self.max_calls_per_workspace = max_calls_per_workspace
        self._slots = WorkspaceSlots(running=max_calls_per_workspace, waiting=max_calls_per_workspace)
        self._host_access: dict[tuple[str, str], tuple[float, HostAccess | None]] = {}

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
            approves_environment=self.approves_environment,
        )

    def get_tables(self, root: Path) -> dict[str, Any]:
        """``{"tables": [str], "views": [str], "database_type": str}``.

        Raises:
            DatabaseNotConfiguredError, ConfigError: see `discover`.
            ProjectDatabaseError: the database cannot be reached or read.
        """
        from homeport.projectdb import introspection

        with self._slots.hold(root):
            source, engine = self._open(root)
            return introspection.get_tables(engine, source)

    def get_schema(self, root: Path, table: str) -> dict[str, Any]:
        """Columns, primary key, indexes, foreign keys, unique constraints and a CREATE statement.

        Raises:
            DatabaseNotConfiguredError, ConfigError: see `discover`.
            ProjectDatabaseError: no such table (close matches named), or the database failed.
        """
        from homeport.projectdb import introspection

        with self._slots.hold(root):
            source, engine = self._open(root)
            return introspection.get_schema(engine, source, table)

    def get_database_type(self, root: Path) -> dict[str, Any]:
        """The kind of database, its version, and where its URL came from (no password).

        Raises:
            DatabaseNotConfiguredError, ConfigError: see `discover`.
            ProjectDatabaseError: the database cannot be reached.
        """
        from homeport.projectdb import introspection

        with self._slots.hold(root):
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

        The first result of a workspace whose account can read or write the database host's files
        carries a ``warning`` saying so, unless such accounts are refused (`refuse_host_file_access`).

        Raises:
            DatabaseNotConfiguredError, ConfigError: see `discover`.
            DatabaseNotAllowedError: the account can reach the host's files, and that is refused here.
            QueryRejectedError: refused before reaching the database (the reason and what to do).
            QuerySyntaxError: the query is not valid SQL for the database.
            InvalidArgumentError: a value in `params` that is not one value (an object, NaN).
            ProjectDatabaseError: the database refused or failed it, it ran past the timeout, or the
                workspace already has as many calls on its database as it may.
        """
        from homeport.projectdb.query import run_query

        with self._slots.hold(root):
            source, engine = self._open(root)
            if read_only and source.allow_writes:
                source = dataclasses.replace(
                    source, allow_writes=False, writes_off_because="this server was started with --read-only"
                )
            warning = self._check_host_access(root, source, engine)
            result = run_query(engine, source, query, params, limit)
        return {**result, "warning": warning} if warning else result

    def host_access(self, root: Path) -> HostAccess | None:
        """What the workspace's database account may do beyond reading (None: SQLite, no accounts).

        Raises:
            DatabaseNotConfiguredError, ConfigError: see `discover`.
            ProjectDatabaseError: the database cannot be reached or asked.
        """
        from homeport.projectdb._privileges import read_host_access
        from homeport.projectdb.connections import DRIVER_ERRORS, database_error

        with self._slots.hold(root):
            source, engine = self._open(root)
            try:
                return read_host_access(engine, source)
            except DRIVER_ERRORS as exc:
                raise database_error(exc, source, "could not read the account's privileges") from exc

    def close(self) -> None:
        """Close every engine; the object stays usable and reopens engines on demand."""
        if self._engine_cache is not None:
            self._engine_cache.close_all()

    def __enter__(self) -> ProjectDatabases:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _check_host_access(self, root: Path, source: DatabaseSource, engine: Engine) -> str | None:
        """Refuse or warn about an account that reaches the host's files; the warning, once a minute."""
        from homeport.projectdb._privileges import read_host_access
        from homeport.projectdb.connections import DRIVER_ERRORS, driver_message

        if source.backend == "sqlite":
            return None
        key = (str(root), source.url.render_as_string(hide_password=False))
        now = time.monotonic()
        with self._lock:
            checked = self._host_access.get(key)
        fresh = checked is None or now - checked[0] > _HOST_ACCESS_TTL_S
        access: HostAccess | None
        if fresh:
            try:
                access = read_host_access(engine, source)
            except DRIVER_ERRORS as exc:
                if self.refuse_host_file_access:  # remote callers: an account not known to be safe is not served
                    raise DatabaseNotAllowedError(
                        f"could not read what the database account may do ({driver_message(exc)}), so run_query is "
                        f"refused for this server's remote callers [{source.describe()}]; fix the connection, or "
                        "start the server with --allow-database-file-access"
                    ) from exc
                access = None  # the query itself will say what is wrong with the connection
            with self._lock:
                self._host_access[key] = (now, access)
        else:
            access = checked[1] if checked else None
        if access is None or not access.touches_host_files:
            return None
        what = (
            f"the database account {access.account} can read or write files on the database host "
            f"({', '.join(access.host_files)})"
        )
        if self.refuse_host_file_access:
            raise DatabaseNotAllowedError(
                f"{what}, and this server's callers are remote, so run_query is refused [{source.describe()}]; "
                f"{access.advice}. Or, to accept the risk, start the server with "
                "--allow-database-file-access"
            )
        if not fresh:
            return None
        return (
            f"{what}: Homeport refuses the statements it knows reach them, and the account is the line that "
            f"holds whatever it misses; {access.advice}"
        )

    def _open(self, root: Path) -> tuple[DatabaseSource, Engine]:
        source = self.discover(root)
        return source, self._engines().engine_for(root, source)

    def _engines(self) -> EngineCache:
        with self._lock:
            if self._engine_cache is None:
                from homeport.projectdb.connections import EngineCache

                self._engine_cache = EngineCache(max_idle_seconds=self._max_idle_seconds, max_engines=self._max_engines)
            return self._engine_cache
