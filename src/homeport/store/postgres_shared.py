"""Every workspace's memory in one set of PostgreSQL tables, keyed by workspace: the shared layout.

One schema per workspace (`homeport.store.postgres`) costs about 74 relations and 0.7 MB before a
workspace holds anything; ten thousand repositories would be 740,000 relations. Here every workspace
shares the tables of schema `homeport_shared`, generated from `homeport.store.schema.metadata` at
creation (so a table added there comes along), each with a leading column `ws`:

- `ws` defaults to `current_setting('homeport.ws')`, so the item modules' INSERTs fill it unchanged;
- every primary key, unique constraint, foreign key and index leads with `ws` (a workspace's rows are
  one range of each index, and `(category, key)` is unique per workspace as before);
- row-level security, ENABLEd and FORCEd, with the policy `ws = homeport.ws`: a statement run without
  the workspace set sees and changes nothing, whichever statement forgot it.

Owners and superusers bypass row-level security, so a store's transactions run as the role
`homeport_tenant`, which owns nothing; its first round trip is still one statement:
`BEGIN; SET LOCAL search_path ...; SET LOCAL ROLE homeport_tenant; SET LOCAL homeport.ws = '17'; ...`.

Two deliberate exceptions, both measured (docs/architecture.md, bench/pg_workspaces.py):

- `search_index` is reached through a view of `homeport_shared_base.search_index` that filters on
  `ws` (with CHECK OPTION, so writes are held to it too). Under row-level security PostgreSQL may not
  use `document @@ query` as an index condition (the operator is not leakproof), so a word search in a
  100,000-item workspace read all its rows; through the view the GIN index on `(ws, document)`
  (btree_gin) answers it. The base table has row-level security too, and the tenant no grant on it.
- ids stay per workspace, as on SQLite: a trigger numbers each new row of a table with an AUTOINCREMENT
  id after the workspace's highest (or highest deleted, kept in `id_counters`), see `_id_triggers`.
  Shared sequences would have made ids unique per database: a workspace's first decision would be
  #48213, and an export from one workspace imported into another would collide less but read worse.

`homeport migrate` runs once per database here (`reconcile`): tables and columns that the metadata has
and the database lacks are added to the shared tables, and the layout's revision is recorded. A future
migration that changes a table rather than adding one must be written for this layout too (ws-aware).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    Column,
    Connection,
    DefaultClause,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    UniqueConstraint,
    event,
    text,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.schema import CreateIndex, CreateTable

from homeport.errors import ConfigError

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from homeport.store.postgres import PostgresStores, SharedStore

__all__ = [
    "BASE_SCHEMA",
    "SHARED_SCHEMA",
    "TENANT_ROLE",
    "WS_SETTING",
    "SharedLayout",
    "begin_statements",
    "requested_layout",
    "shared_metadata",
]

SHARED_SCHEMA = "homeport_shared"
BASE_SCHEMA = "homeport_shared_base"  # tables the tenant reaches only through a view of SHARED_SCHEMA
TENANT_ROLE = "homeport_tenant"
WS_SETTING = _WS = "homeport.ws"
# NULL when unset: after a transaction that set it, a session reads '' for it, and ''::int is an error.
WS_NOW = f"nullif(current_setting('{_WS}', true), '')::int"
_WS_DEFAULT = f"current_setting('{_WS}')::int"  # an INSERT with no workspace set fails
_REGISTRY = f"{SHARED_SCHEMA}.workspaces"
_STATE = f"{SHARED_SCHEMA}.layout"
_LOCK = 0x686F6D65706F7273  # pg_advisory_xact_lock key for creating or migrating the layout
_PG = postgresql.dialect()  # type: ignore[no-untyped-call]

# The full-text index, as migration 0003 makes it per schema, with `ws` leading.
_SEARCH_INDEX = f"""
CREATE TABLE {BASE_SCHEMA}.search_index (
    ws INTEGER NOT NULL DEFAULT {_WS_DEFAULT},
    rowid BIGINT NOT NULL,
    item_type VARCHAR(32) NOT NULL,
    item_id INTEGER NOT NULL,
    category TEXT,
    updated_at VARCHAR(32),
    title TEXT NOT NULL DEFAULT '',
    body TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '',
    document TSVECTOR NOT NULL,
    PRIMARY KEY (ws, rowid)
)
"""
_SEARCH_VIEW = (
    f"CREATE VIEW {SHARED_SCHEMA}.search_index AS SELECT * FROM {BASE_SCHEMA}.search_index "
    f"WHERE ws = {WS_NOW} WITH CASCADED CHECK OPTION"
)

def _id_triggers(table: str) -> list[str]:
    """Per-workspace ids for `table` (its AUTOINCREMENT `id`): a new row gets the workspace's highest id + 1, or
    the highest ever deleted + 1 if that is more (`id_counters`, moved by each DELETE statement), so an id is
    never used twice, as on SQLite. A counter bumped on every insert was a chain of row versions in one
    transaction: an import of 100,000 items grew quadratically. Writers of a workspace are serialised (the
    store's advisory lock), so the max cannot race.
    """
    qualified = f"{SHARED_SCHEMA}.{table}"
    return [
        f"""CREATE FUNCTION {SHARED_SCHEMA}.assign_id_{table}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS NULL THEN
        NEW.id := 1 + greatest(
            (SELECT max(id) FROM {qualified} WHERE ws = NEW.ws),
            (SELECT last FROM {SHARED_SCHEMA}.id_counters WHERE ws = NEW.ws AND tbl = '{table}'), 0);
    END IF;
    RETURN NEW;
END $$""",
        f"""CREATE FUNCTION {SHARED_SCHEMA}.keep_deleted_id_{table}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {SHARED_SCHEMA}.id_counters AS c (ws, tbl, last)
    SELECT ws, '{table}', max(id) FROM gone GROUP BY ws
    ON CONFLICT (ws, tbl) DO UPDATE SET last = greatest(c.last, EXCLUDED.last);
    RETURN NULL;
END $$""",
        f"CREATE TRIGGER assign_id BEFORE INSERT ON {qualified} "
        f"FOR EACH ROW EXECUTE FUNCTION {SHARED_SCHEMA}.assign_id_{table}()",
        f"CREATE TRIGGER keep_deleted_id AFTER DELETE ON {qualified} REFERENCING OLD TABLE AS gone "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {SHARED_SCHEMA}.keep_deleted_id_{table}()",
    ]




def shared_metadata() -> MetaData:
    """The store's tables (`homeport.store.schema.metadata`) as the shared layout holds them.

    Raises:
        ValueError: a table uses something this layout cannot key by workspace (named in the message).
    """
    from homeport.store.schema import metadata

    shared = MetaData(schema=SHARED_SCHEMA)
    for table in metadata.sorted_tables:
        _shared_table(table, shared)
    Table(
        "id_counters",
        shared,
        Column("ws", Integer, nullable=False, server_default=text(_WS_DEFAULT)),
        Column("tbl", postgresql.TEXT, nullable=False),
        Column("last", postgresql.BIGINT, nullable=False),
        PrimaryKeyConstraint("ws", "tbl"),
    )
    return shared


def _shared_table(table: Table, shared: MetaData) -> Table:
    serial = table.autoincrement_column
    if serial is not None and serial.name != "id":
        raise ValueError(f"{table.name}: an AUTOINCREMENT key must be named id in the shared layout")
    columns: list[Any] = [Column("ws", Integer, nullable=False, server_default=text(_WS_DEFAULT))]
    for c in table.columns:
        default = DefaultClause(c.server_default.arg) if isinstance(c.server_default, DefaultClause) else None
        nullable = c.nullable and not c.primary_key
        columns.append(Column(c.name, c.type, nullable=nullable, server_default=default, autoincrement=False))
    pk_name = table.primary_key.name if isinstance(table.primary_key.name, str) else None
    constraints: list[Any] = [PrimaryKeyConstraint("ws", *table.primary_key.columns.keys(), name=pk_name)]
    for constraint in table.constraints:
        if isinstance(constraint, UniqueConstraint):
            name = constraint.name if isinstance(constraint.name, str) else None
            constraints.append(UniqueConstraint("ws", *constraint.columns.keys(), name=name))
    new = Table(table.name, shared, *columns, *constraints)
    for index in table.indexes:
        if not all(isinstance(e, Column) for e in index.expressions):
            raise ValueError(f"{table.name}: index {index.name} on an expression needs its shared-layout form")
        where = index.dialect_options["postgresql"].get("where")
        Index(
            index.name,
            new.c.ws,
            *(new.c[e.name] for e in index.expressions if isinstance(e, Column)),
            unique=index.unique,
            postgresql_where=text(str(where.compile(dialect=_PG))) if where is not None else None,
        )
    return new


def _foreign_keys() -> list[str]:
    """Every foreign key of the metadata, within one workspace: `(ws, col) REFERENCES t (ws, id)`."""
    from homeport.store.schema import metadata

    statements = []
    for table in metadata.sorted_tables:
        for fk in table.foreign_key_constraints:
            local = [c.name for c in fk.columns]
            remote = [e.column.name for e in fk.elements]
            action = ""
            for when, what in (("DELETE", fk.ondelete), ("UPDATE", fk.onupdate)):
                if what:
                    # SET NULL must leave `ws` alone (PostgreSQL 15: a column list).
                    cols = f" ({', '.join(local)})" if what.upper() in ("SET NULL", "SET DEFAULT") else ""
                    action += f" ON {when} {what.upper()}{cols}"
            name = fk.name if isinstance(fk.name, str) else f"fk_{table.name}_{'_'.join(local)}"
            statements.append(
                f"ALTER TABLE {SHARED_SCHEMA}.{table.name} ADD CONSTRAINT {name} FOREIGN KEY (ws, {', '.join(local)}) "
                f"REFERENCES {SHARED_SCHEMA}.{fk.referred_table.name} (ws, {', '.join(remote)}){action}"
            )
    return statements


def _isolate(table: str) -> list[str]:
    """Row-level security on `table`: only the rows of the workspace set, for reads and for writes."""
    return [
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
        f"CREATE POLICY workspace ON {table} USING (ws = {WS_NOW}) WITH CHECK (ws = {WS_NOW})",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {TENANT_ROLE}",
    ]


def begin_statements(ws: int, lock_id: int) -> tuple[str, str]:
    """The first round trip of a read and of a write transaction of workspace `ws`: BEGIN, the shared tables,
    the tenant role (owners bypass row-level security), the workspace, custom plans, and for a writer its lock."""
    settings = (
        f"SET LOCAL search_path TO {SHARED_SCHEMA}; SET LOCAL ROLE {TENANT_ROLE}; "
        f"SET LOCAL {_WS} = '{int(ws)}'; SET LOCAL plan_cache_mode = force_custom_plan"
    )
    return (
        f"BEGIN ISOLATION LEVEL REPEATABLE READ; {settings}",
        f"BEGIN; {settings}; SELECT pg_advisory_xact_lock({int(lock_id)})",
    )


_CONFLICT = re.compile(r"ON CONFLICT \((?!ws\b)")


def _add_ws_to_conflict_targets(engine: Engine) -> None:
    """`ON CONFLICT (rowid)` in a shared store's statement becomes `ON CONFLICT (ws, rowid)`: every unique
    constraint gained `ws`, so the statement names the constraint it always meant."""

    @event.listens_for(engine, "before_cursor_execute", retval=True)
    def _rewrite(conn: Connection, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> Any:
        if "ON CONFLICT (" in statement and conn.get_execution_options().get("homeport_shared"):
            statement = _CONFLICT.sub("ON CONFLICT (ws, ", statement)
        return statement, parameters


class SharedLayout:
    """The shared tables of one database: its registry of workspaces, creation and migration."""

    def __init__(self, stores: PostgresStores, shown: str) -> None:
        self.stores = stores
        self.engine = stores.engine
        self.shown = shown  # the database's URL without its password, for messages
        _add_ws_to_conflict_targets(self.engine)

    @staticmethod
    def exists(conn: Connection) -> bool:
        return conn.exec_driver_sql(f"SELECT to_regclass('{_STATE}')").scalar() is not None

    # -- workspaces ----------------------------------------------------------------------------------

    def open(self, key: str, *, create: bool) -> SharedStore | None:
        with self.engine.connect() as conn:
            ws = conn.exec_driver_sql(f"SELECT ws FROM {_REGISTRY} WHERE key = %(k)s", {"k": key}).scalar()
            if ws is None:
                if not create:
                    return None
                # One round trip, and the key's number whether this process or another registered it first.
                ws = conn.exec_driver_sql(
                    f"WITH new AS (INSERT INTO {_REGISTRY} (key) VALUES (%(k)s) ON CONFLICT (key) DO NOTHING "
                    f"RETURNING ws) SELECT ws FROM new UNION ALL SELECT ws FROM {_REGISTRY} WHERE key = %(k)s",
                    {"k": key},
                ).scalar()
                if ws is None:  # registered by another transaction after this statement's snapshot
                    ws = conn.exec_driver_sql(f"SELECT ws FROM {_REGISTRY} WHERE key = %(k)s", {"k": key}).scalar()
                conn.commit()
        assert ws is not None
        return self.stores.shared_store(key, int(ws))

    def revision(self) -> str:
        with self.engine.connect() as conn:
            return str(conn.exec_driver_sql(f"SELECT revision FROM {_STATE}").scalar())

    def registered(self) -> dict[str, tuple[str, str]]:
        with self.engine.connect() as conn:
            revision = str(conn.exec_driver_sql(f"SELECT revision FROM {_STATE}").scalar())
            rows = conn.exec_driver_sql(f"SELECT key, ws FROM {_REGISTRY}").all()
        return {str(key): (f"{SHARED_SCHEMA} (ws {ws})", revision) for key, ws in rows}

    def drop(self, key: str) -> bool:
        """Delete every row of workspace `key` (under its own workspace setting) and its registration."""
        with self.engine.connect() as conn:
            ws = conn.exec_driver_sql(f"SELECT ws FROM {_REGISTRY} WHERE key = %(k)s", {"k": key}).scalar()
            if ws is None:
                return False
            conn.exec_driver_sql(f"SET LOCAL ROLE {TENANT_ROLE}; SET LOCAL {_WS} = '{int(ws)}'")
            for table in reversed(self.tables()):
                conn.exec_driver_sql(f"DELETE FROM {table}")
            conn.exec_driver_sql("RESET ROLE")
            conn.exec_driver_sql(f"DELETE FROM {_REGISTRY} WHERE ws = {int(ws)}")
            conn.commit()
        return True

    @staticmethod
    def tables() -> list[str]:
        """Every table a workspace has rows in, qualified, parents before children."""
        names = [f"{SHARED_SCHEMA}.{t.name}" for t in shared_metadata().sorted_tables]
        return [*names, f"{SHARED_SCHEMA}.search_index"]

    # -- the layout ----------------------------------------------------------------------------------

    def create(self) -> None:
        """Create the shared layout at the head revision (under an advisory lock; nothing if it exists).

        Raises:
            ConfigError: the role `homeport_tenant` is missing and this user may not create it.
        """
        from homeport.store.database import SCHEMA_REVISION

        with self.engine.connect() as conn:
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_LOCK})")
            if self.exists(conn):
                return
            _ensure_role(conn, self.shown)
            for statement in _layout_ddl():
                conn.exec_driver_sql(statement)
            _search_gin(conn)
            _vector_column(conn)
            conn.exec_driver_sql(f"INSERT INTO {_STATE} (id, revision) VALUES (1, %(r)s)", {"r": SCHEMA_REVISION})
            conn.commit()

    def reconcile(self) -> str:
        """`homeport migrate` on this layout, once for every workspace: add the tables, columns and indexes
        the metadata has and the database lacks; the revision before.
        """
        from homeport.store.database import SCHEMA_REVISION

        with self.engine.connect() as conn:
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_LOCK})")
            before = str(conn.exec_driver_sql(f"SELECT revision FROM {_STATE}").scalar())
            for statement in _missing_ddl(conn):
                conn.exec_driver_sql(statement)
            _vector_column(conn)
            conn.exec_driver_sql(f"UPDATE {_STATE} SET revision = %(r)s", {"r": SCHEMA_REVISION})
            conn.commit()
        return before


def _search_gin(conn: Connection) -> None:
    """The search index's GIN index: on (ws, document) with btree_gin, so a word query reads only the workspace's
    entries; without the extension (not installed on the server) on the document alone, and PostgreSQL combines
    it with the (ws, rowid) key: other workspaces' entries for the words are read, their rows are not."""
    try:
        with conn.begin_nested():
            conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS btree_gin")
        columns = "ws, document"
    except SQLAlchemyError:
        columns = "document"
    conn.exec_driver_sql(f"CREATE INDEX ix_search_index_document ON {BASE_SCHEMA}.search_index USING gin ({columns})")


def _vector_column(conn: Connection) -> None:
    """`item_vectors.embedding` where the database has pgvector (or may create it), as homeport.store._pgvector
    adds it to a workspace's schema in the other layout: here the tenant may alter no table, so the layout does it
    (at creation and in `homeport migrate`, so an extension installed later is taken up by the next migrate)."""
    find = (
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
    )
    schema = conn.exec_driver_sql(find).scalar()
    if schema is None:
        if conn.exec_driver_sql("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").first() is None:
            return
        try:
            with conn.begin_nested():
                conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        except SQLAlchemyError:
            return  # not this user's to create: the blob path, as in the other layout
        schema = conn.exec_driver_sql(find).scalar()
    table = f"{SHARED_SCHEMA}.item_vectors"
    conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS embedding {schema}.vector")
    conn.exec_driver_sql(
        f"ALTER TABLE {table} ALTER COLUMN embedding SET STORAGE MAIN, ALTER COLUMN vector SET STORAGE EXTERNAL"
    )


def _ensure_role(conn: Connection, shown: str) -> None:
    try:
        with conn.begin_nested():
            conn.exec_driver_sql(
                f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{TENANT_ROLE}') THEN "
                f"CREATE ROLE {TENANT_ROLE} NOLOGIN; END IF; END $$"
            )
        with conn.begin_nested():
            # Who may SET ROLE to it: a superuser always; anyone else only as a member.
            if not conn.exec_driver_sql("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").scalar():
                conn.exec_driver_sql(f"GRANT {TENANT_ROLE} TO current_user")
    except SQLAlchemyError as exc:
        raise ConfigError(
            f"the shared layout in {shown} needs the role {TENANT_ROLE}, which this user cannot create "
            f"({_cause(exc)}); as an administrator run: CREATE ROLE {TENANT_ROLE} NOLOGIN; "
            f"GRANT {TENANT_ROLE} TO <the store's user>"
        ) from exc


def _layout_ddl() -> list[str]:
    shared = shared_metadata()
    statements = [
        f"CREATE SCHEMA IF NOT EXISTS {SHARED_SCHEMA}",
        f"CREATE SCHEMA IF NOT EXISTS {BASE_SCHEMA}",
        f"CREATE TABLE {_STATE} (id INTEGER PRIMARY KEY CHECK (id = 1), revision TEXT NOT NULL, "
        "created_at TIMESTAMPTZ NOT NULL DEFAULT now())",
        f"CREATE TABLE {_REGISTRY} (ws SERIAL PRIMARY KEY, key TEXT NOT NULL UNIQUE, "
        "created_at TIMESTAMPTZ NOT NULL DEFAULT now())",
        f"GRANT USAGE ON SCHEMA {SHARED_SCHEMA} TO {TENANT_ROLE}",
    ]
    for table in shared.sorted_tables:
        statements.append(str(CreateTable(table).compile(dialect=_PG)).strip())
        statements += [str(CreateIndex(index).compile(dialect=_PG)).strip() for index in table.indexes]
        statements += _isolate(f"{SHARED_SCHEMA}.{table.name}")
    statements += _foreign_keys()
    for table in shared.sorted_tables:
        if _is_serial(table.name):
            statements += _id_triggers(table.name)
    base = f"{BASE_SCHEMA}.search_index"
    statements += [
        _SEARCH_INDEX,
        f"ALTER TABLE {base} ENABLE ROW LEVEL SECURITY",  # not FORCEd: the view, its owner's, reads it
        f"CREATE POLICY workspace ON {base} USING (ws = {WS_NOW}) WITH CHECK (ws = {WS_NOW})",
        _SEARCH_VIEW,
        f"ALTER VIEW {SHARED_SCHEMA}.search_index ALTER COLUMN ws SET DEFAULT {_WS_DEFAULT}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {SHARED_SCHEMA}.search_index TO {TENANT_ROLE}",
    ]
    return statements


def _is_serial(name: str) -> bool:
    from homeport.store.schema import metadata

    return name in metadata.tables and metadata.tables[name].autoincrement_column is not None


def _missing_ddl(conn: Connection) -> list[str]:
    """What `reconcile` adds: tables of the metadata absent here (created as at creation), then columns."""
    shared = shared_metadata()
    present = {
        (str(t), str(c))
        for t, c in conn.exec_driver_sql(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = %(s)s",
            {"s": SHARED_SCHEMA},
        )
    }
    tables = {t for t, _ in present}
    statements: list[str] = []
    for table in shared.sorted_tables:
        if table.name not in tables:
            statements.append(str(CreateTable(table).compile(dialect=_PG)).strip())
            statements += [str(CreateIndex(index).compile(dialect=_PG)).strip() for index in table.indexes]
            statements += _isolate(f"{SHARED_SCHEMA}.{table.name}")
            if _is_serial(table.name):
                statements += _id_triggers(table.name)
            continue
        for column in table.columns:
            if (table.name, column.name) not in present:
                spec = column.type.compile(dialect=_PG)
                given = column.server_default
                default = f" DEFAULT {given.arg}" if isinstance(given, DefaultClause) else ""
                null = "" if column.nullable or default else " NOT NULL"
                statements.append(
                    f"ALTER TABLE {SHARED_SCHEMA}.{table.name} ADD COLUMN {column.name} {spec}{default}{null}"
                )
    for index in (i for t in shared.sorted_tables if t.name in tables for i in t.indexes):
        statements.append(str(CreateIndex(index, if_not_exists=True).compile(dialect=_PG)).strip())
    return statements


def requested_layout(query: Mapping[str, Any]) -> str | None:
    """The layout a store URL asks for (`?layout=shared` or `?layout=schema`), None when it names none.

    Raises:
        ConfigError: another value.
    """
    value = query.get("layout")
    if value is None:
        return None
    value = value if isinstance(value, str) else value[-1]
    if value not in ("shared", "schema"):
        raise ConfigError(
            f"layout={value!r} in the store URL: use layout=shared (every workspace in shared tables) "
            "or layout=schema (one schema per workspace)"
        )
    return value


def _cause(exc: SQLAlchemyError) -> str:
    lines = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
