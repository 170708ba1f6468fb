"""One workspace's store: the engine, its connection settings, migrations, read/write scopes.

SQLite is tuned for several processes writing one workspace: WAL (readers never block the
writer), a generous busy timeout, and writes that take the write lock up front with
`BEGIN IMMEDIATE`, so two writers queue instead of failing with "database is locked" when a
deferred read transaction tries to upgrade.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import stat
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock
from sqlalchemy import (
    ARRAY,
    Connection,
    Engine,
    Integer,
    Select,
    any_,
    bindparam,
    create_engine,
    event,
    func,
    select,
)
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from homeport.errors import CopyUnfinishedError, InvalidItemError, StoreError, StoreTooNewError
from homeport.store.copy_state import CHECKPOINT_QUERY, Checkpoint, refuse_partial_copy
from homeport.store.location import STORE_DIRNAME, STORE_FILENAME, store_path_for
from homeport.store.loop_calls import changed, may_wait, on_the_loop

__all__ = [
    "NO_CHECKPOINT_ON_CLOSE",
    "SCHEMA_REVISION",
    "SEARCH_INDEX_DDL",
    "STORE_DIRNAME",
    "STORE_FILENAME",
    "ByIds",
    "Prepared",
    "Store",
    "StoreConnector",
    "advance_sequence",
    "create_schema",
    "dict_rows",
    "driver",
    "insert_row",
    "store_path_for",
]

# The newest Alembic revision; a test pins it to the migration scripts' head.
SCHEMA_REVISION = "0013"
BUSY_TIMEOUT_MS = 30_000
# The full-text index (FTS5); the same statement as the newest migration that builds it.
SEARCH_INDEX_DDL = (
    "CREATE VIRTUAL TABLE search_index USING fts5(item_type UNINDEXED, item_id UNINDEXED, "
    "category UNINDEXED, updated_at UNINDEXED, title, body, tags, tokenize='porter unicode61', "
    "prefix='2 3 4')"
)
# Python 3.12+: closing the last connection neither checkpoints nor deletes the WAL and its index, so
# reopening an evicted store does not create them again (measured: open + first write 1.2 -> 0.4 ms,
# close 0.7 -> 0.04 ms). Store.close checkpoints instead, so the main file still holds every write.
# Python 3.11 cannot set it; there the last close checkpoints and deletes the WAL as usual.
NO_CHECKPOINT_ON_CLOSE: int | None = getattr(sqlite3, "SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE", None)
_NAMED_SQLITE = sqlite_dialect.dialect(paramstyle="named")  # :name placeholders, as sqlite3 takes them
_POSTCOMPILE = re.compile(r"__\[POSTCOMPILE_(\w+)\]")
_GITIGNORE = "# Homeport's local store; export with `homeport export` to share memory.\n*.db\n*.db-*\n*.lock\n"


class Store:
    """The memory store of one workspace (one SQLite file)."""

    def __init__(
        self, root: Path, *, pool_size: int = 2, connector: StoreConnector | None = None, path: Path | None = None
    ) -> None:
        self.root = root
        # `path`: a file named with `--store sqlite:///FILE` (homeport.store.binding), else the project's own.
        self.path = path or store_path_for(root)
        # Day-to-day connections come from a connector shared by every store of a cache: one dialect,
        # one compiled-statement cache, so a store reopened after eviction compiles nothing again.
        self._connector = connector or StoreConnector()
        self._engine: Engine | None = None
        # Idle connections, reused LIFO. Checking a long-lived Connection in and out costs a fraction of
        # SQLAlchemy's pool checkout with its reset-on-return; at most `pool_size` wait here (bounded files).
        self._idle: deque[Connection] = deque()
        self._max_idle = pool_size
        self._init_transactions()

    def _init_transactions(self) -> None:
        """The state `read` and `write` keep, for every backend (a PostgresStore has no __init__ of ours)."""
        self._closed = False
        self._write_lock = threading.Lock()
        self._reading = threading.local()  # the connection of the read open on this thread, for `read` to join
        self._written = False  # by this object: only then does close() checkpoint (see NO_CHECKPOINT_ON_CLOSE)

    @classmethod
    def open(
        cls,
        root: Path,
        *,
        create: bool,
        pool_size: int = 2,
        known_current: bool = False,
        connector: StoreConnector | None = None,
        allow_unfinished_copy: bool = False,
        path: Path | None = None,
    ) -> Store | None:
        """Open the store of `root`, creating and migrating it if `create`; None if absent and not `create`.

        `known_current` skips the schema check (and its lock) for a store this process already found at
        the head revision: reopening an evicted store then costs a connection, not a migration check.
        A store that an interrupted `homeport copy` is filling is refused unless `allow_unfinished_copy`
        (the copy itself, which resumes it). `path` names the file instead of `<root>/.homeport/homeport.db`.

        Raises:
            StoreError: the directory cannot be created or the database cannot be migrated.
            CopyUnfinishedError: the store holds an unfinished copy (see homeport.store.copy_state).
        """
        named = path is not None
        path = path or store_path_for(root)
        _refuse_linked_store(path)
        fresh = not path.exists()
        if fresh:
            if not create:
                return None
            _prepare_directory(path.parent, ignore_file=not named)  # a named file's folder is the user's own
        store = cls(root, pool_size=pool_size, connector=connector, path=path)
        if known_current and not fresh:
            return store
        try:
            if fresh or not store._ready():
                store._create_or_migrate(fresh)
            if not fresh and not allow_unfinished_copy:
                refuse_partial_copy(store._checkpoint(), str(path))
        except (StoreTooNewError, CopyUnfinishedError):
            store.close()
            raise
        except Exception as exc:  # SQLAlchemy, Alembic, the lock file, the OS: one error for the caller
            store.close()
            cause = exc.__cause__ if isinstance(exc, StoreError) and exc.__cause__ else exc
            raise StoreError(
                f"cannot open the store {path}: {_cause(cause) if isinstance(cause, SQLAlchemyError) else cause}; "
                "check that the workspace is writable, or move the damaged .homeport/homeport.db aside"
            ) from exc
        return store

    @property
    def where(self) -> str:
        """The store, named for messages: its file (a PostgreSQL store: the URL without password, and the key)."""
        return str(self.path)

    @contextlib.contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection for reads (one consistent snapshot for the block).

        A read inside another read of this store on the same thread joins it: a call that reads
        several times inside one `read()` (get_context) sees one snapshot, in one transaction.
        """
        joined = getattr(self._reading, "conn", None)
        if joined is not None:
            yield joined
            return
        with self._read_transaction() as conn:
            self._reading.conn = conn
            try:
                yield conn
            finally:
                self._reading.conn = None

    def _read_transaction(self) -> contextlib.AbstractContextManager[Connection]:
        return self._transaction("BEGIN", "reading")

    @contextlib.contextmanager
    def write(self) -> Iterator[Connection]:
        """A connection inside a write transaction, committed at the end of the block, rolled back on error."""
        self._written = True
        # Writers of this process queue here, woken as soon as the writer before them commits. Left to
        # SQLite's busy handler they would sleep in steps of up to 100 ms (p95 200 ms with 32 HTTP clients).
        # Other processes still meet the write lock of BEGIN IMMEDIATE and the busy timeout.
        # On the event loop (`loop_calls`) neither is waited for while the call can still go to a thread.
        if not self._write_lock.acquire(blocking=False):
            may_wait("the store's write lock, held by another call of this process")
            self._write_lock.acquire()
        try:
            with self._transaction("BEGIN IMMEDIATE", "writing", nowait=on_the_loop()) as conn:
                yield conn
        finally:
            self._write_lock.release()
        changed()

    @contextlib.contextmanager
    def _transaction(self, begin: str, doing: str, *, nowait: bool = False) -> Iterator[Connection]:
        # The transaction is begun and ended on the driver connection: prepared statements (see
        # `Prepared`) run there directly, and SQLAlchemy, if a block uses it, joins the open transaction
        # (its "begin" event sees one is open) and is committed or rolled back with it.
        try:
            conn = self._idle.pop()
        except IndexError:
            conn = None
        try:
            if conn is None:
                conn = self._connector.connect(self.path)
            raw = driver(conn)
            if nowait:
                _begin_without_waiting(raw, begin)
            else:
                raw.execute(begin)
            try:
                yield conn
                _end(conn, raw, commit=True)
            except BaseException:
                # Also after a failed COMMIT (a deferred constraint, a full disk), which leaves the
                # transaction open: roll back, so no pooled connection keeps a transaction.
                with contextlib.suppress(SQLAlchemyError, sqlite3.Error):
                    _end(conn, raw, commit=False)
                raise
        except (SQLAlchemyError, sqlite3.Error) as exc:
            raise StoreError(f"{doing} the store {self.path} failed: {_cause(exc)}") from exc
        except UnicodeEncodeError as exc:  # unpaired surrogates, e.g. "\udcff", cannot be stored as UTF-8
            raise InvalidItemError(
                f"text contains characters that are not valid Unicode ({exc.reason}); send UTF-8 text"
            ) from exc
        finally:
            if conn is not None:
                self._check_in(conn)

    def _check_in(self, conn: Connection) -> None:
        if self._closed or conn.invalidated or len(self._idle) >= self._max_idle or _still_open(conn):
            conn.close()
        else:
            self._idle.append(conn)

    def close(self) -> None:
        """Close idle connections now; connections in use on other threads close when they come back."""
        self._closed = True
        checkpoint = NO_CHECKPOINT_ON_CLOSE is not None and self._written
        while self._idle:
            try:
                conn = self._idle.pop()
            except IndexError:
                break
            if checkpoint:  # see NO_CHECKPOINT_ON_CLOSE: copy the WAL into the main file, keep the WAL file
                checkpoint = False
                with contextlib.suppress(sqlite3.Error):
                    driver(conn).execute("PRAGMA wal_checkpoint(PASSIVE)")
            conn.close()
        if self._engine is not None:
            self._engine.dispose()

    @property
    def engine(self) -> Engine:
        """An engine bound to this store's file alone, for migrations and tools that need an Engine."""
        if self._engine is None:
            self._engine = _sqlite_engine(f"sqlite+pysqlite:///{self.path}")
        return self._engine

    def _ready(self) -> bool:
        """True when the store is in WAL mode at the head revision: usable without the migration lock.

        The connection that checks stays in the idle stack for the call that opened the store, so
        an existing store costs one connection to open, not a lock file and a second connection.
        """
        conn = self._connector.connect(self.path)
        try:
            raw = driver(conn)
            wal = raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            return wal and _driver_revision(raw) == SCHEMA_REVISION
        finally:
            self._check_in(conn)

    def _checkpoint(self) -> Checkpoint | None:
        """The unfinished copy into this store, if any: one statement on the connection `_ready` left idle."""
        conn = self._connector.connect(self.path) if not self._idle else self._idle.pop()
        try:
            row = driver(conn).execute(CHECKPOINT_QUERY).fetchone()
        finally:
            self._check_in(conn)
        return Checkpoint(*row) if row is not None else None

    def _create_or_migrate(self, fresh: bool) -> None:
        self._written = True  # a created or migrated schema is a write: close() checkpoints it too
        # Two processes may open a fresh workspace at once; one creates or migrates, the other waits.
        with FileLock(str(_migrate_lock(self)), timeout=60):
            # WAL is a property of the file: set once here, outside any transaction, not on every connection.
            with contextlib.closing(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000)) as raw:
                raw.execute("PRAGMA journal_mode=WAL")
            with self.read() as conn:
                current = _driver_revision(driver(conn))
            if current == SCHEMA_REVISION:
                return
            if current is None and _is_empty(self.engine):
                create_schema(self.engine)
                return
            from homeport.store.migrate import upgrade  # Alembic is imported only when a migration runs.

            upgrade(self.engine, where=str(self.path))


