"""DevDB's tool names, as aliases of Homeport's database tools (`--tools devdb`).

DevDB (the VS Code extension's MCP server) has four tools, each taking `projectRoot`, the
project's absolute path: here it is resolved and checked exactly as `workspace` (the allowed
roots, the client's roots, the access rules), and the call is the database tool's own: read-only
unless the project's config allows writes, the statement guard, the timeout and the row limit.
Results carry what DevDB's HTTP side answers (`tables`, `schema` as CREATE text, `type`,
`result` as row objects) beside Homeport's fields and `workspace`.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from homeport.core.catalog import CATALOG
from homeport.core.tools import database  # noqa: F401  (the tools these aliases name, declared first)

__all__: list[str] = []

Json = dict[str, Any]
WS = "projectRoot"
GROUP = "devdb"


def _tables(result: Json, _args: Json) -> Json:
    return {"tables": result.get("tables", []), **result}


def _schema(result: Json, _args: Json) -> Json:
    # DevDB's `schema` is the table's CREATE text; Homeport's `schema` (the PostgreSQL schema) is `namespace`.
    out = {k: v for k, v in result.items() if k != "schema"}
    return {"schema": result.get("create_statement"), "namespace": result.get("schema"), **out}


def _type(result: Json, _args: Json) -> Json:
    return {"type": result.get("database_type"), **result}


def _rows(result: Json, _args: Json) -> Json:
    columns = result.get("columns") or []
    rows = [dict(zip(columns, row, strict=False)) for row in result.get("rows") or []]
    return {"result": rows, **result}


@CATALOG.alias(
    GROUP,
    "get_tables",
    "DevDB: list the tables of the project's database.",
    name="get-tables",
    workspace=WS,
    shape=_tables,
)
def get_tables() -> Json:
    return {}


@CATALOG.alias(
    GROUP,
    "get_schema",
    "DevDB: the schema (CREATE text and columns) of a table.",
    name="get-schema",
    workspace=WS,
    shape=_schema,
)
def get_schema(table: Annotated[str, Field(min_length=1, description="Name of the table to get schema for")]) -> Json:
    return {"table": table}


@CATALOG.alias(
    GROUP,
    "get_database_type",
    "DevDB: the database type, to write the right SQL.",
    name="get-database-type",
    workspace=WS,
    shape=_type,
)
def get_database_type() -> Json:
    return {}


@CATALOG.alias(
    GROUP,
    "run_query",
    "DevDB: run one SQL query (read-only unless the project allows writes).",
    name="run-query",
    workspace=WS,
    shape=_rows,
)
def run_query(query: Annotated[str, Field(min_length=1, description="The SQL query")]) -> Json:
    return {"query": query}
