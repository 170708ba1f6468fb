"""Parameters of run_query: found where the statement guard reads them, and never read as SQL.

A ``:name`` counts as a placeholder only where the guard's tokenizer sees one (outside quoted
strings, quoted identifiers and comments), and every name in `params` must be one: a ``:x``
inside quotes is text, and a value for it is refused rather than pasted there. Then:

- SQLite: ``?`` placeholders, bound by SQLite itself;
- PostgreSQL: ``$1`` placeholders, sent to the server as they are (psycopg's raw cursors: no
  ``%`` rewriting on the client) and bound there;
- MySQL / MariaDB: PyMySQL has no server-side binding, it pastes escaped values into the text,
  so Homeport writes each value itself in a form every sql_mode reads alike (text as
  ``_utf8mb4 X'<hex>'``: no quote or backslash to escape), and the final text is what the
  statement guard checks again before it is sent.

Issue 22: SQLAlchemy's ``:name`` finder and PyMySQL's escaping put a value inside a quoted
string the guard had seen as data, closing it: ``SELECT ':x'`` with ``x = ", LOAD_FILE(...),"``
read the server's /etc/passwd.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from homeport.errors import InvalidArgumentError, QueryRejectedError
from homeport.projectdb._statement_guard import placeholders

__all__ = ["Bound", "bind_parameters"]

_SQLITE_INTEGER = range(-(2**63), 2**63)


@dataclass(frozen=True)
class Bound:
    """The text the driver sends, and the values the server binds (None: nothing to bind)."""

    text: str
    arguments: tuple[Any, ...] | None
    changed: bool  # the text differs from the query the guard checked


def bind_parameters(query: str, params: Mapping[str, Any] | None, backend: str) -> Bound:
    """`query` with its ``:name`` placeholders in the driver's form, and the values in order.

    Raises:
        QueryRejectedError: a placeholder without a value, or a value without a placeholder.
        InvalidArgumentError: a value that is not one scalar (an object, a nested list, NaN).
        QuerySyntaxError: the text does not tokenize.
    """
    if not params:
        return Bound(query, None, changed=False)
    if not isinstance(params, Mapping):
        raise QueryRejectedError("params must be an object mapping names to values, used as :name in the query")
    found = placeholders(query, backend)
    _check_names(query, found, params)
    for name, value in params.items():
        _check_value(name, value, backend)
    parts: list[str] = []
    arguments: list[Any] = []
    numbers: dict[str, int] = {}
    position = 0
    for start, end, name in found:
        parts.append(query[position:start])
        value = params[name]
        if backend == "mysql":
            written = _mysql_literal(value)
        elif backend == "postgresql":
            if name not in numbers:
                arguments.append(value)
                numbers[name] = len(arguments)
            written = f"${numbers[name]}"
        else:
            arguments.append(value)
            written = "?"
        parts.append(f" {written} ")  # never glued to a neighbour: no new word, comment or quote
        position = end + 1
    parts.append(query[position:])
    return Bound("".join(parts), tuple(arguments) if backend != "mysql" else None, changed=True)


def _check_names(query: str, found: list[tuple[int, int, str]], params: Mapping[str, Any]) -> None:
    used = {name for _start, _end, name in found}
    missing = sorted(used - set(params))
    if missing:
        names = ", ".join(f":{name}" for name in missing)
        raise QueryRejectedError(
            f"the query uses {names} but params has no value for it; give every :name in the query a value in params"
        )
    unused = sorted(set(params) - used)
    if unused:
        shown = ", ".join(f":{name}" for name in unused)
        raise QueryRejectedError(
            f"params names {shown}, which the query does not use as a placeholder: a {shown} inside a quoted "
            "string, a quoted identifier or a comment is text, not a placeholder, and a value is never pasted "
            "there. Write the placeholder outside quotes (WHERE note = :x, or CONCAT('...', :x)), or drop the "
            "value from params"
        )


def _check_value(name: str, value: Any, backend: str) -> None:
    if isinstance(value, list) and backend != "sqlite":
        if not value:
            raise InvalidArgumentError(
                f"run_query: params.{name} is an empty list; a list parameter needs at least one value"
            )
        for item in value:
            _check_scalar(name, item, backend, in_list=True)
        return
    _check_scalar(name, value, backend, in_list=False)


def _check_scalar(name: str, value: Any, backend: str, *, in_list: bool) -> None:
    where = f"params.{name}" + (" holds a value that" if in_list else "")
    if value is None or isinstance(value, (bool, str)):
        return
    if isinstance(value, int):
        if backend == "sqlite" and value not in _SQLITE_INTEGER:
            raise InvalidArgumentError(f"run_query: {where} is {value}, past SQLite's 64-bit integers; pass it as text")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidArgumentError(f"run_query: {where} is {value}, which no database stores as a number")
        return
    kind = "an object" if isinstance(value, Mapping) else "a list" if isinstance(value, list) else type(value).__name__
    lists = "" if backend == "sqlite" else ", or a list of such values (IN / ANY)"
    raise InvalidArgumentError(
        f"run_query: {where} is {kind}; a parameter is one value (text, a number, true/false or null){lists}. "
        f"To pass JSON, send it as text and convert it in SQL, for example CAST(:{name} AS JSON)"
    )


def _mysql_literal(value: Any) -> str:
    """`value` as MySQL text that no sql_mode reads differently: no quote to escape, no backslash."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "(" + ", ".join(_mysql_literal(item) for item in value) + ")"
    return f"_utf8mb4 X'{str(value).encode('utf-8').hex()}'"
