"""Every workspace's memory in one PostgreSQL database: one schema per workspace.

`homeport.workspaces` maps a workspace key (a canonical path, or a logical key such as `acme/api`)
to its schema (`ws_` and 24 hex digits of the key's SHA-256) and the revision it was migrated to.
Inside a schema the tables are those of a SQLite store, built by the same Alembic migrations, so
every item module runs unchanged: each transaction starts with `SET LOCAL search_path` to the
workspace's schema, sent with its `BEGIN` (and a writer's lock) in one round trip. Why a schema per
workspace rather than a workspace column on every table is in docs/architecture.md ("The store").

Writers of one workspace are serialised as on SQLite (where `BEGIN IMMEDIATE` does it): a lock per
store within the process, and a transaction-scoped advisory lock across processes. Migrations take
an advisory lock too, so servers starting at once never apply one twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from homeport.errors import ConfigError, InvalidItemError, InvalidWorkspaceError, StoreError
from homeport.store.copy_state import CHECKPOINT_QUERY, Checkpoint, refuse_partial_copy
from homeport.store.database import Store
from homeport.workspace.keys import canonical_key

if TYPE_CHECKING:
    from homeport.store.postgres_shared import SharedLayout

__all__ = ["MAX_KEY_CHARS", "PostgresStore", "PostgresStores", "engine_for", "schema_for", "shown_url"]

MAX_KEY_CHARS = 1000
_REGISTRY = "homeport.workspaces"
# The layout of a new database when its URL names none (an existing one keeps its own).
DEFAULT_LAYOUT = "schema"
# pg_advisory_xact_lock keys: one for the registry itself, one per workspace schema (hashed from its name).
_REGISTRY_LOCK = 0x686F6D65706F7274  # "homeport"


def schema_for(key: str) -> str:
    """The schema of the workspace `key`: stable, a valid unquoted identifier, never longer than 27 characters."""
    return "ws_" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


def _lock_id(schema: str) -> int:
    return int.from_bytes(hashlib.sha256(schema.encode()).digest()[:8], "big", signed=True)


def shown_url(url: str) -> str:
    """The store URL with its password hidden, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparsable store URL>"


_BURST = 10  # connections beyond pool_size that concurrent calls may open (the former max_overflow)


def engine_for(url: str, *, pool_size: int = 5) -> Engine:
    """An engine on the PostgreSQL database at `url` (postgresql://, postgres:// or postgresql+psycopg://).

    Raises:
        ConfigError: not a PostgreSQL URL.
    """
    try:
        parsed = make_url(url.replace("postgres://", "postgresql://", 1) if url.startswith("postgres://") else url)
    except ArgumentError as exc:
        raise ConfigError("the store URL does not parse; use postgresql://user:password@host:port/db") from exc
    if parsed.get_backend_name() != "postgresql":
        raise ConfigError(
            f"--store {shown_url(url)}: only PostgreSQL is supported (postgresql://user@host/db); "
            "without --store each workspace keeps its own SQLite file"
        )
    # `layout` is Homeport's (see PostgresStores), not a connection option for the driver.
    parsed = parsed.set(drivername="postgresql+psycopg").difference_update_query(["layout"])
    # At most pool_size + 10 connections, all kept once opened: with SQLAlchemy's overflow (max_overflow=10),
    # every connection above pool_size was closed on return and opened again by the next burst of calls, a few
    # milliseconds of CPU each on both sides. Connections are still opened only when calls want them at once.
    ceiling = pool_size + _BURST
    return create_engine(parsed, pool_size=ceiling, max_overflow=0, pool_pre_ping=False, pool_recycle=3600)


