"""The statement guard: one statement, and only what the mode allows, refused with the way out."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from homeport.errors import QueryRejectedError, QuerySyntaxError
from homeport.projectdb._statement_guard import check_statement

READS = {
    "sqlite": [
        "SELECT * FROM orders",
        "select id from orders where status = 'a;b' -- trailing; comment",
        "SELECT 1;",
        "/* leading */ SELECT 1",
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3) SELECT x FROM c",
        "VALUES (1), (2)",
        "(SELECT 1) UNION (SELECT 2)",
        "EXPLAIN QUERY PLAN SELECT * FROM orders",
        "PRAGMA table_info(orders)",
        "PRAGMA main.index_list('orders')",
        "PRAGMA user_version",
        "SELECT * FROM pragma_table_info('orders')",
        "SELECT replace(status, 'a', 'b') FROM orders",
    ],
    "postgresql": [
        "SELECT now()",
        "SELECT $$;$$, E'\\';', 'x'::text",
        "TABLE orders",
        "EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM orders",
        "SHOW search_path",
        "SELECT * FROM orders TABLESAMPLE SYSTEM (10)",
        "SELECT pg_sleep(0.01)",
        "SELECT id FROM orders WHERE tags @> ARRAY['x'] AND data->>'k' = :value",
    ],
    "mysql": [
        "SELECT `id` FROM orders # comment",
        "SHOW TABLES",
        "SHOW CREATE TABLE orders",
        "DESCRIBE orders",
        "EXPLAIN orders",
        "EXPLAIN FORMAT=JSON SELECT * FROM orders",
        "SELECT INSERT('abc', 1, 1, 'x'), /*+ NO_RANGE_OPTIMIZATION(orders) */ 1",
        "SELECT '\\'' AS quote",
    ],
}
READ_CASES = [(backend, sql) for backend, sqls in READS.items() for sql in sqls]


@pytest.mark.parametrize(("backend", "sql"), READ_CASES)
def test_reads_pass_in_read_only_mode(backend, sql):
    check_statement(sql, backend, allow_writes=False)


@pytest.mark.parametrize(
    ("sql", "is_query"),
    [
        ("SELECT 1", True),
        ("WITH x AS (SELECT 1) SELECT * FROM x", True),
        ("VALUES (1)", True),
        ("(SELECT 1)", True),
        ("SHOW search_path", False),
        ("EXPLAIN SELECT 1", False),
        ("INSERT INTO t VALUES (1)", False),
        ("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", False),
        ("SELECT * FROM t FOR UPDATE", False),
    ],
)
def test_plain_queries_are_told_apart_from_other_statements(sql, is_query):
    assert check_statement(sql, "postgresql", allow_writes=True) is is_query


@pytest.mark.parametrize(
    ("backend", "sql"),
    [
        ("sqlite", "INSERT INTO t VALUES (1)"),
        ("sqlite", "PRAGMA journal_mode = WAL"),
        ("sqlite", "CREATE TABLE t (id INTEGER)"),
        ("postgresql", "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d"),
        ("postgresql", "UPDATE t SET x = 1"),
        ("postgresql", "SELECT * INTO t2 FROM t"),
        ("mysql", "REPLACE INTO t VALUES (1)"),
    ],
)
def test_writes_are_refused_in_read_only_mode_with_the_setting_that_allows_them(backend, sql):
    with pytest.raises(QueryRejectedError, match=r"allow_writes = true under \[database\] in \.homeport/config\.toml"):
        check_statement(sql, backend, allow_writes=False)
    check_statement(sql, backend, allow_writes=True)


@pytest.mark.parametrize(
    ("backend", "sql", "reason"),
    [
        ("sqlite", "ATTACH 'x.db' AS x", "files or programs on the database host"),
        ("sqlite", "VACUUM INTO '/tmp/x.db'", "VACUUM INTO"),
        ("sqlite", "SELECT load_extension('x')", "load_extension"),
        ("postgresql", "COPY t TO PROGRAM 'id'", "read rows with SELECT instead"),
        ("postgresql", "SELECT pg_terminate_backend(1)", "ends other sessions"),
        ("postgresql", "SELECT lo_import('/etc/passwd')", "lo_import"),
        ("postgresql", "SELECT * FROM dblink('x', 'y') AS t(a int)", "other databases"),
        ("postgresql", "COMMIT", "controls the transaction"),
        ("postgresql", "SET TRANSACTION READ WRITE", "pooled connection"),
        ("postgresql", "ALTER SYSTEM SET work_mem = '1GB'", "ALTER SYSTEM"),
        ("postgresql", "CREATE EXTENSION dblink", "CREATE EXTENSION"),
        ("postgresql", "DO $$ BEGIN END $$", "code block"),
        ("postgresql", "INSERT INTO t SELECT pg_read_file('/etc/passwd')", "pg_read_file"),
        ("mysql", "SELECT * FROM t INTO OUTFILE '/tmp/x'", "INTO OUTFILE"),
        ("mysql", "LOAD DATA INFILE 'x' INTO TABLE t", "LOAD"),
        ("mysql", "SELECT 1 /*! INTO OUTFILE '/tmp/x' */", "executable comments"),
        ("mysql", "INSERT INTO t VALUES (LOAD_FILE('/etc/passwd'))", "LOAD_FILE"),
        ("mysql", "GRANT ALL ON *.* TO x", "privileges"),
    ],
)
def test_host_access_and_session_changes_are_refused_even_with_writes_allowed(backend, sql, reason):
    with pytest.raises(QueryRejectedError, match=reason):
        check_statement(sql, backend, allow_writes=True)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "mysql"])
def test_several_statements_are_refused_with_their_count(backend):
    with pytest.raises(QueryRejectedError, match=r"holds 3 statements.*one at a time"):
        check_statement("SELECT 1; SELECT 2; SELECT 3", backend, allow_writes=True)


@pytest.mark.parametrize("sql", ["", "   ", ";", "-- only a comment"])
def test_an_empty_query_is_refused(sql):
    with pytest.raises(QueryRejectedError, match="empty"):
        check_statement(sql, "sqlite", allow_writes=False)


def test_a_refused_pragma_lists_the_pragmas_that_only_report():
    with pytest.raises(QueryRejectedError, match="table_info") as caught:
        check_statement("PRAGMA foreign_keys = OFF", "sqlite", allow_writes=False)
    assert "foreign_keys with a value" in str(caught.value)


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\\"), max_size=40))
def test_any_string_literal_is_one_statement_and_a_stacked_drop_never_is(text):
    for backend in ("sqlite", "postgresql", "mysql"):
        literal = _quoted(text)
        if backend == "mysql" and ("/*!" in literal or "/*M!" in literal):
            continue
        check_statement(f"SELECT {literal} AS v", backend, allow_writes=False)
        with pytest.raises(QueryRejectedError):
            check_statement(f"SELECT {literal} AS v; DROP TABLE orders", backend, allow_writes=False)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "mysql"])
@pytest.mark.parametrize("sql", ["SELEC 1", "DELET FROM orders", "slect * from orders", "FROM orders SELECT id"])
def test_a_misspelled_statement_is_answered_as_a_syntax_error_not_as_a_write(backend, sql):
    with pytest.raises(QuerySyntaxError) as caught:
        check_statement(sql, backend, allow_writes=False)
    assert caught.value.code == "query_syntax_error"
    assert "allow_writes" not in caught.value.message
    assert sql.split()[0] in caught.value.message


def test_text_that_does_not_tokenize_is_a_syntax_error_with_a_hint():
    with pytest.raises(QuerySyntaxError, match="quotes and comments are closed"):
        check_statement("SELECT 'unterminated", "postgresql", allow_writes=False)


@pytest.mark.parametrize("sql", ["OPTIMIZE TABLE orders", "VACUUM", "ANALYZE", "RENAME TABLE orders TO x"])
def test_a_real_statement_that_writes_is_still_refused_as_a_write(sql):
    with pytest.raises(QueryRejectedError, match="allow_writes"):
        check_statement(sql, "mysql", allow_writes=False)


# A MySQL server with NO_BACKSLASH_ESCAPES or ANSI_QUOTES in its sql_mode ends these quotes at the
# backslash, and runs what the default reading takes for the rest of a string.
OTHER_SQL_MODES = [
    "SELECT 'a\\' , LOAD_FILE('/etc/hostname') AS f -- '",
    'SELECT "a\\" , LOAD_FILE(\'/etc/hostname\') -- "',
    'SELECT "a\\" , GET_LOCK(\'x\', 0) -- "',
    "SELECT 'a\\' , 1 FROM orders FOR UPDATE -- '",
]


@pytest.mark.parametrize("sql", OTHER_SQL_MODES)
def test_mysql_text_is_checked_as_every_sql_mode_would_read_it(sql):
    with pytest.raises(QueryRejectedError):
        check_statement(sql, "mysql", allow_writes=False)


@pytest.mark.parametrize("sql", ["SELECT 'it\\'s'", 'SELECT \'a\\\\\', "b\\"c"', "SELECT 'a\\';' AS semi"])
def test_backslash_escapes_that_hide_nothing_still_pass_on_mysql(sql):
    check_statement(sql, "mysql", allow_writes=False)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT /*+ MAX_EXECUTION_TIME(3600000) */ SLEEP(60)",
        "SELECT /*+ max_execution_time(0) */ 1",
        "SELECT /*+ SET_VAR(sql_mode = 'NO_BACKSLASH_ESCAPES') */ 1",
        "SELECT /*+ BKA(orders) SET_VAR(max_execution_time = 0) */ 1",
    ],
)
def test_mysql_optimizer_hints_that_change_the_timeout_or_session_variables_are_refused(sql):
    """MySQL 8 lets these hints override the session's max_execution_time and settings."""
    with pytest.raises(QueryRejectedError, match="optimizer hint"):
        check_statement(sql, "mysql", allow_writes=False)
