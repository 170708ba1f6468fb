"""Engines for project databases: one per workspace, URL and mode, closed when idle, bounded in number.

How each backend is opened, and what makes it safe before any query runs:

- SQLite through a ``file:...?mode=ro`` URI (``mode=rw`` with allow_writes, never created), with
  ``PRAGMA query_only`` on and an authorizer that refuses ATTACH / DETACH (which would create
  files even on a read-only connection, and which VACUUM INTO uses), extension loading, and, in
  read-only mode, every action but reading and reporting PRAGMAs.
- PostgreSQL through psycopg 3; dates and timestamps Python cannot hold ('infinity') come back
  as their text instead of failing the query, and intervals as text (ISO 8601, see `query`).
- MySQL / MariaDB through PyMySQL with the multi-statements client flag forced off, LOCAL INFILE
  off and no init command, whatever the URL says.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import psycopg.errors
import pymysql
from psycopg.adapt import Loader
from psycopg.types import datetime as pg_datetime
from psycopg.types.string import TextLoader
from pymysql.constants import CLIENT
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.pool import PoolProxiedConnection, QueuePool

from homeport.errors import ProjectDatabaseError
from homeport.projectdb._rules import denied_function_reason, pragma_is_read_only
from homeport.projectdb.discovery import DatabaseSource

__all__ = [
    "DRIVER_ERRORS",
    "EngineCache",
    "checkout",
    "database_error",
    "driver_message",
    "is_syntax_error",
    "open_engine",
    "reset_session",
    "sqlite_authorizer",
]

CONNECT_TIMEOUT_S = 5
_COM_RESET_CONNECTION = 0x1F  # MySQL 5.7+ / MariaDB 10.2+
_MYSQL_SYNTAX_ERRORS = frozenset({1064, 1149})  # ER_PARSE_ERROR, ER_SYNTAX_ERROR
_SQLITE_SYNTAX_ERRORS = ("syntax error", "incomplete input", "unrecognized token")
_POOL = {"pool_size": 2, "max_overflow": 2, "pool_timeout": 10}
_SERVER_POOL = {**_POOL, "pool_pre_ping": True, "pool_recycle": 1800}

# Every exception a driver or SQLAlchemy raises on purpose; each becomes a ProjectDatabaseError.
DRIVER_ERRORS: tuple[type[Exception], ...] = (
    sqlite3.Error,
    psycopg.Error,
    pymysql.err.Error,
    SQLAlchemyError,
)


@dataclass
class _Entry:
    engine: Engine
    last_used: float


class EngineCache:
    """Engines keyed by (workspace root, URL, write mode).

    An engine unused for `max_idle_seconds` is closed the next time the cache is touched; past
    `max_engines` the least recently used one is closed.
    """

    def __init__(
        self,
        *,
        max_idle_seconds: float = 300,
        max_engines: int = 32,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_engines < 1:
            raise ValueError("max_engines must be at least 1")
        self._max_idle = max_idle_seconds
        self._max_engines = max_engines
        self._clock = clock
        self._entries: dict[tuple[str, str, bool], _Entry] = {}
        self._lock = threading.Lock()

    def engine_for(self, root: Path, source: DatabaseSource) -> Engine:
        """The engine for `source` in the workspace at `root`, opened on first use.

        Raises:
            ProjectDatabaseError: a SQLite file that does not exist.
        """
        key = (str(root), source.url.render_as_string(hide_password=False), source.allow_writes)
        now = self._clock()
        with self._lock:
            closing = self._take_idle(now)
            entry = self._entries.get(key)
            if entry is None:
                entry = _Entry(open_engine(source), now)
                self._entries[key] = entry
                closing += self._take_least_recent()
            entry.last_used = now
        for engine in closing:
            engine.dispose()
        return entry.engine

    def close_all(self) -> None:
        with self._lock:
            engines = [entry.engine for entry in self._entries.values()]
            self._entries.clear()
        for engine in engines:
            engine.dispose()

    def __len__(self) -> int:
        return len(self._entries)

    def _take_idle(self, now: float) -> list[Engine]:
        # An engine with a connection checked out is busy (a long query), not idle.
        idle = [
            key
            for key, entry in self._entries.items()
            if now - entry.last_used > self._max_idle and not _in_use(entry.engine)
        ]
        return [self._entries.pop(key).engine for key in idle]

    def _take_least_recent(self) -> list[Engine]:
        taken: list[Engine] = []
        while len(self._entries) > self._max_engines:
            oldest = min(self._entries, key=lambda key: self._entries[key].last_used)
            taken.append(self._entries.pop(oldest).engine)
        return taken


def _in_use(engine: Engine) -> bool:
    checked_out = getattr(engine.pool, "checkedout", None)
    return bool(checked_out and checked_out())


def open_engine(source: DatabaseSource) -> Engine:
    """A new engine for `source`, opened the safe way for its backend (see the module docstring).

    Raises:
        ProjectDatabaseError: a SQLite file that does not exist.
    """
    if source.backend == "sqlite":
        return _sqlite_engine(source)
    if source.backend == "postgresql":
        engine = create_engine(
            source.url,
            connect_args={"connect_timeout": CONNECT_TIMEOUT_S, "application_name": "homeport"},
            **_SERVER_POOL,
        )
        event.listen(engine, "connect", _register_pg_loaders)
        return engine
    engine = create_engine(
        source.url, connect_args={"connect_timeout": CONNECT_TIMEOUT_S, "local_infile": False}, **_SERVER_POOL
    )
    event.listen(engine, "do_connect", _single_statement_client)
    return engine


def checkout(engine: Engine, source: DatabaseSource) -> PoolProxiedConnection:
    """A pooled DBAPI connection; close it to give it back.

    Raises:
        ProjectDatabaseError: the database cannot be reached.
    """
    try:
        return engine.raw_connection()
    except DRIVER_ERRORS as exc:
        raise database_error(exc, source, "could not connect") from exc


def database_error(exc: BaseException, source: DatabaseSource, doing: str) -> ProjectDatabaseError:
    """The ProjectDatabaseError for a driver error: what failed, on which database, and the driver's words."""
    return ProjectDatabaseError(f"{doing}: {driver_message(exc)} [{source.describe()}]")


