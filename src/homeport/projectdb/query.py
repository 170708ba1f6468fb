"""Running one statement on a project database, read-only unless the workspace allows writes.

The guarantee is the database's, the statement guard (`_statement_guard`) only refuses early:

- SQLite: the connection is read-only (see `connections`); a progress handler stops a statement
  that outlives the timeout; ``execute`` refuses a second statement.
- PostgreSQL: ``SET TRANSACTION READ ONLY``, ``SET LOCAL statement_timeout`` and
  ``standard_conforming_strings`` (so that the server reads quotes as the guard did) in a
  transaction that is always rolled back, then ``DISCARD ALL``. A plain query runs as a
  server-side cursor (DECLARE, through the extended protocol), so only the rows fetched are
  computed; anything else runs as a prepared statement. Both protocols refuse a second statement.
- MySQL / MariaDB: ``max_execution_time`` (MySQL, SELECT only) or ``max_statement_time``
  (MariaDB), then ``SET SESSION TRANSACTION READ ONLY`` and ``START TRANSACTION READ ONLY``,
  always rolled back (the session setting is what stops DDL, which commits implicitly), then
  ``COM_RESET_CONNECTION``; the client never enables multi-statements; rows stream, and a
  truncated result closes the connection instead of reading the rest.

With allow_writes the transaction is read-write and committed when the statement succeeds.
Parameters are named ``:name`` placeholders with values in `params`, found where the guard reads
them and bound by the server, or on MySQL written into the text the guard then checks again
(see `_parameters`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
import psycopg.errors
import pymysql
from pymysql.constants import FIELD_TYPE
from pymysql.cursors import SSCursor
from sqlalchemy import Engine
from sqlalchemy.pool import PoolProxiedConnection

from homeport.errors import ProjectDatabaseError, QueryRejectedError, QuerySyntaxError
from homeport.projectdb._parameters import bind_parameters
from homeport.projectdb._rules import DEFAULT_LIMIT
from homeport.projectdb._statement_guard import check_statement
from homeport.projectdb._values import json_safe, mysql_time
from homeport.projectdb.connections import (
    DRIVER_ERRORS,
    checkout,
    database_error,
    driver_message,
    is_syntax_error,
    reset_session,
)
from homeport.projectdb.discovery import DatabaseSource

__all__ = ["DEFAULT_LIMIT", "run_query"]

_SQLITE_PROGRESS_STEPS = 10_000
_FETCH_BATCH = 100
_PG_CURSOR = "homeport_query"
_MYSQL_TIMEOUT_ERRORS = frozenset({1969, 3024})  # MariaDB max_statement_time, MySQL max_execution_time
_WRITES_HINT = "to change data, "  # how the statement guard ends a read-only refusal


@dataclass
class _Fetched:
    columns: list[str]
    rows: list[list[Any]]  # JSON values already
    truncated_by: str | None  # "rows", "bytes", or None when every row came back
    affected_rows: int | None = None
    # The connection still holds unread rows and must be closed, not returned to the pool.
    discard_connection: bool = False

    @property
    def truncated(self) -> bool:
        return self.truncated_by is not None


@dataclass(frozen=True)
class _Statement:
    text: str  # in the driver's placeholder style
    arguments: Any  # None without params
    is_query: bool  # a plain read-only query (see check_statement)


class _TimedOut(Exception):
    """The statement ran past the workspace's statement timeout."""


