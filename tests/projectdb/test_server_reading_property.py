"""Property: whatever the guard and the server might read differently never reads the host's files.

Issue 22 showed two ways a query the guard took for harmless read /etc/passwd on MariaDB: ``--``
before a Unicode space (a comment to the guard, an operator and a name to MariaDB) and a value
pasted into a quoted string. This property draws every Unicode space and format character, every
ASCII control character, every comment form the three dialects know (and some they don't), and
``:p`` placeholders in every position (in strings, identifiers and comments as well as in
expressions) with values that try to close a quote, then hides a read of /etc/passwd behind them:
``LOAD_FILE`` on MariaDB (root has FILE here), ``pg_read_file`` on PostgreSQL (the superuser may).
Each query runs for real; it is refused, fails, or returns rows without a byte of the file. No
file appears either (``INTO OUTFILE``).

The "ci" profile runs 100 queries per backend; ``HOMEPORT_HYPOTHESIS=deep`` runs 1000.
"""

from __future__ import annotations

import sys
import unicodedata
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from homeport.errors import HomeportError

from .conftest import make_app
from .test_guard_reads_like_the_server import leaks_passwd

MARKER = f"/tmp/hp_reading_{uuid.uuid4().hex}"
CODES = {"query_rejected", "query_syntax_error", "project_database_error", "invalid_argument"}

# Every character Python or Unicode calls a space, every format character (zero-width, bidi
# controls, the BOM) and every control character: where the guard's tokenizer and a server may
# disagree on whether a word or a comment ends.
ODD_CHARACTERS = sorted(
    {
        chr(code)
        for code in range(sys.maxunicode + 1)
        if not 0xD800 <= code <= 0xDFFF
        and (chr(code).isspace() or unicodedata.category(chr(code)) in ("Zs", "Zl", "Zp", "Cf", "Cc"))
    }
)
COMMENT_OPENERS = ["--", "-- ", "#", "# ", "/*", "/* ", "/*!", "/*!50000", "/*M!", "/*+", "/* /*", "//", "{", "--\r"]
COMMENT_CLOSERS = ["", "\n", "\r", "\r\n", "*/", " */", "*/ */", "\x0b", "\x0c", "\u2028", "\u0085"]
READS = {
    "mysql": [
        "LOAD_FILE('/etc/passwd')",
        "LOAD_FILE(0x2f6574632f706173737764)",
        "HEX(LOAD_FILE('/etc/passwd'))",
        "TO_BASE64(LOAD_FILE(0x2f6574632f706173737764))",
    ],
    "postgresql": [
        "pg_read_file('/etc/passwd')",
        "pg_read_binary_file('/etc/passwd')",
        "encode(pg_read_binary_file('/etc/passwd'), 'hex')",
    ],
    "sqlite": ["readfile('/etc/passwd')", "load_extension('/etc/passwd')"],
}
# Values that try to end the quoted string they may be pasted into, and reopen it after a read.
HOSTILE_VALUES = {
    "mysql": [
        ", LOAD_FILE(0x2f6574632f706173737764) AS leaked, ",
        "' , LOAD_FILE('/etc/passwd') AS leaked , '",
        "\\' , LOAD_FILE(0x2f6574632f706173737764) AS leaked -- ",
        '" , LOAD_FILE(0x2f6574632f706173737764) AS leaked , "',
        "` , LOAD_FILE(0x2f6574632f706173737764) AS leaked , `",
    ],
    "postgresql": [
        "' , pg_read_file('/etc/passwd') AS leaked , '",
        "\" , pg_read_file('/etc/passwd') AS leaked , \"",
        "$$ , pg_read_file('/etc/passwd') AS leaked , $$",
        "%s , pg_read_file('/etc/passwd') AS leaked",
    ],
    "sqlite": ["' , readfile('/etc/passwd') AS leaked , '"],
}


BENIGN = ["SELECT 1 AS one", "SELECT id FROM orders ORDER BY id", "SELECT name FROM customers WHERE id = 1"]