def driver_message(exc: BaseException) -> str:
    """The driver's own message for `exc`, without SQLAlchemy's wrapping or a traceback."""
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        exc = exc.orig
    args = exc.args
    if isinstance(exc, pymysql.err.Error) and len(args) >= 2 and isinstance(args[0], int):
        return f"{args[1]} (MySQL error {args[0]})"
    if isinstance(exc, psycopg.Error) and exc.diag.message_primary:
        # The server's words without its LINE context, which would quote Homeport's DECLARE.
        parts = [exc.diag.message_primary, exc.diag.message_detail, exc.diag.message_hint]
        return "; ".join(part for part in parts if part)
    text = str(exc).strip()
    if isinstance(exc, SQLAlchemyError):
        text = text.split("\n(Background on this error", 1)[0].strip()
    return text or type(exc).__name__


def reset_session(connection: PoolProxiedConnection, backend: str) -> bool:
    """Have the database forget the session state a statement left; False when that failed.

    PostgreSQL: ``DISCARD ALL`` (settings, advisory locks, prepared statements, temporary tables,
    cursors, LISTEN). MySQL / MariaDB: ``COM_RESET_CONNECTION`` (user variables,
    ``LAST_INSERT_ID``, ``GET_LOCK`` locks, session variables, temporary tables, prepared
    statements, HANDLERs, table locks), then the character set, autocommit mode and current
    database the connection was opened with. SQLite: nothing outlives a read-only statement.
    A connection that cannot be reset must be discarded.
    """
    raw: Any = connection.driver_connection
    try:
        if backend == "postgresql":
            raw.rollback()
            raw.autocommit = True  # DISCARD ALL cannot run in a transaction block
            try:
                raw.execute("DISCARD ALL")  # psycopg forgets its own prepared statements too
            finally:
                raw.autocommit = False
        elif backend == "mysql":
            # PyMySQL has no call for it; the command is one byte with no arguments.
            raw._execute_command(_COM_RESET_CONNECTION, b"")
            raw._read_ok_packet()
            raw.set_character_set(raw.charset, raw.collation)
            raw.autocommit(False)
            if raw.db:
                raw.select_db(raw.db)
    except DRIVER_ERRORS:
        return False
    return True


