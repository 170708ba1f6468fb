"""A grammar of hostile SQL for the read-only property test (`test_read_only_property`).

It mixes reads, writes, DDL, stacked statements, every comment form (including MySQL's
executable ``/*! ... */`` and ``/*!50000 ...*/``), string literals with quotes and backslashes,
data-modifying CTEs, ``SELECT ... INTO``, row locks, SET, CALL, DO, LOAD DATA, COPY, PRAGMA,
ATTACH, HANDLER, LOCK TABLES, PREPARE / EXECUTE, transaction control, and function calls with
side effects, favouring each backend's own. Objects it may create are named ``hp_evil*``, files
`MARKER`; `:p` placeholders get hostile values from `PARAMETER_VALUES`.
"""

from __future__ import annotations

import unicodedata
import uuid

from hypothesis import strategies as st

MARKER = f"/tmp/hp_evil_{uuid.uuid4().hex}"

TABLES = st.sampled_from(["orders", "customers", "scratch", "hp_seq", "main.orders", "public.orders"])
LITERALS = st.sampled_from(
    [
        "1",
        "NULL",
        "'a'",
        "'it''s'",
        "'a\\''",
        "'\\\\'",
        "'a\\'; DELETE FROM orders; -- '",
        '"x"',
        '"a\\"" ',
        "E'\\''",
        "$$;$$",
        "$t$ ; DELETE FROM orders; $t$",
        "'; DELETE FROM orders; --'",
        "'/*'",
        "'*/'",
        "'/*!'",
        "X'41'",
        "0x41",
        "N'x'",
        "U&'\\0041'",
        ":p",
        "CAST(:p AS CHAR(40))",
        "':p'",  # a placeholder inside a string is text: a value for it is refused, never pasted there
        '":p"',
    ]
)
# Values for :p, bound by the driver: never SQL, whatever they hold.
PARAMETER_VALUES = st.one_of(
    st.sampled_from(["'; DELETE FROM orders; --", "\\'; DROP TABLE orders; -- ", "/*!50000 DROP TABLE orders*/", "$$"]),
    st.text(max_size=20),
    st.integers(),
)
# Function calls with side effects, by the backend that has them ("any": all of them).
SIDE_EFFECTS = {
    "postgresql": [
        "pg_advisory_lock(42)",
        "pg_try_advisory_lock(42)",
        "pg_advisory_xact_lock(42)",
        "pg_catalog.pg_advisory_lock(42)",
        '"pg_advisory_lock"(42)',
        "set_config('search_path', 'hp_evil', false)",
        "set_config('transaction_read_only', 'off', false)",
        "nextval('orders_id_seq')",
        "setval('orders_id_seq', 99)",
        "lo_import('/etc/hostname')",
        "lo_create(0)",
        "pg_notify('hp_evil', 'x')",
        "pg_sleep(0.01)",
        "pg_read_file('/etc/hostname')",
        "query_to_xml('DELETE FROM orders RETURNING id', true, false, '')",
        "dblink_exec('dbname=test', 'DROP TABLE orders')",
        "1 AS a$$ , pg_advisory_lock(1) AS b$$",
        "'a\\'' , pg_advisory_lock(1) -- '",
        "current_setting('search_path')",
    ],
    "mysql": [
        "GET_LOCK('hp_evil', 0)",
        "`GET_LOCK`('hp_evil', 0)",
        "RELEASE_LOCK('hp_evil')",
        "SLEEP(0.01)",
        "BENCHMARK(10, MD5('x'))",
        "LOAD_FILE('/etc/hostname')",
        "@hp_evil := 1",
        "@hp_evil",
        "LAST_INSERT_ID(42)",
        "NEXTVAL(hp_seq)",
        "NEXT VALUE FOR hp_seq",
        "SETVAL(hp_seq, 99)",
        "'a\\' , LOAD_FILE('/etc/hostname') -- '",
        '1 AS "a\\" , GET_LOCK(\'hp_evil\', 0) -- "',
    ],
    "sqlite": ["load_extension('hp_evil')", f"writefile('{MARKER}', 'x')", "readfile('/etc/hostname')", "changes()"],
    "any": ["hp_writer()", "count(*)", "random()", "max(id)"],
}
ALL_SIDE_EFFECTS = st.sampled_from([call for calls in SIDE_EFFECTS.values() for call in calls])


def side_effects(backend: str) -> st.SearchStrategy[str]:
    """Mostly calls `backend` has, sometimes any backend's."""
    own = st.sampled_from(SIDE_EFFECTS[backend] + SIDE_EFFECTS["any"])
    return st.one_of(own, own, own, ALL_SIDE_EFFECTS)