def create_schema(engine: Engine) -> None:
    """Create the head schema in an empty database in one transaction, stamped at SCHEMA_REVISION.

    Equivalent to running every migration (a test compares the two), without Alembic's cost on
    each new workspace.
    """
    from homeport.store.schema import metadata

    with engine.connect().execution_options(homeport_begin="BEGIN IMMEDIATE") as conn, conn.begin():
        metadata.create_all(conn)
        conn.exec_driver_sql(SEARCH_INDEX_DDL)
        conn.exec_driver_sql(
            "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, "
            "CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"
        )
        conn.exec_driver_sql("INSERT INTO alembic_version (version_num) VALUES (?)", (SCHEMA_REVISION,))


def _refuse_linked_store(path: Path) -> None:
    """The store file must be the project's own: SQLite would follow a symlink (even a dangling one, creating
    its target) and write another project's memory or any file the server can reach. A symlinked
    `.homeport/` itself is refused earlier, when the project is found (homeport.workspace.guards).

    Raises:
        StoreError: `path` is a symlink or not a regular file.
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"cannot inspect the store {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(mode):
        kind = "a symlink" if stat.S_ISLNK(mode) else "not a regular file"
        raise StoreError(
            f"the store {path} is {kind}; a project's store must be its own file: remove it (or move the "
            "file it points to into its place)"
        )


def _is_empty(engine: Engine) -> bool:
    with engine.connect() as conn:
        return conn.exec_driver_sql("SELECT count(*) FROM sqlite_master WHERE type = 'table'").scalar() == 0


def _driver_revision(raw: sqlite3.Connection) -> str | None:
    try:
        row = raw.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.OperationalError:  # no such table: an empty or foreign database
        return None
    return row[0] if row else None


def _prepare_directory(directory: Path, *, ignore_file: bool = True) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        ignore = directory / ".gitignore"
        if ignore_file and not ignore.exists():
            ignore.write_text(_GITIGNORE, encoding="utf-8")
    except OSError as exc:
        raise StoreError(
            f"cannot create the store directory {directory}: {exc.strerror}; check that the workspace is writable"
        ) from exc


class StoreConnector:
    """Connections to any store file through one engine (one dialect, one compiled-statement cache)."""

    def __init__(self) -> None:
        self._opening = threading.local()  # the file the engine's creator opens, set only around connect()
        self.engine = _sqlite_engine("sqlite+pysqlite://", creator=self._open_file)

    def connect(self, path: Path) -> Connection:
        self._opening.path = path
        try:
            return self.engine.connect()
        finally:
            del self._opening.path

    def _open_file(self) -> sqlite3.Connection:
        raw = sqlite3.connect(self._opening.path, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000)
        if NO_CHECKPOINT_ON_CLOSE is not None:
            raw.setconfig(NO_CHECKPOINT_ON_CLOSE, True)  # type: ignore[attr-defined,unused-ignore]
        return raw

    def close(self) -> None:
        self.engine.dispose()


def _sqlite_engine(url: str, *, creator: Callable[[], sqlite3.Connection] | None = None) -> Engine:
    # NullPool: Store keeps its own small stack of idle connections (see Store.__init__).
    options: dict[str, Any] = (
        {"creator": creator}
        if creator
        else {"connect_args": {"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000}}
    )
    engine = create_engine(url, poolclass=NullPool, **options)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event, not the driver, decide when transactions start.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        if not driver(conn).in_transaction:  # a Store transaction already began it on the driver connection
            conn.exec_driver_sql(conn.get_execution_options().get("homeport_begin", "BEGIN"))

    return engine


def driver(conn: Connection) -> sqlite3.Connection:
    """The sqlite3 connection under `conn`, inside the same transaction, for `Prepared` statements."""
    return conn.connection.driver_connection  # type: ignore[return-value]


def _still_open(conn: Connection) -> bool:
    """True if `conn` still holds a transaction (a rollback that failed): it is closed, not reused."""
    try:
        return conn.in_transaction() or driver(conn).in_transaction
    except (SQLAlchemyError, sqlite3.Error, AttributeError):  # closed or invalidated underneath
        return True


def _begin_without_waiting(raw: sqlite3.Connection, begin: str) -> None:
    """`begin` on the event loop: if another process holds the lock it takes, `may_wait` first (the call
    goes to a thread if it has changed nothing yet), then wait for the lock as off the loop."""
    raw.execute("PRAGMA busy_timeout=0")
    try:
        raw.execute(begin)
        return
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY:
            raise
    finally:
        raw.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    may_wait("the store's write lock, held by another process")
    raw.execute(begin)


def _end(conn: Connection, raw: sqlite3.Connection, *, commit: bool) -> None:
    """End a Store transaction: SQLAlchemy's if it joined it (it then ends the driver's), else the driver's."""
    if conn.in_transaction():
        conn.commit() if commit else conn.rollback()
    elif raw.in_transaction:
        raw.execute("COMMIT" if commit else "ROLLBACK")