def run_query(
    engine: Engine,
    source: DatabaseSource,
    query: str,
    params: Mapping[str, Any] | None = None,
    limit: int = DEFAULT_LIMIT,
) -> dict[str, Any]:
    """Run one statement and return ``{columns, rows, row_count, truncated, elapsed_ms, ...}``.

    At most ``min(limit, source.row_limit)`` rows and ``source.max_result_bytes`` of JSON come
    back; ``truncated`` says there was more and ``truncated_by`` which cap cut it (``"rows"`` or
    ``"bytes"``; a single row past the byte cap comes back with its long values ending in ``…``).

    Raises:
        QueryRejectedError: the statement was refused before it reached the database.
        QuerySyntaxError: the statement is not valid SQL, by Homeport's reading or the database's.
        ProjectDatabaseError: the database refused or failed it (the driver's message), or it ran
            past the statement timeout.
    """
    if not isinstance(query, str):
        raise QueryRejectedError("the query must be SQL text")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise QueryRejectedError(f"limit must be a whole number of at least 1, not {limit!r}")
    effective_limit = min(limit, source.row_limit)
    try:
        is_query = check_statement(query, source.backend, allow_writes=source.allow_writes)
    except QueryRejectedError as exc:
        if source.writes_off_because and _WRITES_HINT in exc.message:
            raise QueryRejectedError(
                exc.message.split(_WRITES_HINT)[0] + f"writes are off: {source.writes_off_because}"
            ) from None
        raise
    bound = bind_parameters(query, params, source.backend)
    if bound.changed:
        # What the driver sends is what the guard passes: on MySQL the values are in the text.
        is_query = check_statement(bound.text, source.backend, allow_writes=source.allow_writes)
    connection = checkout(engine, source)
    discard = False
    started = time.perf_counter()
    try:
        run = _RUNNERS[source.backend]
        fetched = run(connection, engine, source, _Statement(bound.text, bound.arguments, is_query), effective_limit)
        discard = fetched.discard_connection
    except _TimedOut as exc:
        discard = _rollback_failed(connection)
        raise ProjectDatabaseError(
            f"the query was stopped after the statement timeout of {source.statement_timeout_ms} ms ({exc}); "
            "narrow it (WHERE, LIMIT, an index) or raise statement_timeout_ms under [database] in "
            ".homeport/config.toml"
        ) from exc
    except DRIVER_ERRORS as exc:
        discard = _rollback_failed(connection)
        if is_syntax_error(exc):
            raise QuerySyntaxError(
                f"the query is not valid {source.backend} SQL: {driver_message(exc)} [{source.describe()}]; "
                "fix the SQL (get_database_type names the dialect and version)"
            ) from exc
        raise database_error(exc, source, "the query failed") from exc
    except BaseException:
        discard = True  # in an unknown state: never hand it to the next call
        raise
    finally:
        # Whatever the statement left in the session (a MySQL user variable, LAST_INSERT_ID, a
        # named lock, a session setting) is wiped by the database before the next call.
        if discard or not reset_session(connection, source.backend):
            connection.invalidate()
        else:
            connection.close()
    elapsed_ms = round((time.perf_counter() - started) * 1000, 1)
    return {
        "columns": fetched.columns,
        "rows": fetched.rows,
        "row_count": len(fetched.rows),
        "truncated": fetched.truncated,
        "truncated_by": fetched.truncated_by,
        "elapsed_ms": elapsed_ms,
        "limit": effective_limit,
        "max_result_bytes": source.max_result_bytes,
        "affected_rows": fetched.affected_rows,
        "read_only": not source.allow_writes,
    }


def _rollback_failed(connection: PoolProxiedConnection) -> bool:
    """Roll back after an error; True when the connection is unusable and must be discarded."""
    try:
        connection.rollback()
    except Exception:
        return True
    return False


def _run_sqlite(
    connection: PoolProxiedConnection, _engine: Engine, source: DatabaseSource, statement: _Statement, limit: int
) -> _Fetched:
    raw: sqlite3.Connection = connection.driver_connection  # type: ignore[assignment]
    deadline = time.monotonic() + source.statement_timeout_ms / 1000
    expired = False

    def past_deadline() -> int:
        nonlocal expired
        expired = time.monotonic() > deadline
        return int(expired)

    raw.set_progress_handler(past_deadline, _SQLITE_PROGRESS_STEPS)
    cursor = raw.cursor()
    try:
        cursor.execute(statement.text, statement.arguments if statement.arguments is not None else ())
        fetched = _fetch(cursor, limit, source.max_result_bytes)
        if source.allow_writes:
            raw.commit()
        else:
            raw.rollback()
        return fetched
    except sqlite3.OperationalError as exc:
        if expired:
            raise _TimedOut(str(exc)) from exc
        raise
    finally:
        cursor.close()
        raw.set_progress_handler(None, 0)