class PostgresStore(Store):
    """The memory of one workspace: a schema in the shared database (the same interface as a SQLite `Store`)."""

    def __init__(self, stores: PostgresStores, key: str, schema: str) -> None:
        # Deliberately not Store.__init__: there is no file and no connection stack of its own.
        self.root = Path(key)
        self.key = key
        self.schema = schema
        self.path = Path(key)  # no file; messages use `where`
        self._where = f"{shown_url(stores.url)} (workspace {key})"
        self._stores = stores
        self._init_transactions()
        self._lock_id = _lock_id(schema)
        # Each transaction's first round trip: BEGIN, this workspace's tables, custom plans (below), and for a
        # writer the lock that serialises it with every other process's writers. psycopg would send its own BEGIN
        # as a round trip of its own, then one for each statement after it; a call is mostly these round trips
        # (a one-statement read is three), so each one saved is CPU on both sides and, to a remote database,
        # latency. Custom plans: psycopg prepares a statement run five times and PostgreSQL may then plan it
        # once for every query, a plan that walks the rowid index and tests every row for a full-text or a vector
        # search (measured at 100,000 items: 43 ms instead of 3), and one that does not match pgvector's partial
        # index, made for one model's name.
        settings = f"SET LOCAL search_path TO {schema}; SET LOCAL plan_cache_mode = force_custom_plan"
        # A read also learns, in the same round trip, whether any decision or pattern is scoped to a branch
        # (`store.branches` asks before every read of them; as a statement of its own it was a round trip).
        scoped = "SELECT EXISTS (SELECT 1 FROM item_branches WHERE promoted_at IS NULL)"
        self._begin_read = f"BEGIN ISOLATION LEVEL REPEATABLE READ; {settings}; {scoped}"  # one snapshot
        self._begin_write = f"BEGIN; {settings}; SELECT pg_advisory_xact_lock({self._lock_id})"
        # The driver in autocommit sends no BEGIN of its own; ours opens the transaction, and psycopg's
        # commit and rollback end it (they send COMMIT or ROLLBACK whenever one is open).
        self._options: dict[str, Any] = {"isolation_level": "AUTOCOMMIT"}

    def _read_transaction(self) -> contextlib.AbstractContextManager[Connection]:
        return self._transaction(write=False)

    @contextlib.contextmanager
    def write(self) -> Iterator[Connection]:
        with self._write_lock, self._transaction(write=True) as conn:
            yield conn

    @contextlib.contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Connection]:  # type: ignore[override]
        doing = "writing" if write else "reading"
        try:
            with self._stores.engine.connect() as conn:
                conn = conn.execution_options(**self._options)
                if write:
                    conn.exec_driver_sql(self._begin_write)
                    conn.info["homeport_scoped"] = None
                else:
                    conn.begin()  # as exec_driver_sql's autobegin: conn.commit() below ends our BEGIN
                    conn.info["homeport_scoped"] = _last_answer(conn, self._begin_read)
                try:
                    yield conn
                    conn.commit()
                except BaseException:
                    with contextlib.suppress(SQLAlchemyError):
                        conn.rollback()
                    raise
        except SQLAlchemyError as exc:
            raise StoreError(f"{doing} the store {self._where} failed: {_cause(exc)}") from exc
        except UnicodeEncodeError as exc:
            raise InvalidItemError(
                f"text contains characters that are not valid Unicode ({exc.reason}); send UTF-8 text"
            ) from exc

    @property
    def where(self) -> str:
        return self._where

    @property
    def url(self) -> str:
        """The database URL of the shared store (with its password: for opening it, never for messages)."""
        return self._stores.url

    def close(self) -> None:
        self._closed = True

    @property
    def engine(self) -> Engine:
        return self._stores.engine


def _last_answer(conn: Connection, statements: str) -> bool | None:
    """Run `statements` (one round trip) and return the single value of the last one's row, if it has one:
    store.branches reads it instead of asking (a SharedStore's begin ends with no such row: None)."""
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(statements)
        answer = None
        while True:
            answer = cursor.fetchone()[0] if cursor.description is not None else None
            if not cursor.nextset():
                break
        return None if answer is None else bool(answer)
    except conn.dialect.loaded_dbapi.Error as exc:  # as SQLAlchemy would have raised it
        raise SQLAlchemyError(str(exc)) from exc
    finally:
        cursor.close()