LOCKS = st.sampled_from(["FOR UPDATE", "FOR SHARE", "FOR NO KEY UPDATE", "FOR UPDATE NOWAIT", "LOCK IN SHARE MODE"])
INTO = st.sampled_from(["hp_evil_copy", "TEMP hp_evil_copy", "@hp_evil", f"OUTFILE '{MARKER}'", f"DUMPFILE '{MARKER}'"])
# Statements that are not built from an expression, one of each kind the task names.
FIXED = st.sampled_from(
    [
        # writes
        "INSERT INTO scratch VALUES (7, 'x')",
        "INSERT INTO scratch SELECT id, name FROM customers",
        "INSERT INTO scratch VALUES (7, 'x') RETURNING *",
        "UPDATE orders SET total = 0",
        "DELETE FROM orders",
        "REPLACE INTO scratch VALUES (1, 'x')",
        "TRUNCATE TABLE scratch",
        "MERGE INTO scratch s USING customers c ON s.id = c.id WHEN MATCHED THEN DELETE",
        # DDL
        "CREATE TABLE hp_evil (id INTEGER)",
        "CREATE TEMPORARY TABLE hp_evil_tmp (id INTEGER)",
        "CREATE TEMP TABLE hp_evil_tmp AS SELECT 1 AS one",
        "CREATE VIEW hp_evil_view AS SELECT 1 AS one",
        "CREATE INDEX hp_evil_ix ON orders (total)",
        "CREATE SEQUENCE hp_evil_seq",
        "CREATE SCHEMA hp_evil",
        "CREATE DATABASE hp_evil_db",
        "DROP TABLE scratch",
        "DROP INDEX ix_orders_status",
        "ALTER TABLE orders ADD COLUMN hp_evil INTEGER",
        "ALTER SEQUENCE orders_id_seq RESTART WITH 99",
        "RENAME TABLE scratch TO hp_evil",
        "COMMENT ON TABLE orders IS 'hp_evil'",
        "ANALYZE",
        "VACUUM",
        "REINDEX",
        "CREATE USER hp_evil",
        "GRANT ALL ON orders TO PUBLIC",
        # session and transaction control
        "SET @hp_evil = 1",
        "SET search_path = hp_evil",
        "SET SESSION sql_mode = 'ANSI_QUOTES'",
        "SET NAMES latin1",
        "SET autocommit = 1",
        "SET TRANSACTION READ WRITE",
        "SET SESSION TRANSACTION READ WRITE",
        "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
        "SET STATEMENT max_statement_time = 0 FOR SELECT 1",
        "RESET ALL",
        "DISCARD ALL",
        "USE mysql",
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "START TRANSACTION READ WRITE",
        "SAVEPOINT hp",
        "RELEASE SAVEPOINT hp",
        "END",
        "XA START 'hp'",
        "LOCK TABLES orders WRITE",
        "LOCK TABLES orders READ",
        "UNLOCK TABLES",
        "LOCK TABLE orders IN ACCESS EXCLUSIVE MODE",
        "HANDLER orders OPEN",
        "PREPARE hp_evil FROM 'DELETE FROM orders'",
        "PREPARE hp_evil AS DELETE FROM orders",
        "EXECUTE hp_evil",
        "DEALLOCATE PREPARE hp_evil",
        "DECLARE hp CURSOR WITH HOLD FOR SELECT 1",
        "LISTEN hp_evil",
        "NOTIFY hp_evil",
        "CALL hp_evil_proc()",
        "DO 1",
        "DO GET_LOCK('hp_evil', 0)",
        "DO @hp_evil := 1",
        "DO $$BEGIN DELETE FROM orders; END$$",
        # the host
        "LOAD DATA INFILE '/etc/hostname' INTO TABLE scratch",
        "LOAD DATA LOCAL INFILE '/etc/hostname' INTO TABLE scratch",
        "LOAD 'auto_explain'",
        "COPY scratch FROM '/etc/hostname'",
        f"COPY orders TO '{MARKER}'",
        f"COPY (SELECT 1) TO PROGRAM 'touch {MARKER}'",
        "COPY orders TO STDOUT",
        f"ATTACH DATABASE '{MARKER}' AS hp_evil",
        "DETACH DATABASE main",
        f"VACUUM INTO '{MARKER}'",
        "PRAGMA query_only = OFF",
        "PRAGMA user_version = 7",
        "PRAGMA journal_mode = WAL",
        "PRAGMA foreign_keys = OFF",
        "PRAGMA writable_schema = ON",
        "PRAGMA table_info(orders)",
        # reads
        "SHOW TABLES",
        "SHOW search_path",
        "DESCRIBE orders",
        "TABLE orders",
        "VALUES (1), (2)",
    ]
)


@st.composite
def expressions(draw: st.DrawFn, backend: str, depth: int = 0) -> str:
    options = [LITERALS, side_effects(backend), st.sampled_from(["id", "total", "name", "*"])]
    if depth < 1:
        options.append(queries(backend, depth + 1).map(lambda q: f"({q})"))
    return draw(st.one_of(options))