class Prepared:
    """A Core statement compiled once; run on the driver connection, without SQLAlchemy's per-call work.

    The hot statements (a decision's insert, tags, the search index, the latest items) cost about a
    fifth of `Connection.execute` this way. Parameters are passed by name as a dict; values bound in
    the statement itself (`column == "decision"`) are filled in from the compiled statement.

    On any other dialect (a PostgreSQL store) the same statement runs through SQLAlchemy instead.
    """

    __slots__ = ("_defaults", "_other", "sql", "statement")

    def __init__(self, statement: Any) -> None:
        self.statement = statement
        self._other: tuple[str, dict[str, Any]] | None = None  # compiled for PostgreSQL on first use there
        compiled = statement.compile(dialect=_NAMED_SQLITE)
        # Values SQLAlchemy renders late (e.g. aggregate_strings' separator) become ordinary parameters.
        self.sql = _POSTCOMPILE.sub(r":\1", str(compiled))
        self._defaults = {k: v for k, v in compiled.params.items() if v is not None}

    def run(self, conn: Connection, params: dict[str, Any] | None = None) -> Any:
        if conn.dialect.name != "sqlite":
            sql, defaults = self._compiled_for(conn)
            return conn.exec_driver_sql(sql, {**defaults, **params} if params else defaults)
        return driver(conn).execute(self.sql, {**self._defaults, **params} if params else self._defaults)

    def insert(self, conn: Connection, params: dict[str, Any]) -> int:
        """Run an INSERT; the new row's id."""
        if conn.dialect.name != "sqlite":
            result = conn.execute(self.statement, _without_null_id(params))
            key = result.inserted_primary_key
            assert key is not None  # an INSERT that did not raise inserted a row
            row_id = int(key[0])
            if params.get("id") is not None:  # an id given (an import): the sequence must not hand it out again
                advance_sequence(conn, self.statement.table.name, row_id)
            return row_id
        row_id = self.run(conn, params).lastrowid
        assert row_id is not None  # an INSERT that did not raise inserted a row
        return int(row_id)

    def run_many(self, conn: Connection, rows: list[dict[str, Any]]) -> None:
        if conn.dialect.name != "sqlite":
            sql, defaults = self._compiled_for(conn)
            conn.exec_driver_sql(sql, [{**defaults, **r} for r in rows])
            return
        driver(conn).executemany(self.sql, [{**self._defaults, **r} for r in rows])

    def _compiled_for(self, conn: Connection) -> tuple[str, dict[str, Any]]:
        """The statement in the connection's dialect and paramstyle (pyformat for psycopg), compiled once."""
        if self._other is None:
            compiled = self.statement.compile(dialect=conn.dialect)
            sql = _POSTCOMPILE.sub(r"%(\1)s", str(compiled))
            self._other = (sql, {k: v for k, v in compiled.params.items() if v is not None})
        return self._other


