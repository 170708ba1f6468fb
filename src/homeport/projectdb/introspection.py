"""What a project database holds: its tables, each table's shape, and what kind of server it is.

Everything here reads the catalog through SQLAlchemy's inspector on the same read-only engine
`run_query` uses. ``create_statement`` is the database's own DDL where it keeps one (SQLite's
``sqlite_master``, MySQL's ``SHOW CREATE TABLE``) and an equivalent built from the catalog on
PostgreSQL, which keeps none.
"""

from __future__ import annotations

import difflib
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, inspect
from sqlalchemy.engine.reflection import Inspector

from homeport.errors import HomeportError, ProjectDatabaseError
from homeport.projectdb.connections import DRIVER_ERRORS, database_error
from homeport.projectdb.discovery import DatabaseSource

__all__ = ["database_type", "get_database_type", "get_schema", "get_tables"]

_SYSTEM_SCHEMAS = frozenset({"information_schema", "pg_catalog", "pg_toast"})


def get_tables(engine: Engine, source: DatabaseSource) -> dict[str, Any]:
    """``{tables, views, database_type}``; names outside PostgreSQL's default schema are qualified.

    Raises:
        ProjectDatabaseError: the database cannot be reached or read.
    """
    with _inspecting(engine, source, "listing tables failed") as (_, inspector):
        tables, views = _names(inspector, source)
        return {"tables": tables, "views": views, "database_type": database_type(engine, source)}


def get_schema(engine: Engine, source: DatabaseSource, table: str) -> dict[str, Any]:
    """Columns, keys, indexes and a CREATE statement of `table` (a table or a view).

    Raises:
        ProjectDatabaseError: no such table (the message lists close matches), or the database
            cannot be reached or read.
    """
    with _inspecting(engine, source, f"reading the schema of {table!r} failed") as (connection, inspector):
        schema, name, is_view = _locate(inspector, source, table)
        columns = inspector.get_columns(name, schema=schema)
        primary_key = inspector.get_pk_constraint(name, schema=schema) or {}
        pk_columns = list(primary_key.get("constrained_columns") or [])
        # SQLite keeps inline UNIQUE constraints only as automatic indexes; ask for those too.
        extra = {"include_auto_indexes": True} if source.backend == "sqlite" else {}
        indexes = [_index(index) for index in inspector.get_indexes(name, schema=schema, **extra)]
        foreign_keys = [_foreign_key(fk) for fk in inspector.get_foreign_keys(name, schema=schema)]
        unique = [
            {"name": u.get("name"), "columns": list(u.get("column_names") or [])}
            for u in inspector.get_unique_constraints(name, schema=schema)
        ]
        described_columns = [
            {
                "name": column["name"],
                "type": _type_text(column["type"], engine),
                "nullable": bool(column.get("nullable", True)),
                "default": None if column.get("default") is None else str(column["default"]),
                "primary_key": column["name"] in pk_columns,
            }
            for column in columns
        ]
        create = _create_statement(connection, inspector, engine, source, schema, name, is_view, described_columns)
        return {
            "table": name,
            "schema": schema,
            "kind": "view" if is_view else "table",
            "database_type": database_type(engine, source),
            "columns": described_columns,
            "primary_key": pk_columns,
            "indexes": indexes,
            "foreign_keys": foreign_keys,
            "unique_constraints": unique,
            "create_statement": create,
        }


def get_database_type(engine: Engine, source: DatabaseSource) -> dict[str, Any]:
    """``{database_type, server_version, source, origin, read_only, statement_timeout_ms, row_limit,
    max_result_bytes}``.

    Raises:
        ProjectDatabaseError: the database cannot be reached.
    """
    with _inspecting(engine, source, "reading the server version failed") as (connection, _):
        if source.backend == "sqlite":
            version = sqlite3.sqlite_version
        elif source.backend == "postgresql":
            version = connection.exec_driver_sql("SHOW server_version").scalar_one()
        else:
            version = connection.exec_driver_sql("SELECT VERSION()").scalar_one()
        return {
            "database_type": database_type(engine, source),
            "server_version": str(version),
            "source": source.describe(),
            "origin": source.origin,
            "read_only": not source.allow_writes,
            "statement_timeout_ms": source.statement_timeout_ms,
            "row_limit": source.row_limit,
            "max_result_bytes": source.max_result_bytes,
        }


