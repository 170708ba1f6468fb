"""Project-database tools: the workspace's own development database, read-only by default."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from homeport.core.catalog import CATALOG, QUERY, READ, Needs
from homeport.core.pipeline import Call

__all__: list[str] = []

Json = dict[str, Any]


@CATALOG.tool(
    "db",
    READ,
    "List the tables of the project's development database (found in .homeport/config.toml, .env, "
    "Laravel, Rails or Django settings). Then call get_schema for a table.",
    needs=Needs.WORKSPACE,
)
def get_tables(call: Call) -> Json:
    return call.runtime.databases.get_tables(call.root)


@CATALOG.tool(
    "db",
    READ,
    "Columns (type, nullable, default, primary key), indexes, foreign keys and a CREATE-like text of a table.",
    needs=Needs.WORKSPACE,
)
def get_schema(call: Call, table: str) -> Json:
    return call.runtime.databases.get_schema(call.root, table)


@CATALOG.tool(
    "db",
    READ,
    "The database's dialect (sqlite, postgresql, mysql, mariadb), server version and where the connection "
    "came from, so you write the right SQL.",
    needs=Needs.WORKSPACE,
)
def get_database_type(call: Call) -> Json:
    return call.runtime.databases.get_database_type(call.root)


@CATALOG.tool(
    "db",
    QUERY,
    "Run ONE SQL statement and get {columns, rows, row_count, truncated, elapsed_ms, affected_rows, "
    "read_only}. Read-only unless the workspace's .homeport/config.toml allows writes; statement "
    "timeout and row limit apply. Use params for values instead of pasting them into the SQL.",
    needs=Needs.WORKSPACE,
)
def run_query(
    call: Call,
    query: str,
    params: Annotated[
        dict[str, Any] | None,
        Field(
            description="Values for :name placeholders in the query (outside quotes; each a text, number, "
            "true/false, null, or a list for IN / ANY)."
        ),
    ] = None,
    limit: Annotated[int, Field(ge=1, le=10_000)] = 200,
) -> Json:
    # QUERY: read-only on a --read-only server whatever the workspace's config says.
    read_only = call.runtime.settings.read_only
    return call.runtime.databases.run_query(call.root, query, params=params, limit=limit, read_only=read_only)