class ByIds:
    """A select narrowed to a list of ids, built once per dialect: `ByIds(build)`, where `build(ids_in)`
    makes the select and `ids_in(column)` is the condition that `column` is one of the `ids` parameter.
    `run(conn, {"ids": [...], ...})` gives its rows as tuples, columns in the select's order.

    SQLite reads the ids from one JSON array (`IN (SELECT value FROM json_each(:ids))`) on the driver
    connection (a `Prepared` statement): the query text is the same for any number of ids, where an
    expanded `IN` of 60 ids was rendered by SQLAlchemy on every call and its rows wrapped one by one
    (get_context: 3.5 -> 2.2 ms of CPU a call). PostgreSQL gets `= ANY(%(ids)s)` with one array
    parameter, for the same reason: psycopg converts and prepares that text once, where an expanded
    `IN` was parsed again on every call (a third of get_context's CPU there).
    """

    __slots__ = ("_postgresql", "_sqlite")

    def __init__(self, build: Callable[[Callable[[Any], Any]], Select[Any]]) -> None:
        json_ids = func.json_each(bindparam("ids")).table_valued("value")
        self._sqlite = Prepared(build(lambda column: column.in_(select(json_ids.c.value))))
        self._postgresql = build(lambda column: column == any_(bindparam("ids", type_=ARRAY(Integer))))

    def run(self, conn: Connection, params: dict[str, Any]) -> Iterable[Any]:
        if conn.dialect.name == "sqlite":
            rows: Iterable[Any] = self._sqlite.run(conn, {**params, "ids": json.dumps(list(params["ids"]))})
            return rows
        return conn.execute(self._postgresql, {**params, "ids": list(params["ids"])})