def is_syntax_error(exc: BaseException) -> bool:
    """True when the database refused the statement's text rather than what it does."""
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        exc = exc.orig
    if isinstance(exc, psycopg.errors.SyntaxError):
        return True
    if isinstance(exc, pymysql.err.Error):
        return bool(exc.args) and exc.args[0] in _MYSQL_SYNTAX_ERRORS
    if isinstance(exc, sqlite3.OperationalError):
        return any(sign in str(exc) for sign in _SQLITE_SYNTAX_ERRORS)
    return False


def sqlite_authorizer(*, allow_writes: bool) -> Callable[[int, str | None, str | None, str | None, str | None], int]:
    """The SQLite authorizer callback for a connection in the given mode."""

    def authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
        if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION:
            return sqlite3.SQLITE_DENY if arg2 and denied_function_reason(arg2, "sqlite") else sqlite3.SQLITE_OK
        if allow_writes or action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE):
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_PRAGMA:
            return sqlite3.SQLITE_OK if arg1 and pragma_is_read_only(arg1, arg2 is not None) else sqlite3.SQLITE_DENY
        # Table-valued PRAGMA functions (pragma_table_info) ask for this while they declare their
        # columns; nothing can be written through a mode=ro, query_only connection anyway.
        if action == sqlite3.SQLITE_UPDATE and arg1 == "sqlite_master":
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    return authorize


def _sqlite_engine(source: DatabaseSource) -> Engine:
    path = source.sqlite_path
    if path is None or not path.is_file():
        raise ProjectDatabaseError(
            f"the SQLite database {path} does not exist (named by {source.origin}); create it, or fix the path"
        )
    uri = f"{path.as_uri()}?mode={'rw' if source.allow_writes else 'ro'}"
    authorizer = sqlite_authorizer(allow_writes=source.allow_writes)

    def connect() -> sqlite3.Connection:
        connection = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=CONNECT_TIMEOUT_S)
        if not source.allow_writes:
            connection.execute("PRAGMA query_only = ON")
        connection.set_authorizer(authorizer)
        return connection

    return create_engine("sqlite+pysqlite://", creator=connect, poolclass=QueuePool, **_POOL)


def _single_statement_client(_dialect: Any, _record: Any, _cargs: Any, cparams: dict[str, Any]) -> None:
    cparams["client_flag"] = int(cparams.get("client_flag", 0)) & ~CLIENT.MULTI_STATEMENTS
    cparams["local_infile"] = False
    cparams.pop("init_command", None)


def _tolerant(loader: type[Loader]) -> type[Loader]:
    """`loader`, returning the database's text for values Python cannot hold ('infinity')."""

    class Tolerant(loader):  # type: ignore[valid-type,misc]
        def load(self, data: Any) -> Any:
            try:
                return super().load(data)
            except psycopg.DataError:
                return bytes(data).decode("utf-8", "replace")

    return Tolerant


_PG_LOADERS: dict[str, type[Loader]] = {
    "date": _tolerant(pg_datetime.DateLoader),
    "timestamp": _tolerant(pg_datetime.TimestampLoader),
    "timestamptz": _tolerant(pg_datetime.TimestamptzLoader),
    # Intervals stay text: run_query asks for IntervalStyle iso_8601 ("P1M2DT3H"), which keeps
    # months as months where a timedelta would count them as 30 days.
    "interval": TextLoader,
}


def _register_pg_loaders(dbapi_connection: Any, _record: Any) -> None:
    for type_name, loader in _PG_LOADERS.items():
        dbapi_connection.adapters.register_loader(type_name, loader)