@st.composite
def queries(draw: st.DrawFn, backend: str, depth: int = 0) -> str:
    """A SELECT-shaped statement, possibly hiding a change."""
    expr = draw(expressions(backend, depth))
    table = draw(TABLES)
    shape = draw(st.integers(0, 8))
    if shape == 0:
        return f"SELECT {expr}"
    if shape == 1:
        return f"SELECT {expr} FROM {table}"
    if shape == 2:
        return f"SELECT * FROM {table} WHERE {expr} IS NOT NULL"
    if shape == 3:
        return f"SELECT {expr} FROM {table} {draw(LOCKS)}"
    if shape == 4:
        into = draw(INTO)
        return draw(st.sampled_from([f"SELECT {expr} INTO {into} FROM {table}", f"SELECT * FROM {table} INTO {into}"]))
    if shape == 5:
        inner = draw(
            st.sampled_from(
                [
                    f"SELECT {expr}",
                    "DELETE FROM orders RETURNING *",
                    "UPDATE orders SET total = 0 RETURNING id",
                    "INSERT INTO scratch VALUES (1, 'x') RETURNING *",
                ]
            )
        )
        return f"WITH x AS ({inner}) SELECT * FROM x"
    if shape == 6:
        return f"VALUES ({expr})"
    if shape == 7:
        return f"SELECT {expr} UNION SELECT {draw(expressions(backend, depth + 1))}"
    return f"SELECT {expr} FROM {table} LIMIT 1"


@st.composite
def single_statements(draw: st.DrawFn, backend: str) -> str:
    kind = draw(st.integers(0, 7))  # a quarter fixed statements, an eighth EXPLAIN-like, the rest queries
    if kind <= 1:
        return draw(FIXED)
    statement = draw(queries(backend))
    if kind == 2:
        explain = draw(st.sampled_from(["EXPLAIN", "EXPLAIN ANALYZE", "EXPLAIN (ANALYZE)", "ANALYZE", "DESCRIBE"]))
        return f"{explain} {draw(st.one_of(st.just(statement), FIXED))}"
    return statement


# Unicode spaces, format and control characters, alone or after a comment opener: where the guard's
# tokenizer and the server may disagree on whether a word or a comment ends (issue 22: "--" + U+00A0).
ODD_CHARACTERS = [
    chr(c)
    for c in range(0x3001)
    if not 0xD800 <= c <= 0xDFFF and (chr(c).isspace() or unicodedata.category(chr(c)) in ("Zs", "Cf", "Cc"))
] + ["\u2028", "\u2029", "\u205f", "\ufeff", "\u202e"]
SEPARATORS = st.one_of(
    st.sampled_from([" ", "\n", "\t", "/**/", "/* ; */", "-- c\n", "# c\n", "/* /* */ ", "--\n", "\r\n", "--\r\n"]),
    st.sampled_from(ODD_CHARACTERS),
    st.sampled_from(ODD_CHARACTERS).map(lambda odd: f"--{odd}"),
    st.sampled_from(ODD_CHARACTERS).map(lambda odd: f" -- c{odd}"),
)


@st.composite
def disguised(draw: st.DrawFn, statement: str, backend: str) -> str:
    """`statement` with comments between its words, wrapped or hidden in various ways."""
    words = statement.split(" ")
    text = words[0]
    for word in words[1:]:
        text += draw(SEPARATORS) if draw(st.integers(0, 4)) == 0 else " "
        text += word
    wrap = draw(st.integers(0, 12))  # about half are left as they are
    if wrap == 0:
        return f"/*! {text} */"
    if wrap == 1:
        return f"SELECT 1 /*!50000 , {draw(expressions(backend, 1))} */"
    if wrap == 2:
        return f"SELECT 1 /*M! , {draw(expressions(backend, 1))} */"
    if wrap == 3:
        return f"{draw(st.sampled_from(['/* c */ ', '-- c', '# c']))}\n{text}"
    if wrap == 4:
        return text.lower()
    if wrap == 5:
        return f"({text})"
    if wrap == 6:
        return f"SELECT '{text.replace(chr(39), chr(39) * 2)}'"
    return text


@st.composite
def statements(draw: st.DrawFn, backend: str) -> str:
    count = draw(st.sampled_from([1, 1, 1, 1, 2, 3]))
    parts = [draw(disguised(draw(single_statements(backend)), backend)) for _ in range(count)]
    joiner = draw(st.sampled_from([";", "; ", ";\n", " ; -- x\n", ";/**/"]))
    text = joiner.join(parts)
    return text + draw(st.sampled_from(["", ";", " -- end", " /* end */", "\n"]))