def _without_null_id(params: dict[str, Any]) -> dict[str, Any]:
    """SQLite numbers a row whose id is NULL; PostgreSQL needs the column left out to use its sequence."""
    if "id" in params and params["id"] is None:
        return {k: v for k, v in params.items() if k != "id"}
    return params


def advance_sequence(conn: Connection, table: str, row_id: int) -> None:
    """After a row was inserted with an explicit id on PostgreSQL: the table's sequence moves past it.

    Nothing where the id has no sequence (the shared layout numbers ids per workspace in a trigger).
    """
    conn.exec_driver_sql(
        f"SELECT setval(s, GREATEST({int(row_id)}, pg_sequence_last_value(s::regclass))) "
        f"FROM pg_get_serial_sequence('{table}', 'id') AS s WHERE s IS NOT NULL"
    )


def insert_row(conn: Connection, statement: Any) -> int:
    """Run a Core INSERT; the new row's id."""
    key = conn.execute(statement).inserted_primary_key
    assert key is not None  # an INSERT that did not raise inserted a row
    if conn.dialect.name != "sqlite" and statement.compile().params.get("id") is not None:
        advance_sequence(conn, statement.table.name, int(key[0]))
    return int(key[0])


def dict_rows(cursor: Any) -> list[dict[str, Any]]:
    """A cursor's rows (a driver cursor, or a SQLAlchemy result on PostgreSQL) as dicts keyed by column name."""
    # A SQLAlchemy result names its columns with keys() (iterating it would consume the rows).
    names = [d[0] for d in cursor.description] if isinstance(cursor, sqlite3.Cursor) else list(map(str, cursor.keys()))
    return [dict(zip(names, row, strict=True)) for row in cursor]


def _cause(exc: SQLAlchemyError | sqlite3.Error) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig) if orig is not None else str(exc).splitlines()[0]


def _migrate_lock(store: Store) -> Path:
    """The lock migrations of `store` take: `.homeport/migrate.lock` beside a project's own store, `FILE.lock`
    beside a file named with --store (whose folder may hold other files of the user's)."""
    if store.path == store_path_for(store.root):
        return store.path.parent / "migrate.lock"
    return store.path.with_name(store.path.name + ".lock")