def _run_postgres(
    connection: PoolProxiedConnection, _engine: Engine, source: DatabaseSource, statement: _Statement, limit: int
) -> _Fetched:
    raw: psycopg.Connection[Any] = connection.driver_connection  # type: ignore[assignment]
    try:
        with raw.cursor() as setup:
            # Homeport's own fixed text, sent in one round trip. Intervals come back in ISO 8601
            # as text (see connections), exact where a timedelta would turn months into days.
            read_only = "SET TRANSACTION READ ONLY; " if not source.allow_writes else ""
            # standard_conforming_strings pins how the server reads a backslash in '...' to the
            # statement guard's reading, whatever the database or the URL's options set.
            setup.execute(
                f"{read_only}SET LOCAL statement_timeout = {int(source.statement_timeout_ms)}; "
                "SET LOCAL IntervalStyle = 'iso_8601'; SET LOCAL standard_conforming_strings = on"
            )
        if statement.is_query:
            # A server-side cursor: DECLARE goes through the extended protocol (one statement
            # only), rows are computed only as far as they are fetched, and an empty result
            # still has its columns.
            with psycopg.RawServerCursor(raw, _PG_CURSOR) as cursor:
                cursor.execute(statement.text, statement.arguments)
                fetched = _fetch(cursor, limit, source.max_result_bytes)
        else:
            # A prepared statement is one statement by protocol; EXPLAIN, SHOW and writes
            # return few rows, or as many as they touched.
            with psycopg.RawCursor(raw) as cursor:
                cursor.execute(statement.text, statement.arguments, prepare=True)
                fetched = _fetch(cursor, limit, source.max_result_bytes)
    except psycopg.errors.QueryCanceled as exc:
        raise _TimedOut(str(exc).strip()) from exc
    if source.allow_writes:
        raw.commit()
    else:
        raw.rollback()
    return fetched


def _run_mysql(
    connection: PoolProxiedConnection, engine: Engine, source: DatabaseSource, statement: _Statement, limit: int
) -> _Fetched:
    raw = connection.driver_connection
    cursor = raw.cursor(SSCursor)  # type: ignore[union-attr]
    timeout_ms = int(source.statement_timeout_ms)
    try:
        if getattr(engine.dialect, "is_mariadb", False):
            cursor.execute(f"SET SESSION max_statement_time = {timeout_ms / 1000:.3f}")
        else:
            cursor.execute(f"SET SESSION max_execution_time = {timeout_ms}")
        # The session characteristic matters: DDL commits the open transaction implicitly and
        # would run outside a read-only START TRANSACTION, but not in a read-only session.
        mode = "READ WRITE" if source.allow_writes else "READ ONLY"
        cursor.execute(f"SET SESSION TRANSACTION {mode}")
        cursor.execute(f"START TRANSACTION {mode}")
        cursor.execute(statement.text, statement.arguments)
        fetched = _fetch(cursor, limit, source.max_result_bytes)
        if not fetched.truncated and cursor.warning_count:
            _raise_if_interrupted(cursor)
    except pymysql.err.Error as exc:
        _abandon_unread_rows(cursor)
        if len(exc.args) >= 2 and exc.args[0] in _MYSQL_TIMEOUT_ERRORS:
            raise _TimedOut(str(exc.args[1])) from exc
        raise
    if fetched.truncated:
        _abandon_unread_rows(cursor)
        fetched.discard_connection = True  # closing it ends the query; the server rolls back
        return fetched
    cursor.close()
    if source.allow_writes:
        raw.commit()  # type: ignore[union-attr]
    else:
        raw.rollback()  # type: ignore[union-attr]
    return fetched


def _raise_if_interrupted(cursor: SSCursor) -> None:
    """MariaDB can stop a statement at its time limit and still report success (BENCHMARK, DO
    SLEEP), with the interruption only among the warnings."""
    cursor.execute("SHOW WARNINGS")
    for _level, code, message in cursor.fetchall():
        if code in _MYSQL_TIMEOUT_ERRORS:
            raise _TimedOut(message)


def _abandon_unread_rows(cursor: SSCursor) -> None:
    """Keep PyMySQL from reading the rest of an unbuffered result when the cursor is closed or
    collected (it would read every remaining row); the connection is then closed instead."""
    result = getattr(cursor, "_result", None)
    if result is not None:
        result.unbuffered_active = False
    cursor.connection = None  # type: ignore[assignment]