class SharedStore(PostgresStore):
    """The memory of one workspace in the shared tables (`homeport.store.postgres_shared`): workspace number `ws`."""

    shares_tables = True  # homeport.store._pgvector: no HNSW index of its own

    def __init__(self, stores: PostgresStores, key: str, ws: int) -> None:
        from homeport.store.postgres_shared import SHARED_SCHEMA, begin_statements

        super().__init__(stores, key, SHARED_SCHEMA)
        self.ws = ws
        self._lock_id = _lock_id(f"{SHARED_SCHEMA}/{ws}")
        self._begin_read, self._begin_write = begin_statements(ws, self._lock_id)
        # Marks its statements for the rewrite of conflict targets (postgres_shared._add_ws_to_conflict_targets).
        self._options = {**self._options, "homeport_shared": True}


class PostgresStores:
    """Every workspace's store in one PostgreSQL database, created and migrated on first use.

    Two layouts (docs/architecture.md, "The store"): one schema per workspace, or every workspace in
    shared tables keyed by workspace (`homeport.store.postgres_shared`). A database keeps the layout it
    was created with; `?layout=shared` in the URL creates a new database in the shared layout (and
    `homeport migrate` with it moves a database of schemas there), `?layout=schema` insists on schemas.
    """

    def __init__(self, url: str, *, pool_size: int = 5) -> None:
        from homeport.store.postgres_shared import requested_layout

        self.url = url
        self.engine = engine_for(url, pool_size=pool_size)
        self.requested = requested_layout(make_url(url).query)
        self._lock = threading.Lock()
        self._stores: dict[str, PostgresStore] = {}
        self._registry_ready = False
        self._layout: Any = None  # the SharedLayout, once found; False: one schema per workspace

    def get(self, key: str, *, create: bool, allow_unfinished_copy: bool = False) -> PostgresStore | None:
        """The store of workspace `key`; None for a workspace with no store yet unless `create`.

        A workspace that an interrupted `homeport copy` is filling is refused unless `allow_unfinished_copy`
        (the copy itself, which resumes it); checked when the store is first opened by this object.

        Raises:
            StoreError: the database cannot be reached, or its schema is at a revision this version does not know.
            CopyUnfinishedError: the workspace holds an unfinished copy (see homeport.store.copy_state).
        """
        store = self._stores.get(key)
        if store is not None:
            return store
        if len(key) > MAX_KEY_CHARS:
            raise InvalidItemError(f"workspace key is longer than {MAX_KEY_CHARS} characters")
        with self._lock:
            store = self._stores.get(key)
            if store is not None:
                return store
            try:
                store = self._open(key, create=create)
            except SQLAlchemyError as exc:
                raise StoreError(f"the store {shown_url(self.url)} failed: {_cause(exc)}") from exc
            if store is not None:
                if not allow_unfinished_copy:
                    with store.read() as conn:
                        checkpoint = conn.exec_driver_sql(CHECKPOINT_QUERY).first()
                    refuse_partial_copy(Checkpoint(*checkpoint) if checkpoint else None, store.where)
                self._stores[key] = store
            return store

    def shared_layout(self, *, create: bool = True) -> SharedLayout | None:
        """The shared tables of this database, or None when it keeps one schema per workspace.

        Decided once per object: a database with the shared layout uses it; a new database gets the layout
        its URL asks for (`DEFAULT_LAYOUT` if none), created here unless not `create` (then None until then).

        Raises:
            ConfigError: the URL asks for a layout the database does not have.
        """
        if self._layout is not None:
            return self._layout or None
        from homeport.store.postgres_shared import SharedLayout

        with self.engine.connect() as conn:
            shared = SharedLayout.exists(conn)
        schemas = self._holds_schemas()
        if shared and schemas:
            raise ConfigError(
                f"moving the workspaces of {shown_url(self.url)} into shared tables is unfinished; run "
                f"`homeport migrate --store '{shown_url(self.url)}'` with layout=shared again to finish it"
            )
        wanted = self.requested or ("schema" if schemas else DEFAULT_LAYOUT)
        if shared and self.requested == "schema":
            raise ConfigError(
                f"{shown_url(self.url)} keeps every workspace in shared tables (layout=shared); "
                "drop layout=schema from the store URL"
            )
        if not shared and wanted == "shared" and schemas:
            raise ConfigError(
                f"{shown_url(self.url)} keeps one schema per workspace; to move every workspace into shared tables "
                f"run `homeport migrate --store '{shown_url(self.url)}'` (with layout=shared), or drop layout=shared"
            )
        if not shared and wanted == "schema":
            self._layout = False
            return None
        layout = SharedLayout(self, shown_url(self.url))
        if not shared:
            if not create:
                return None
            layout.create()
        self._layout = layout
        return layout

    def shared_store(self, key: str, ws: int) -> SharedStore:
        """The store of workspace number `ws` of the shared layout (for `SharedLayout.open`)."""
        return SharedStore(self, key, ws)

    def moves_to_shared(self) -> bool:
        """True when the URL asks for the shared layout and workspaces are still kept in schemas of their own:
        `homeport migrate` then moves them (homeport.store.postgres_move)."""
        return self.requested == "shared" and self._holds_schemas()

    def _open(self, key: str, *, create: bool) -> PostgresStore | None:
        from homeport.store.database import SCHEMA_REVISION

        layout = self.shared_layout()
        if layout is not None:
            return layout.open(key, create=create)
        self.ensure_registry()
        with self.engine.connect() as conn:
            row = conn.exec_driver_sql(
                f"SELECT schema_name, revision FROM {_REGISTRY} WHERE key = %(k)s", {"k": key}
            ).first()
        if row is None and not key.startswith("/"):
            row = self._adopt_other_spelling(key)
        if row is not None and row.revision == SCHEMA_REVISION:
            return PostgresStore(self, key, row.schema_name)
        if row is None and not create:
            return None
        schema = row.schema_name if row is not None else schema_for(key)
        self._migrate(key, schema)
        return PostgresStore(self, key, schema)

    def _adopt_other_spelling(self, key: str) -> Any:
        """The row of a logical key kept under another spelling by a Homeport that did not make keys
        canonical (`acme/Vault` for `acme/vault`), now renamed to `key`; None when there is none.

        Raises:
            InvalidWorkspaceError: two spellings hold a workspace; the message names them.
        """
        if _canonical_or_none(key) != key:
            return None  # only a canonical key takes another's memory
        # Keys hold only [a-z0-9._-] once canonical: `_` is the one LIKE wildcard among them.
        head = key.split("/", 1)[0].replace("_", "\\_")
        with self.engine.connect() as conn:
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_REGISTRY_LOCK})")
            rows = conn.exec_driver_sql(
                f"SELECT key, schema_name, revision FROM {_REGISTRY} WHERE lower(key) LIKE %(p)s",
                {"p": head + "%"},
            ).all()
            spellings = [r for r in rows if r.key != key and _canonical_or_none(str(r.key)) == key]
            if not spellings or any(r.key == key for r in rows):
                return None  # nothing to take, or `key` was registered meanwhile
            if len(spellings) > 1:
                names = ", ".join(repr(r.key) for r in spellings)
                raise InvalidWorkspaceError(
                    f"the memory of logical workspace {key!r} is kept under {len(spellings)} spellings of its key "
                    f"({names}) in {shown_url(self.url)}; keys are now compared lower-cased and without a trailing "
                    "'.' or '.git'. Keep one: move the others' items into it (homeport export / import) and drop them"
                )
            conn.exec_driver_sql(
                f"UPDATE {_REGISTRY} SET key = %(k)s WHERE key = %(old)s", {"k": key, "old": spellings[0].key}
            )
            conn.commit()
            return spellings[0]

    def ensure_registry(self) -> None:
        """Create the schema `homeport` and its table of workspaces once (under an advisory lock)."""
        if self._registry_ready:
            return
        with self.engine.connect() as conn:
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_REGISTRY_LOCK})")
            conn.exec_driver_sql("CREATE SCHEMA IF NOT EXISTS homeport")
            conn.exec_driver_sql(
                f"CREATE TABLE IF NOT EXISTS {_REGISTRY} (key TEXT PRIMARY KEY, schema_name TEXT NOT NULL UNIQUE, "
                "revision TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
            conn.commit()
        self._registry_ready = True

    def _migrate(self, key: str, schema: str) -> None:
        from homeport.store.migrate import upgrade_postgres

        revision = upgrade_postgres(self.engine, schema, _lock_id(schema))
        with self.engine.connect() as conn:
            conn.exec_driver_sql(
                f"INSERT INTO {_REGISTRY} (key, schema_name, revision) VALUES (%(k)s, %(s)s, %(r)s) "
                "ON CONFLICT (key) DO UPDATE SET revision = EXCLUDED.revision",
                {"k": key, "s": schema, "r": revision},
            )
            conn.commit()

    def revisions(self) -> dict[str, str]:
        """Each registered workspace's key and the revision its schema was last migrated to."""
        layout = self.shared_layout()
        if layout is not None:
            revision = layout.revision()
            return {key: revision for key in sorted(layout.registered())}
        self.ensure_registry()
        with self.engine.connect() as conn:
            rows = conn.exec_driver_sql(f"SELECT key, revision FROM {_REGISTRY} ORDER BY key").all()
            return {str(key): str(revision) for key, revision in rows}

    def registered(self) -> dict[str, tuple[str, str]]:
        """Each registered workspace's key with its schema and revision, read without creating anything
        (empty when the database has no `homeport.workspaces` yet): for `where` and `doctor`.

        Raises:
            StoreError: the database cannot be reached.
        """
        try:
            layout = self.shared_layout(create=False)
            if layout is not None:
                return layout.registered()
            with self.engine.connect() as conn:
                if conn.exec_driver_sql(f"SELECT to_regclass('{_REGISTRY}')").scalar() is None:
                    return {}
                rows = conn.exec_driver_sql(f"SELECT key, schema_name, revision FROM {_REGISTRY}").all()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot reach the store {shown_url(self.url)}: {_cause(exc)}") from exc
        return {str(key): (str(schema), str(revision)) for key, schema, revision in rows}

    def check_revisions(self) -> None:
        """Refuse a database where some workspace is at a revision this version does not know.

        Raises:
            StoreTooNewError: a newer Homeport migrated a workspace of this database.
            StoreError: the database cannot be reached.
        """
        from homeport.store.migrate import check_known

        try:
            revisions = self.revisions()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot reach the store {shown_url(self.url)}: {_cause(exc)}") from exc
        for key, revision in revisions.items():
            check_known(revision, f"{shown_url(self.url)} (workspace {key})")

    def migrate_all(self) -> dict[str, str]:
        """Bring every registered workspace to the head revision; each key with its revision before."""
        layout = self.shared_layout()
        if layout is not None:  # once for the database, not once per workspace
            before = self.revisions()
            layout.reconcile()
            return before
        before = self.revisions()
        for key in before:
            self._stores.pop(key, None)
            self._open(key, create=True)
        return before

    def _holds_schemas(self) -> bool:
        """True when some workspace is kept in a schema of its own here (registered in `homeport.workspaces`)."""
        with self.engine.connect() as conn:
            if conn.exec_driver_sql(f"SELECT to_regclass('{_REGISTRY}')").scalar() is None:
                return False
            return bool(conn.exec_driver_sql(f"SELECT EXISTS (SELECT FROM {_REGISTRY})").scalar())

    def drop(self, key: str) -> bool:
        """Remove workspace `key` and all its memory (tests and `homeport copy` use this); True if it existed."""
        layout = self.shared_layout()
        if layout is not None:
            self._stores.pop(key, None)
            return layout.drop(key)
        self.ensure_registry()
        with self.engine.connect() as conn:
            row = conn.exec_driver_sql(f"DELETE FROM {_REGISTRY} WHERE key = %(k)s RETURNING schema_name", {"k": key})
            found = row.first()
            if found is not None:
                conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {found.schema_name} CASCADE")
            conn.commit()
        self._stores.pop(key, None)
        return found is not None

    def __len__(self) -> int:
        return len(self._stores)

    def close(self) -> None:
        self._stores.clear()
        self.engine.dispose()


def _canonical_or_none(key: str) -> str | None:
    try:
        return canonical_key(key)
    except InvalidWorkspaceError:
        return None


def _cause(exc: SQLAlchemyError) -> str:
    orig = getattr(exc, "orig", None)
    text = str(orig) if orig is not None else str(exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__