def database_type(engine: Engine, source: DatabaseSource) -> str:
    """``sqlite``, ``postgresql``, ``mysql`` or ``mariadb`` (known once the engine has connected)."""
    if source.backend == "mysql" and getattr(engine.dialect, "is_mariadb", False):
        return "mariadb"
    return source.backend


@contextmanager
def _inspecting(engine: Engine, source: DatabaseSource, doing: str) -> Iterator[tuple[Connection, Inspector]]:
    try:
        with engine.connect() as connection:
            yield connection, inspect(connection)
            connection.rollback()
    except HomeportError:
        raise
    except DRIVER_ERRORS as exc:
        raise database_error(exc, source, doing) from exc


def _names(inspector: Inspector, source: DatabaseSource) -> tuple[list[str], list[str]]:
    located = _located_names(inspector, source)
    tables = [shown for shown, (_, _, is_view) in located.items() if not is_view]
    views = [shown for shown, (_, _, is_view) in located.items() if is_view]
    return tables, views


def _located_names(inspector: Inspector, source: DatabaseSource) -> dict[str, tuple[str | None, str, bool]]:
    """Shown name -> (schema, name, is_view); PostgreSQL names outside the default schema are qualified."""
    schemas: list[str | None] = [None]
    if source.backend == "postgresql":
        default = inspector.default_schema_name
        schemas += [
            schema
            for schema in sorted(inspector.get_schema_names())
            if schema != default and schema not in _SYSTEM_SCHEMAS and not schema.startswith("pg_")
        ]
    located: dict[str, tuple[str | None, str, bool]] = {}
    for schema in schemas:
        prefix = f"{schema}." if schema else ""
        for name in sorted(inspector.get_table_names(schema=schema)):
            located[prefix + name] = (schema, name, False)
        for name in sorted(inspector.get_view_names(schema=schema)):
            located[prefix + name] = (schema, name, True)
    return located


def _locate(inspector: Inspector, source: DatabaseSource, table: str) -> tuple[str | None, str, bool]:
    """(schema, name, is_view) of `table`: exact, else the one name that differs only in case."""
    located = _located_names(inspector, source)
    match = table if table in located else None
    if match is None:
        folded = [shown for shown in located if shown.lower() == table.lower()]
        match = folded[0] if len(folded) == 1 else None
    if match is None:
        close = difflib.get_close_matches(table, list(located), n=5, cutoff=0.5)
        hint = f"close matches: {', '.join(close)}" if close else f"tables: {', '.join(list(located)[:20]) or 'none'}"
        raise ProjectDatabaseError(f"no table or view named {table!r} in this database; {hint}; get_tables lists all")
    return located[match]


def _type_text(column_type: Any, engine: Engine) -> str:
    try:
        return str(column_type.compile(dialect=engine.dialect))
    except Exception:  # a type SQLAlchemy reflects but cannot render: its repr still names it
        return repr(column_type)


def _index(index: Any) -> dict[str, Any]:
    return {
        "name": index.get("name"),
        "columns": _index_elements(index, str),
        "unique": bool(index.get("unique")),
    }


def _index_elements(index: Any, quote: Any) -> list[str]:
    """The indexed columns (passed through `quote`) and expressions, in order."""
    names = index.get("column_names") or []
    expressions = index.get("expressions") or [None] * len(names)
    return [
        quote(name) if name is not None else str(expression)
        for name, expression in zip(names, expressions, strict=False)
    ]