@st.composite
def hidden_reads(draw: st.DrawFn, backend: str) -> tuple[str, dict[str, Any] | None]:
    """A query that reads /etc/passwd if the server reads a comment, a space or a quote otherwise."""
    read = draw(st.sampled_from(READS[backend]))
    odd = draw(st.sampled_from(ODD_CHARACTERS))
    opener = draw(st.sampled_from(COMMENT_OPENERS))
    closer = draw(st.sampled_from(COMMENT_CLOSERS))
    quote = {"mysql": "`", "postgresql": '"', "sqlite": '"'}[backend]
    # A derived table with a column named by the odd character: where MariaDB reads `1 --<odd>`
    # as 1 - -<odd>, the name exists.
    from_odd = f"FROM (SELECT 1 AS {quote}{odd}{quote}) t"
    shape = draw(st.integers(0, 11))
    if shape >= 8:  # nothing hidden in the text: only a value pasted where the guard saw data could read
        sql = draw(st.sampled_from(BENIGN))
        return _with_placeholder(draw, sql, backend, always=True)
    if shape == 0:
        sql = f"SELECT 1 {opener}{odd}, {read} AS leaked {from_odd}"
    elif shape == 1:
        sql = f"SELECT 1 {opener}{odd}{closer}, {read} AS leaked {opener}{closer}"
    elif shape == 2:
        sql = f"SELECT 1 {opener} x{closer}, {read} AS leaked"
    elif shape == 3:
        sql = f"SELECT 1{odd}, {read} AS leaked"
    elif shape == 4:
        sql = f"SELECT 1 {opener}{closer}'{odd}, {read} AS leaked {opener} '"
    elif shape == 5:
        sql = f"SELECT 1 {opener}{odd}, 2 {from_odd} INTO OUTFILE '{MARKER}'"
    elif shape == 6:
        sql = f"SELECT 1 AS a{odd}b, {read} AS leaked"
    else:
        sql = f"SELECT 1 {opener}{odd}{read}{closer}"
    return _with_placeholder(draw, sql, backend)


def _with_placeholder(
    draw: st.DrawFn, sql: str, backend: str, *, always: bool = False
) -> tuple[str, dict[str, Any] | None]:
    """`sql`, sometimes with a ``:p`` put anywhere (a string, a comment, a name, an expression)."""
    where = draw(st.integers(0, 5 if always else 9))
    if where >= 6:
        return sql, None
    quote = {"mysql": "`", "postgresql": '"', "sqlite": '"'}[backend]
    placed = [
        f"SELECT ':p' AS note, {sql[len('SELECT ') :]}",
        f"SELECT {quote}:p{quote}, {sql[len('SELECT ') :]}",
        f"SELECT :p AS value, {sql[len('SELECT ') :]}",
        f"{sql} /* :p */",
        f"{sql} -- :p",
        f"SELECT 'x:p', CONCAT(':p', :p) AS value, {sql[len('SELECT ') :]}"
        if backend == "mysql"
        else f"SELECT 'x:p' || :p AS value, {sql[len('SELECT ') :]}",
    ][where]
    return placed, {"p": draw(st.sampled_from(HOSTILE_VALUES[backend]))}


BACKENDS = [
    pytest.param("sqlite"),
    pytest.param("postgresql", marks=pytest.mark.postgres),
    pytest.param("mysql", marks=pytest.mark.mysql, id="mariadb"),
]


@pytest.fixture(params=BACKENDS)
def app(request, tmp_path):
    return make_app(request, tmp_path, request.param)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_query_the_guard_and_the_server_might_read_apart_never_reads_the_hosts_files(app, databases, data):
    backend = app.backend
    sql, params = data.draw(hidden_reads(backend), label="query")
    try:
        try:
            answer: Any = databases.run_query(app.root, sql, params)
            event(f"{backend}: ran")
        except HomeportError as exc:
            assert exc.code in CODES, (sql, params, exc.code, exc.message)
            event(f"{backend}: {exc.code}")
            answer = exc.message
        assert not leaks_passwd(answer), (sql, params, answer)
        assert not Path(MARKER).exists(), (sql, params)
    finally:
        Path(MARKER).unlink(missing_ok=True)


def test_the_drawn_reads_do_read_the_file_when_nothing_hides_them(app, databases, monkeypatch):
    """The hostile check is real: the same reads, let past the guard, return the file."""
    if app.backend == "sqlite":
        pytest.skip("SQLite has no function that reads a file here")
    monkeypatch.setattr("homeport.projectdb.query.check_statement", lambda *_args, **_kwargs: True)
    for read in READS[app.backend]:
        assert leaks_passwd(databases.run_query(app.root, f"SELECT {read} AS leaked")), read
