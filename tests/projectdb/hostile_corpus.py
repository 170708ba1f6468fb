"""Queries that must never change a project database, run on every backend they apply to.

Each entry is refused by Homeport or fails in the database; afterwards the database is unchanged.
`database_alone` names the backends where the database layer by itself (the read-only connection
or transaction, the driver's single-statement rule, the timeout, the SQLite authorizer) refuses
the query even with the statement guard switched off; elsewhere the guard is the only line, for
example COPY ... TO PROGRAM as a PostgreSQL superuser, which a read-only transaction allows.

``{marker}`` stands for a path in /tmp that must not exist afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field

S, P, M = "sqlite", "postgresql", "mysql"
ALL = frozenset({S, P, M})


@dataclass(frozen=True)
class Hostile:
    id: str
    sql: str
    backends: frozenset[str] = ALL
    database_alone: frozenset[str] | None = field(default=None)  # None: every backend in `backends`

    @property
    def refused_by_database_alone(self) -> frozenset[str]:
        return self.backends if self.database_alone is None else self.database_alone


def only(*backends: str) -> frozenset[str]:
    return frozenset(backends)


NOWHERE: frozenset[str] = frozenset()

CORPUS: list[Hostile] = [
    # Stacked statements and the tricks that hide the second one.
    Hostile("stacked-drop", "SELECT 1; DROP TABLE orders"),
    Hostile("stacked-delete", "SELECT * FROM customers; DELETE FROM orders"),
    Hostile("stacked-no-space", "SELECT 1;DROP TABLE orders--"),
    Hostile("semicolon-in-block-comment", "SELECT 1 /* ; */; DROP TABLE orders"),
    Hostile("semicolon-after-line-comment", "SELECT 1 -- note\n; DROP TABLE orders"),
    Hostile("semicolon-in-string", "SELECT ';'; DROP TABLE orders"),
    Hostile("commit-then-drop", "COMMIT; DROP TABLE orders"),
    Hostile("rollback-then-delete", "ROLLBACK; DELETE FROM orders"),
    Hostile("begin-drop-commit", "BEGIN; DROP TABLE orders; COMMIT"),
    Hostile("end-then-drop", "END; DROP TABLE orders"),
    Hostile("dollar-quote-then-drop", "SELECT $$;$$; DROP TABLE orders", only(P)),
    Hostile("backslash-quote-then-drop", "SELECT '\\''; DROP TABLE orders; -- '", only(M)),
    Hostile("executable-comment-stacked", "SELECT 1 /*!; DROP TABLE orders */", only(M)),
    Hostile("executable-comment-outfile", "SELECT 1 /*! INTO OUTFILE '{marker}' */", only(M), NOWHERE),
    Hostile("comment-before-delete", "/* just a read */ DELETE FROM orders"),
    # (PostgreSQL reads this one as SELECT 1 AS delete FROM orders: harmless, so not listed there.)
    Hostile("line-comment-hides-nothing", "SELECT 1 --\nDELETE FROM orders", only(S, M)),
    Hostile("fullwidth-semicolon", "SELECT 1\uff1bDROP TABLE orders"),
    Hostile("quoted-identifier-semicolon", 'SELECT "a"";DROP TABLE orders;--" FROM orders', only(P)),
    # Transaction and session control.
    Hostile("commit", "COMMIT", database_alone=only(S)),
    Hostile("rollback", "ROLLBACK", database_alone=only(S)),
    Hostile("begin", "BEGIN", database_alone=only(S)),
    Hostile("savepoint", "SAVEPOINT evil", database_alone=only(S)),
    Hostile("set-transaction-read-write", "SET TRANSACTION READ WRITE", database_alone=only(S, M)),
    Hostile("set-session-characteristics", "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE", only(P), NOWHERE),
    Hostile("set-session-transaction", "SET SESSION TRANSACTION READ WRITE", only(M), NOWHERE),
    Hostile("start-transaction-read-write", "START TRANSACTION READ WRITE", only(P, M), NOWHERE),
    Hostile("set-autocommit", "SET autocommit = 1", only(M), NOWHERE),
    Hostile("set-global", "SET @@GLOBAL.wait_timeout = 28800", only(M), NOWHERE),
    Hostile("xa-start", "XA START 'evil'", only(M)),
    Hostile("prepare-delete", "PREPARE evil AS DELETE FROM orders", only(P), NOWHERE),
    Hostile("discard-all", "DISCARD ALL", only(P)),
    Hostile("notify", "NOTIFY evil, 'payload'", only(P), NOWHERE),  # never delivered: rolled back
    Hostile("lock-table", "LOCK TABLE orders IN ACCESS EXCLUSIVE MODE", only(P), NOWHERE),  # until rollback
    Hostile("lock-tables", "LOCK TABLES orders WRITE", only(M)),
    Hostile("handler-open", "HANDLER orders OPEN", only(M), NOWHERE),
    # Plain changes.
    Hostile("insert", "INSERT INTO orders (customer_id, total) VALUES (1, 1)"),
    Hostile("insert-select", "INSERT INTO scratch SELECT id, name FROM customers"),
    Hostile("update", "UPDATE orders SET total = 0"),
    Hostile("delete", "DELETE FROM orders"),
    Hostile("replace", "REPLACE INTO scratch VALUES (1, 'x')"),
    Hostile("drop-table", "DROP TABLE orders"),
    Hostile("create-table", "CREATE TABLE evil (id INTEGER)"),
    Hostile("create-temporary-table", "CREATE TEMPORARY TABLE evil_tmp (id INTEGER)"),
    Hostile("create-view", "CREATE VIEW evil_view AS SELECT 1 AS one"),
    Hostile("create-index", "CREATE INDEX ix_evil ON orders (total)"),
    Hostile("drop-index", "DROP INDEX ix_orders_status"),
    Hostile("alter-table", "ALTER TABLE orders ADD COLUMN evil INTEGER"),
    Hostile("rename-table", "RENAME TABLE orders TO evil", only(M)),
    Hostile("truncate", "TRUNCATE TABLE orders"),
    Hostile("create-database", "CREATE DATABASE homeport_evil_db", only(P, M)),
    Hostile("grant-postgres", "GRANT ALL ON orders TO PUBLIC", only(P)),
    Hostile("grant-mysql", "GRANT SELECT ON orders TO 'homeport_evil'@'localhost' IDENTIFIED BY 'x'", only(M)),
    Hostile("merge", "MERGE INTO orders o USING customers c ON o.customer_id = c.id WHEN MATCHED THEN DELETE", only(P)),
    Hostile("call-procedure", "CALL evil_procedure()"),
    Hostile("do-block", "DO $$ BEGIN DELETE FROM orders; END $$", only(P)),
    Hostile("do-sleep", "DO SLEEP(3)", only(M)),
    # Changes hidden inside something that reads.
    Hostile("cte-delete", "WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d", only(P)),
    Hostile("cte-update", "WITH u AS (UPDATE orders SET total = 0 RETURNING id) SELECT count(*) FROM u", only(P)),
    Hostile("cte-insert", "WITH i AS (INSERT INTO scratch VALUES (1, 'x') RETURNING *) SELECT * FROM i", only(P)),
    Hostile("with-then-delete", "WITH doomed AS (SELECT id FROM orders) DELETE FROM orders"),
    Hostile("select-into-table", "SELECT * INTO evil_copy FROM orders"),
    Hostile("select-into-variable", "SELECT id INTO @evil FROM orders LIMIT 1", only(M), NOWHERE),
    Hostile("select-for-update", "SELECT * FROM orders FOR UPDATE", only(P, M), only(P)),
    Hostile("explain-analyze-delete", "EXPLAIN ANALYZE DELETE FROM orders", only(P)),
    Hostile("analyze-delete", "ANALYZE DELETE FROM orders", only(M)),
    Hostile("nextval", "SELECT nextval('orders_id_seq')", only(P)),
    Hostile("query-to-xml-delete", "SELECT query_to_xml('DELETE FROM orders RETURNING id', true, false, '')", only(P)),
    # SQLite: files, extensions, PRAGMAs that write.
    Hostile("attach", "ATTACH DATABASE '{marker}' AS evil", only(S)),
    Hostile("attach-uri-rwc", "ATTACH 'file:{marker}?mode=rwc' AS evil", only(S)),
    Hostile("detach-main", "DETACH DATABASE main", only(S)),
    Hostile("vacuum-into", "VACUUM INTO '{marker}'", only(S)),
    Hostile("vacuum", "VACUUM", only(S, P)),
    Hostile("pragma-journal-mode", "PRAGMA journal_mode = WAL", only(S)),
    Hostile("pragma-user-version", "PRAGMA user_version = 42", only(S)),
    Hostile("pragma-query-only-off", "PRAGMA query_only = OFF", only(S)),
    Hostile("pragma-writable-schema", "PRAGMA writable_schema = ON", only(S)),
    Hostile("pragma-main-user-version", "PRAGMA main.user_version(7)", only(S)),
    Hostile("load-extension", "SELECT load_extension('/tmp/homeport-no-such-extension')", only(S)),
    Hostile("writefile", "SELECT writefile('{marker}', 'x')", only(S)),
    Hostile("reindex", "REINDEX", only(S)),
    Hostile("analyze", "ANALYZE", only(S, P), only(S)),  # PostgreSQL updates statistics read-only
    Hostile("analyze-table", "ANALYZE TABLE orders", only(M), NOWHERE),
    Hostile("create-virtual-table", "CREATE VIRTUAL TABLE evil USING fts5(body)", only(S)),
    Hostile("create-trigger", "CREATE TRIGGER evil AFTER INSERT ON orders BEGIN DELETE FROM orders; END", only(S)),
    # PostgreSQL: the host, other sessions, settings, locks.
    Hostile("copy-to-program", "COPY orders TO PROGRAM 'touch {marker}'", only(P), NOWHERE),
    Hostile("copy-to-file", "COPY (SELECT 1) TO '{marker}'", only(P), NOWHERE),
    Hostile("copy-from-file", "COPY scratch FROM '/etc/hostname'", only(P)),
    Hostile(
        "pg-terminate-backend",
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = -1",
        only(P),
        NOWHERE,
    ),
    Hostile(
        "pg-cancel-backend", "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE pid = -1", only(P), NOWHERE
    ),
    Hostile("lo-import", "SELECT lo_import('/etc/hostname')", only(P), NOWHERE),
    Hostile("lo-export", "SELECT lo_export(123456789, '{marker}')", only(P)),
    Hostile("qualified-read-file", "SELECT pg_catalog.pg_read_file('/etc/hostname')", only(P), NOWHERE),
    Hostile("quoted-read-file", "SELECT \"pg_read_file\"('/etc/hostname')", only(P), NOWHERE),
    Hostile("unicode-escaped-read-file", "SELECT U&\"pg\\005fread_file\"('/etc/hostname')", only(P), NOWHERE),
    Hostile("unicode-escaped-uescape", "SELECT U&\"pg!005fread_file\" UESCAPE '!' ('/etc/hostname')", only(P), NOWHERE),
    Hostile("pg-ls-dir", "SELECT pg_ls_dir('.')", only(P), NOWHERE),
    Hostile("dblink-exec", "SELECT dblink_exec('dbname=test', 'DROP TABLE orders')", only(P)),
    Hostile("set-config-read-write", "SELECT set_config('transaction_read_only', 'off', false)", only(P)),
    Hostile(
        "set-config-timeout-then-sleep", "SELECT set_config('statement_timeout', '0', false), pg_sleep(3)", only(P)
    ),
    Hostile("advisory-lock", "SELECT pg_advisory_lock(42)", only(P), NOWHERE),
    Hostile("pg-sleep-past-timeout", "SELECT pg_sleep(10)", only(P)),
    Hostile("copy-replication-slot", "SELECT pg_copy_logical_replication_slot('a', 'b')", only(P)),
    Hostile("alter-system", "ALTER SYSTEM SET work_mem = '64MB'", only(P)),
    Hostile("load-library", "LOAD 'auto_explain'", only(P), NOWHERE),
    Hostile("create-extension", "CREATE EXTENSION IF NOT EXISTS dblink", only(P)),
    Hostile("explain-analyze-read-file", "EXPLAIN ANALYZE SELECT pg_read_file('/etc/hostname')", only(P), NOWHERE),
    # MySQL / MariaDB: files, locks, the server.
    Hostile("into-outfile", "SELECT * FROM orders INTO OUTFILE '{marker}'", only(M), NOWHERE),
    Hostile("into-dumpfile", "SELECT 1 INTO DUMPFILE '{marker}'", only(M), NOWHERE),
    Hostile("load-data-infile", "LOAD DATA INFILE '/etc/hostname' INTO TABLE scratch", only(M)),
    Hostile("load-data-local-infile", "LOAD DATA LOCAL INFILE '/etc/hostname' INTO TABLE scratch", only(M)),
    Hostile("load-file", "SELECT LOAD_FILE('/etc/hostname')", only(M), NOWHERE),
    Hostile("get-lock", "SELECT GET_LOCK('homeport_evil', 0)", only(M), NOWHERE),
    Hostile("sleep-past-timeout", "SELECT SLEEP(10)", only(M)),
    # MariaDB stops it at the time limit but answers 0 with no error: bounded, yet not a failure.
    Hostile("benchmark-past-timeout", "SELECT BENCHMARK(5000000000, MD5('x'))", only(M), NOWHERE),
    Hostile("kill", "KILL 999999", only(M)),
    Hostile("install-plugin", "INSTALL SONAME 'ha_blackhole'", only(M)),
    Hostile("flush", "FLUSH TABLES", only(M), NOWHERE),
    Hostile("create-udf", "CREATE FUNCTION evil RETURNS STRING SONAME 'evil.so'", only(M)),
]