def _fetch(cursor: Any, limit: int, max_bytes: int) -> _Fetched:
    """Fetch at most `limit` rows and `max_bytes` of JSON, as JSON values.

    One row more than the limit is read to know whether there were more. Rows are read as far
    as the caps need them: one first, then as many as the bytes left would hold at the size of
    the largest row so far (at most `_FETCH_BATCH`), so a row past the byte cap is never read
    from the cursor (issue 22: four 32 MiB values were all fetched before the cap looked, 686 MB).
    A first row that alone is larger than `max_bytes` comes back with its long values shortened
    (ending in ``…``).
    """
    description = cursor.description
    if not description:
        rowcount = cursor.rowcount
        return _Fetched(columns=[], rows=[], truncated_by=None, affected_rows=rowcount if rowcount >= 0 else None)
    converters = _mysql_converters(description) if isinstance(cursor, SSCursor) else {}
    rows: list[list[Any]] = []
    size = 2  # the brackets of the list
    truncated_by: str | None = None
    read = 0
    largest = 0
    while truncated_by is None:
        room = max(max_bytes - size, 0)
        wanted = min(_FETCH_BATCH, limit + 1 - read, max(1, room // largest) if largest else 1)
        batch = cursor.fetchmany(wanted)
        read += len(batch)
        for raw in batch:
            if len(rows) == limit:
                truncated_by = "rows"
                break
            row = _row(raw, converters)
            row_size = _json_size_within(row, max_bytes - size) + 1  # and its comma
            largest = max(largest, row_size)
            if size + row_size > max_bytes:
                if not rows:
                    rows.append(_shortened(row, max_bytes))
                truncated_by = "bytes"
                break
            rows.append(row)
            size += row_size
        if len(batch) < wanted:
            break
    return _Fetched(columns=[column[0] for column in description], rows=rows, truncated_by=truncated_by)


def _json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8"))


def _json_size_within(row: list[Any], budget: int) -> int:
    """The JSON size of `row`, or `budget` + 1 when its text alone is past `budget` (a huge value is
    then never copied into JSON just to be measured: each character is at least one byte)."""
    if sum(len(value) for value in row if isinstance(value, str)) > budget:
        return budget + 1
    return _json_size(row)


def _shortened(row: list[Any], max_bytes: int) -> list[Any]:
    """`row` with every long text value cut to an equal share of `max_bytes`, marked with ``…``."""
    share = max_bytes // (2 * max(len(row), 1))
    while True:
        cut = [_cut(value, share) for value in row]
        if _json_size(cut) <= max_bytes or share <= 1:
            return cut
        share //= 2  # escapes (quotes, control characters) made the JSON longer than the text


def _cut(value: Any, share: int) -> Any:
    if not isinstance(value, str):
        return value
    head = value[: share + 1]  # never encode more of a huge value than the share can hold
    encoded = head.encode("utf-8")
    if len(head) == len(value) and len(encoded) <= share:
        return value
    return encoded[:share].decode("utf-8", "ignore") + "…"


def _mysql_converters(description: Sequence[Sequence[Any]] | None) -> dict[int, Callable[[Any], Any]]:
    """PyMySQL hands JSON over as text and TIME as a timedelta; give them their real shape."""
    converters: dict[int, Callable[[Any], Any]] = {}
    for index, column in enumerate(description or ()):
        if column[1] == FIELD_TYPE.JSON:
            converters[index] = _parse_json
        elif column[1] == FIELD_TYPE.TIME:
            converters[index] = mysql_time
    return converters


def _parse_json(value: Any) -> Any:
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return value


def _row(row: Sequence[Any], converters: Mapping[int, Callable[[Any], Any]]) -> list[Any]:
    return [
        json_safe(converters[index](value) if index in converters and value is not None else value)
        for index, value in enumerate(row)
    ]


_RUNNERS: dict[str, Callable[..., _Fetched]] = {
    "sqlite": _run_sqlite,
    "postgresql": _run_postgres,
    "mysql": _run_mysql,
}