def _foreign_key(fk: Any) -> dict[str, Any]:
    options = fk.get("options") or {}
    return {
        "name": fk.get("name"),
        "columns": list(fk.get("constrained_columns") or []),
        "references": {
            "schema": fk.get("referred_schema"),
            "table": fk.get("referred_table"),
            "columns": list(fk.get("referred_columns") or []),
        },
        "on_delete": options.get("ondelete"),
        "on_update": options.get("onupdate"),
    }


def _create_statement(
    connection: Connection,
    inspector: Inspector,
    engine: Engine,
    source: DatabaseSource,
    schema: str | None,
    name: str,
    is_view: bool,
    columns: list[dict[str, Any]],
) -> str:
    if source.backend == "sqlite":
        rows = connection.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND sql IS NOT NULL "
            "ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'view' THEN 0 ELSE 1 END, name",
            (name,),
        ).scalars()
        return ";\n".join(rows) + ";"
    quote = engine.dialect.identifier_preparer.quote
    qualified = f"{quote(schema)}.{quote(name)}" if schema else quote(name)
    if source.backend == "mysql":
        row = connection.exec_driver_sql(f"SHOW CREATE TABLE {qualified}").one()
        return f"{row[1]};"
    if is_view:
        definition = inspector.get_view_definition(name, schema=schema) or ""
        return f"CREATE VIEW {qualified} AS\n{definition.strip()}"
    return _postgres_create(inspector, quote, qualified, schema, name, columns)


def _postgres_create(
    inspector: Inspector,
    quote: Any,
    qualified: str,
    schema: str | None,
    name: str,
    columns: list[dict[str, Any]],
) -> str:
    def listed(names: list[str]) -> str:
        return ", ".join(quote(n) for n in names)

    lines = []
    for column in columns:
        line = f"    {quote(column['name'])} {column['type']}"
        if not column["nullable"]:
            line += " NOT NULL"
        if column["default"] is not None:
            line += f" DEFAULT {column['default']}"
        lines.append(line)
    primary_key = inspector.get_pk_constraint(name, schema=schema) or {}
    if primary_key.get("constrained_columns"):
        prefix = f"CONSTRAINT {quote(primary_key['name'])} " if primary_key.get("name") else ""
        lines.append(f"    {prefix}PRIMARY KEY ({listed(primary_key['constrained_columns'])})")
    for unique in inspector.get_unique_constraints(name, schema=schema):
        lines.append(f"    CONSTRAINT {quote(unique['name'])} UNIQUE ({listed(unique['column_names'])})")
    for fk in inspector.get_foreign_keys(name, schema=schema):
        target = quote(fk["referred_table"])
        if fk.get("referred_schema"):
            target = f"{quote(fk['referred_schema'])}.{target}"
        line = (
            f"    CONSTRAINT {quote(fk['name'])} FOREIGN KEY ({listed(fk['constrained_columns'])}) "
            f"REFERENCES {target} ({listed(fk['referred_columns'])})"
        )
        options = fk.get("options") or {}
        if options.get("ondelete"):
            line += f" ON DELETE {options['ondelete']}"
        if options.get("onupdate"):
            line += f" ON UPDATE {options['onupdate']}"
        lines.append(line)
    for check in inspector.get_check_constraints(name, schema=schema):
        lines.append(f"    CONSTRAINT {quote(check['name'])} CHECK ({check['sqltext']})")
    statements = ["CREATE TABLE " + qualified + " (\n" + ",\n".join(lines) + "\n)"]
    for index in inspector.get_indexes(name, schema=schema):
        if index.get("duplicates_constraint"):
            continue
        kind = "UNIQUE INDEX" if index.get("unique") else "INDEX"
        elements = ", ".join(_index_elements(index, quote))
        statements.append(f"CREATE {kind} {quote(index['name'])} ON {qualified} ({elements})")
    return ";\n".join(statements) + ";"
