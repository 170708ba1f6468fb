"""The first line of defence: one statement per call, and only statements the mode allows.

The guard reads a query with sqlglot in the database's dialect before it reaches the driver.
It is not the guarantee: that is the read-only connection or transaction and the driver's
refusal to run several statements (see `query`). The guard turns the common mistakes and the
known escapes into a clear refusal that says what to do instead.

Rules, in order:
  1. the text must tokenize in the dialect and hold exactly one statement, and outside quoted
     strings and identifiers hold nothing the server may read differently from the tokenizer:
     only printable ASCII, tabs and line breaks, and letters or symbols of other scripts; never
     a Unicode space (MariaDB and PostgreSQL read U+00A0 as part of a name, the tokenizer as a
     space, so ``--`` + U+00A0 starts a comment for one and not the other), a control or a
     format character;
  2. never: transaction control, session state (SET, USE, LOCK, ...), host access (COPY, LOAD,
     ATTACH, VACUUM INTO, INTO OUTFILE), server administration, privilege changes, anonymous
     code blocks, the functions in `_rules`, MySQL executable comments (``/*! ... */``);
  3. read-only mode also: only SELECT / WITH ... SELECT / VALUES / TABLE, EXPLAIN of those, SHOW,
     DESCRIBE, and PRAGMAs that only report; no data-modifying CTE, SELECT ... INTO, or row locks.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType  # type: ignore[attr-defined]

from homeport.errors import QueryRejectedError, QuerySyntaxError
from homeport.projectdb._rules import (
    QUERY_PRAGMAS,
    SETTING_PRAGMAS,
    denied_function_reason,
    pragma_is_read_only,
)

__all__ = ["check_statement", "placeholders"]

_SQLGLOT_DIALECTS = {"sqlite": "sqlite", "postgresql": "postgres", "mysql": "mysql"}
_ENABLE_WRITES = "set allow_writes = true under [database] in .homeport/config.toml"

_TRANSACTION = "controls the transaction Homeport runs each query in; send the statement alone"
_SESSION = "changes the state of a pooled connection that later calls reuse"
_HOST = "reads or writes files or programs on the database host"
_ADMIN = "administers the database server"

# First keyword of a statement -> why it is refused in every mode.
_ALWAYS_REFUSED = {
    "BEGIN": _TRANSACTION,
    "START": _TRANSACTION,
    "COMMIT": _TRANSACTION,
    "ROLLBACK": _TRANSACTION,
    "END": _TRANSACTION,
    "ABORT": _TRANSACTION,
    "SAVEPOINT": _TRANSACTION,
    "RELEASE": _TRANSACTION,
    "XA": _TRANSACTION,
    "SET": _SESSION,
    "RESET": _SESSION,
    "DISCARD": _SESSION,
    "USE": _SESSION,
    "LOCK": _SESSION,
    "UNLOCK": _SESSION,
    "HANDLER": _SESSION,
    "LISTEN": _SESSION,
    "UNLISTEN": _SESSION,
    "NOTIFY": _SESSION,
    "PREPARE": _SESSION,
    "EXECUTE": _SESSION,
    "DEALLOCATE": _SESSION,
    "DECLARE": _SESSION,
    "FETCH": _SESSION,
    "CLOSE": _SESSION,
    "MOVE": _SESSION,
    "COPY": _HOST + "; read rows with SELECT instead",
    "LOAD": _HOST,
    "ATTACH": _HOST,
    "DETACH": _HOST,
    "KILL": _ADMIN,
    "SHUTDOWN": _ADMIN,
    "INSTALL": _ADMIN,
    "UNINSTALL": _ADMIN,
    "FLUSH": _ADMIN,
    "PURGE": _ADMIN,
    "CHANGE": _ADMIN,
    "STOP": _ADMIN,
    "RESTART": _ADMIN,
    "CHECKPOINT": _ADMIN,
    "BINLOG": _ADMIN,
    "CACHE": _ADMIN,
    "GRANT": "changes privileges; run it yourself with an administrator's client",
    "REVOKE": "changes privileges; run it yourself with an administrator's client",
    "DO": "runs a code block Homeport cannot inspect",
}
_READ_ONLY_STARTS = frozenset({"SELECT", "WITH", "VALUES", "TABLE"})
_EXPLAIN = frozenset({"EXPLAIN", "DESCRIBE", "DESC"})
# Keywords that can start the statement an EXPLAIN wraps.
_STATEMENT_STARTS = frozenset(
    {
        "SELECT",
        "WITH",
        "VALUES",
        "TABLE",
        "INSERT",
        "UPDATE",
        "DELETE",
        "MERGE",
        "REPLACE",
        "CREATE",
        "DROP",
        "ALTER",
        "TRUNCATE",
        "DECLARE",
        "EXECUTE",
        "COPY",
        "CALL",
        "DO",
        "SET",
    }
)


class _MySQLReading(MySQL):
    """MySQL as a server with `SQL_MODE` in its sql_mode tokenizes it."""

    SQL_MODE = ""


class _MySQLNoBackslashEscapes(_MySQLReading):
    SQL_MODE = "NO_BACKSLASH_ESCAPES"

    class Tokenizer(MySQL.Tokenizer):
        STRING_ESCAPES = ["'", '"']  # noqa: RUF012 (sqlglot's own attribute)


class _MySQLAnsiQuotes(_MySQLReading):
    SQL_MODE = "ANSI_QUOTES"

    class Tokenizer(MySQL.Tokenizer):
        QUOTES = ["'"]  # noqa: RUF012
        IDENTIFIERS = ["`", '"']  # noqa: RUF012


_OTHER_MYSQL_READINGS: tuple[_MySQLReading, ...] = (_MySQLNoBackslashEscapes(), _MySQLAnsiQuotes())

# MySQL 8 optimizer hints that override max_execution_time or set session variables.
_SESSION_HINT = re.compile(r"/\*\+(?:(?!\*/).)*?\b(MAX_EXECUTION_TIME|SET_VAR)\s*\(", re.IGNORECASE | re.DOTALL)

# Every keyword that starts a statement in one of the dialects: a query that starts with another
# word is misspelled, and is answered as a syntax error rather than as a refused write.
_KNOWN_STARTS = (
    frozenset(_ALWAYS_REFUSED)
    | _READ_ONLY_STARTS
    | _EXPLAIN
    | _STATEMENT_STARTS
    | frozenset(
        {
            "SHOW",
            "PRAGMA",
            "ANALYZE",
            "ANALYSE",
            "VACUUM",
            "REINDEX",
            "RENAME",
            "COMMENT",
            "OPTIMIZE",
            "REPAIR",
            "CHECK",
            "CHECKSUM",
            "HELP",
            "GET",
            "SIGNAL",
            "RESIGNAL",
            "REFRESH",
            "CLUSTER",
            "IMPORT",
            "REASSIGN",
            "SECURITY",
            "BACKUP",
            "RESTORE",
            "PURGE",
            "RESET",
            "DELETE",
            "UPSERT",
        }
    )
)
# Keyword tokens that mean a change when they are not a function call (MySQL's INSERT(), REPLACE()).
_WRITE_TOKENS = frozenset(
    {
        TokenType.INSERT,
        TokenType.UPDATE,
        TokenType.DELETE,
        TokenType.MERGE,
        TokenType.INTO,
        TokenType.CREATE,
        TokenType.DROP,
        TokenType.ALTER,
        TokenType.TRUNCATE,
        TokenType.REPLACE,
        TokenType.COMMIT,
        TokenType.ROLLBACK,
    }
)
# Nodes that must not appear anywhere in a read-only query, with the refusal's explanation.
_WRITE_NODES: tuple[tuple[type[exp.Expression], str], ...] = (
    (exp.Insert, "an INSERT inside the query (for example in a WITH clause) changes data"),
    (exp.Update, "an UPDATE inside the query (for example in a WITH clause) changes data"),
    (exp.Delete, "a DELETE inside the query (for example in a WITH clause) changes data"),
    (exp.Merge, "a MERGE inside the query changes data"),
    (exp.Into, "SELECT ... INTO writes a table, a file or a variable; drop the INTO clause"),
    (exp.Lock, "FOR UPDATE / FOR SHARE takes row locks; drop the locking clause"),
    (exp.Create, "the query creates an object"),
    (exp.Drop, "the query drops an object"),
    (exp.Command, "the query holds a statement Homeport cannot inspect"),
)


def check_statement(sql: str, backend: str, *, allow_writes: bool) -> bool:
    """Refuse `sql` unless it is exactly one statement the mode allows on `backend`.

    Returns True when the statement is a plain query (SELECT, WITH ... SELECT, VALUES, TABLE)
    that changes nothing, which a database cursor can page through.

    Raises:
        QueryRejectedError: with the reason and what to do instead.
        QuerySyntaxError: the text is not SQL (a misspelled statement, an unclosed quote).
    """
    is_query = _check(sql, Dialect.get_or_raise(_SQLGLOT_DIALECTS[backend]), backend, allow_writes)
    if backend == "mysql" and "\\" in sql:
        # The server's sql_mode decides whether a backslash escapes a quote: check every reading.
        for reading in _OTHER_MYSQL_READINGS:
            _check_other_reading(sql, reading, allow_writes)
    return is_query


_PLACEHOLDER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def placeholders(sql: str, backend: str) -> list[tuple[int, int, str]]:
    """The ``:name`` placeholders of `sql` as the guard reads it: ``(start, end, name)`` in order,
    `end` inclusive. A ``:name`` inside a quoted string, a quoted identifier or a comment is text,
    not a placeholder; so is one glued to a word before it (``a[lo:hi]``), as SQLAlchemy reads it.

    Raises:
        QuerySyntaxError: the text does not tokenize.
    """
    tokens = _tokenize(sql, Dialect.get_or_raise(_SQLGLOT_DIALECTS[backend]))
    found = []
    for index in range(len(tokens) - 1):
        colon, name = tokens[index], tokens[index + 1]
        if colon.token_type != TokenType.COLON or name.start != colon.end + 1 or name.token_type in _QUOTED:
            continue
        word = sql[name.start : name.end + 1]
        if not _PLACEHOLDER_NAME.fullmatch(word):
            continue
        if index and tokens[index - 1].end + 1 == colon.start:
            before = sql[colon.start - 1]
            if before.isalnum() or before in "_:\\":
                continue
        after = tokens[index + 2] if index + 2 < len(tokens) else None
        if after is not None and after.start == name.end + 1 and sql[after.start] == ":":
            continue
        found.append((colon.start, name.end, word))
    return found


def _check_other_reading(sql: str, dialect: _MySQLReading, allow_writes: bool) -> None:
    """Refuse `sql` if a server reading it as `dialect` would run something refused.

    A reading that is not one statement of valid SQL is left alone: such a server would refuse it
    as a syntax error (the client never enables multi-statements).
    """
    try:
        if len(_split_statements(list(dialect.tokenize(sql)))) != 1:
            return
        _check(sql, dialect, "mysql", allow_writes)
    except (SqlglotError, QuerySyntaxError):
        return
    except QueryRejectedError as exc:
        raise QueryRejectedError(
            f"{exc.message} (as a server with {dialect.SQL_MODE} in its sql_mode reads the quotes, where a "
            "backslash does not escape a quote; write a quote inside a string as two quotes instead)"
        ) from exc


def _check(sql: str, dialect: Dialect, backend: str, allow_writes: bool) -> bool:
    tokens = _tokenize(sql, dialect)
    _check_plain_text(sql, tokens)
    statements = _split_statements(tokens)
    if not statements:
        raise QueryRejectedError("the query is empty; send one SQL statement")
    if len(statements) > 1:
        raise QueryRejectedError(
            f"the query holds {len(statements)} statements; run_query runs exactly one statement per call, "
            "so send them one at a time"
        )
    if backend == "mysql" and ("/*!" in sql or "/*M!" in sql):
        raise QueryRejectedError("MySQL executable comments (/*! ... */) run hidden SQL; write the SQL without them")
    if backend == "mysql" and (hint := _SESSION_HINT.search(sql)):
        raise QueryRejectedError(
            f"the optimizer hint {hint.group(1).upper()}() is refused: it overrides the statement timeout or "
            "session settings Homeport set; drop it"
        )
    statement = statements[0]
    text = sql[statement[0].start : statement[-1].end + 1]
    _check_known_start(statement, sql, dialect)
    _check_never_allowed(statement, dialect, backend)
    if _leading_keyword(statement) in _READ_ONLY_STARTS:
        try:
            _check_read_only_query(text, dialect)
        except QueryRejectedError:
            if not allow_writes:
                raise
            return False
        return True
    if not allow_writes:
        _check_read_only(statement, text, dialect, backend)
    return False


# Tokens whose inside is data or a name: any character may appear there.
_QUOTED = frozenset(
    {
        TokenType.STRING,
        TokenType.IDENTIFIER,
        TokenType.BIT_STRING,
        TokenType.HEX_STRING,
        TokenType.BYTE_STRING,
        TokenType.NATIONAL_RAW_STRING,
        TokenType.NATIONAL_STRING,
        TokenType.RAW_STRING,
        TokenType.HEREDOC_STRING,
        TokenType.UNICODE_STRING,
    }
)
# Spaces, controls, format characters (zero-width, bidirectional), surrogates, private and unassigned.
_AMBIGUOUS_CATEGORIES = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"})


def _check_plain_text(sql: str, tokens: Sequence[Token]) -> None:
    """Refuse a character outside quotes that the server may read differently from the tokenizer.

    The words, operators, whitespace and comments between quoted strings and identifiers may
    hold printable ASCII, tabs, line feeds (a carriage return only before one), and the letters,
    digits and symbols of any script; nothing else. Comments are held to it too: where a comment
    begins and ends is exactly what a stray character can change.
    """
    quoted = sorted((t.start, t.end) for t in tokens if t.token_type in _QUOTED)
    spans = iter(quoted)
    span = next(spans, None)
    index = 0
    while index < len(sql):
        if span is not None and index >= span[0]:
            index = span[1] + 1
            span = next(spans, None)
            continue
        char = sql[index]
        if not (" " <= char <= "~" or char in "\t\n") and _ambiguous(char, sql[index + 1 : index + 2]):
            raise QueryRejectedError(
                f"the query holds {_describe_character(char)} at offset {index}, outside a quoted string or "
                "identifier, where the database may read it differently from Homeport (as part of a name, "
                "or as the end or start of a comment); write plain spaces and line breaks between words, "
                "and keep other characters inside quotes"
            )
        index += 1


def _ambiguous(char: str, following: str) -> bool:
    if char == "\r":
        return following != "\n"  # a Windows line break is read alike everywhere; a lone CR is not
    if char < "\x80":
        return True  # the other ASCII control characters
    return char.isspace() or unicodedata.category(char) in _AMBIGUOUS_CATEGORIES


def _describe_character(char: str) -> str:
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}" + (f" ({name})" if name else "")


def _check_known_start(statement: Sequence[Token], sql: str, dialect: Dialect) -> None:
    keyword = _leading_keyword(statement)
    if keyword in _KNOWN_STARTS:
        return
    first = next((t for t in statement if t.token_type != TokenType.L_PAREN), statement[0])
    word = sql[first.start : first.end + 1]
    raise QuerySyntaxError(
        f"the query is not valid {_dialect_label(dialect)} SQL: no statement starts with {word!r}; check the "
        "spelling (a query starts with SELECT, WITH, VALUES, EXPLAIN, SHOW or DESCRIBE)"
    )


def _tokenize(sql: str, dialect: Dialect) -> list[Token]:
    try:
        return list(dialect.tokenize(sql))
    except SqlglotError as exc:
        raise QuerySyntaxError(
            f"the query could not be read as {_dialect_label(dialect)} SQL ({_first_line(exc)}); "
            "check quotes and comments are closed"
        ) from exc


def _split_statements(tokens: Sequence[Token]) -> list[list[Token]]:
    statements: list[list[Token]] = [[]]
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            statements.append([])
        else:
            statements[-1].append(token)
    return [s for s in statements if s]


def _leading_keyword(statement: Sequence[Token]) -> str:
    """The first keyword, looking through opening parentheses: ``(SELECT 1)`` starts with SELECT."""
    for token in statement:
        if token.token_type != TokenType.L_PAREN:
            return token.text.upper()
    return "("


def _check_never_allowed(statement: list[Token], dialect: Dialect, backend: str) -> None:
    keyword = _leading_keyword(statement)
    reason = _ALWAYS_REFUSED.get(keyword)
    if reason is not None:
        raise QueryRejectedError(f"{keyword} is refused: it {reason}")
    if keyword == "ALTER" and len(statement) > 1 and statement[1].text.upper() == "SYSTEM":
        raise QueryRejectedError(f"ALTER SYSTEM is refused: it {_ADMIN}")
    if keyword == "CREATE" and any(t.text.upper() == "EXTENSION" for t in statement[1:4]):
        raise QueryRejectedError("CREATE EXTENSION is refused: it loads code into the database server")
    flat = _expand_commands(statement, dialect)
    for index, token in enumerate(flat):
        upper = token.text.upper()
        following = flat[index + 1].text.upper() if index + 1 < len(flat) else ""
        if upper == "INTO" and following in ("OUTFILE", "DUMPFILE"):
            raise QueryRejectedError(f"SELECT ... INTO {following} is refused: it {_HOST}")
        if upper == "VACUUM" and "INTO" in (t.text.upper() for t in flat[index + 1 :]):
            raise QueryRejectedError(f"VACUUM INTO is refused: it {_HOST}")
        if backend == "postgresql" and upper == "U" and following == "&" and _adjacent(flat[index : index + 3]):
            # U&"pg\005fread_file" is pg_read_file: a name the function rules could not see.
            raise QueryRejectedError('Unicode-escaped identifiers (U&"...") are refused; write the name plainly')
        if following == "(" and token.token_type != TokenType.STRING:
            why = denied_function_reason(token.text, backend)
            if why is not None:
                raise QueryRejectedError(f"the function {token.text}() is refused: it {why}")


def _adjacent(tokens: Sequence[Token]) -> bool:
    return all(left.end + 1 == right.start for left, right in itertools.pairwise(tokens))


def _expand_commands(statement: list[Token], dialect: Dialect) -> list[Token]:
    """The tokens of `statement`, with the raw text sqlglot keeps after a command re-tokenized."""
    flat: list[Token] = []
    for index, token in enumerate(statement):
        previous = statement[index - 1] if index else None
        is_command_tail = (
            token.token_type == TokenType.STRING
            and previous is not None
            and previous.token_type in (TokenType.COMMAND, TokenType.SHOW)
        )
        if is_command_tail:
            flat.extend(_tokenize(token.text, dialect))
        else:
            flat.append(token)
    return flat


def _check_read_only(statement: list[Token], text: str, dialect: Dialect, backend: str) -> None:
    keyword = _leading_keyword(statement)
    if keyword in _EXPLAIN:
        _check_explained(text[statement[0].end - statement[0].start + 1 :], dialect, backend)
    elif keyword == "SHOW" and backend != "sqlite":
        return
    elif keyword == "PRAGMA" and backend == "sqlite":
        _check_pragma(statement)
    else:
        raise QueryRejectedError(
            f"{keyword} is refused: this workspace's database is read-only, and only SELECT, "
            "WITH ... SELECT, VALUES, TABLE, EXPLAIN, SHOW, DESCRIBE and reporting PRAGMAs run; "
            f"to change data, {_ENABLE_WRITES}"
        )


def _check_read_only_query(text: str, dialect: Dialect) -> None:
    try:
        tree = sqlglot.parse_one(text, read=dialect)
    except SqlglotError:
        # sqlglot does not know every dialect feature; fall back to the tokens, which are enough
        # to see a change, and leave the rest to the read-only connection.
        _check_tokens_read_only(_tokenize(text, dialect))
        return
    for node_type, why in _WRITE_NODES:
        if tree.find(node_type) is not None:
            raise QueryRejectedError(f"refused in read-only mode: {why}; to change data, {_ENABLE_WRITES}")


def _check_tokens_read_only(tokens: Sequence[Token]) -> None:
    for index, token in enumerate(tokens):
        is_call = index + 1 < len(tokens) and tokens[index + 1].token_type == TokenType.L_PAREN
        if token.token_type in _WRITE_TOKENS and not is_call:
            raise QueryRejectedError(
                f"refused in read-only mode: the query contains {token.text.upper()}; to change data, {_ENABLE_WRITES}"
            )


def _check_explained(rest: str, dialect: Dialect, backend: str) -> None:
    """EXPLAIN may run its statement (EXPLAIN ANALYZE), so that statement must pass on its own.

    `rest` is the text after the EXPLAIN / DESCRIBE keyword.
    """
    tokens = _tokenize(rest, dialect)
    depth = 0
    for token in tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and token.text.upper() in _STATEMENT_STARTS:
            inner = rest[token.start :]
            check_statement(inner, backend, allow_writes=False)
            return
    _check_tokens_read_only(tokens)


def _check_pragma(statement: list[Token]) -> None:
    # PRAGMA [schema.]name [= value | (argument)]
    words = statement[1:]
    if len(words) >= 3 and words[1].token_type == TokenType.DOT:
        words = words[2:]
    if not words:
        raise QueryRejectedError("PRAGMA needs a name")
    name = words[0].text
    has_argument = len(words) > 1
    if not pragma_is_read_only(name, has_argument):
        reporting = ", ".join(sorted(QUERY_PRAGMAS | SETTING_PRAGMAS))
        raise QueryRejectedError(
            f"PRAGMA {name}{' with a value' if has_argument else ''} is refused in read-only mode: "
            f"it can change the database or the connection. PRAGMAs that only report run: {reporting}; "
            f"to change data, {_ENABLE_WRITES}"
        )


def _dialect_label(dialect: Dialect) -> str:
    return {"postgres": "PostgreSQL", "mysql": "MySQL", "sqlite": "SQLite"}.get(
        type(dialect).__name__.lower(), type(dialect).__name__
    )


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
