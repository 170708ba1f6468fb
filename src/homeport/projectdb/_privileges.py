"""What the account a workspace's database URL logs in as may do beyond reading its tables.

The statement guard and the read-only transaction are two lines; the account is the third and
the only one that holds whatever the first two miss. An account with MariaDB's FILE privilege
or a PostgreSQL superuser (or a member of ``pg_read_server_files``, ``pg_write_server_files``,
``pg_execute_server_program``) can read and write files on the database host, which a read-only
transaction does not stop (``LOAD_FILE``, ``SELECT ... INTO OUTFILE``, ``pg_read_file``,
``COPY ... TO PROGRAM``). `ProjectDatabases` reads this on the first query of a workspace:
over HTTP (remote callers) such an account is refused unless the operator allows it, over
stdio the result carries a warning; `homeport doctor` says it too. Either way the message
shows how to make a read-only account.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

from homeport.projectdb.connections import checkout, reset_session
from homeport.projectdb.discovery import DatabaseSource

__all__ = ["HostAccess", "read_host_access", "read_only_role_advice"]

_MYSQL_HOST_PRIVILEGES = ("FILE", "SUPER")
_MYSQL_WRITE_PRIVILEGES = frozenset(
    {
        "INSERT",
        "UPDATE",
        "DELETE",
        "CREATE",
        "DROP",
        "ALTER",
        "INDEX",
        "TRIGGER",
        "CREATE VIEW",
        "CREATE ROUTINE",
        "ALTER ROUTINE",
        "EVENT",
        "DELETE HISTORY",
        "CREATE TEMPORARY TABLES",
        "LOCK TABLES",
    }
)
_GRANT = re.compile(r"^GRANT (?P<privileges>.+?) ON (?P<target>.+?) TO ", re.DOTALL)
_PG_FILE_ROLES = ("pg_read_server_files", "pg_write_server_files", "pg_execute_server_program")


@dataclass(frozen=True)
class HostAccess:
    """What gives the account access to the host (empty: nothing) and which writes it may make."""

    host_files: tuple[str, ...]  # e.g. "FILE ON *.*", "superuser", "pg_read_server_files"
    writes: tuple[str, ...]  # e.g. "INSERT ON `app`.*", "INSERT/UPDATE/DELETE on 12 tables"
    account: str
    advice: str  # how to make a read-only account for this database (`read_only_role_advice`)

    @property
    def touches_host_files(self) -> bool:
        return bool(self.host_files)


def read_host_access(engine: Engine, source: DatabaseSource) -> HostAccess | None:
    """The account's privileges, or None on SQLite (no accounts; the authorizer refuses file functions).

    Raises:
        ProjectDatabaseError: the database cannot be reached.
        DRIVER_ERRORS (see `connections`): it could not be asked; the caller decides what that means.
    """
    if source.backend == "sqlite":
        return None
    connection = checkout(engine, source)
    ok = False
    try:
        raw: Any = connection.driver_connection
        host, writes, account = _postgres(raw) if source.backend == "postgresql" else _mysql(raw)
        raw.rollback()
        access = HostAccess(host, writes, account, read_only_role_advice(source))
        ok = True
        return access
    finally:
        if ok and reset_session(connection, source.backend):
            connection.close()
        else:
            connection.invalidate()


_Found = tuple[tuple[str, ...], tuple[str, ...], str]  # host-file privileges, write grants, account


def _mysql(raw: Any) -> _Found:
    with raw.cursor() as cursor:
        cursor.execute("SELECT CURRENT_USER()")
        (account,) = cursor.fetchone()
        cursor.execute("SHOW GRANTS")
        lines = [row[0] for row in cursor.fetchall()]
    host: list[str] = []
    writes: list[str] = []
    for line in lines:
        match = _GRANT.match(line)
        if match is None:
            continue
        target = match.group("target").strip()
        for privilege in _split_privileges(match.group("privileges")):
            everything = privilege in ("ALL", "ALL PRIVILEGES")
            if target == "*.*" and (everything or privilege in _MYSQL_HOST_PRIVILEGES):
                host.append(f"{privilege} ON *.*")
            if everything or privilege in _MYSQL_WRITE_PRIVILEGES:
                writes.append(f"{privilege} ON {target}")
    return tuple(dict.fromkeys(host)), tuple(dict.fromkeys(writes)), str(account)


def _split_privileges(text: str) -> list[str]:
    """``SELECT (a, b), INSERT`` -> ``["SELECT", "INSERT"]`` (column lists dropped)."""
    privileges, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            privileges.append(current)
            current = ""
        elif depth == 0:
            current += char
    privileges.append(current)
    return [" ".join(p.split()).upper() for p in privileges if p.strip()]


def _postgres(raw: Any) -> _Found:
    row = raw.execute(
        "SELECT current_user, r.rolsuper, "
        "ARRAY(SELECT b.rolname::text FROM pg_roles b WHERE b.rolname = ANY(%s) "
        "AND pg_has_role(current_user, b.oid, 'MEMBER') ORDER BY 1), "
        "(SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
        "AND n.nspname NOT LIKE 'pg_toast%%' AND has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE')) "
        "FROM pg_roles r WHERE r.rolname = current_user",
        (list(_PG_FILE_ROLES),),
    ).fetchone()
    account, superuser, roles, writable = row
    host = (["superuser"] if superuser else []) + list(roles)
    writes = [f"INSERT/UPDATE/DELETE/TRUNCATE on {writable} table(s)"] if writable else []
    return tuple(host), tuple(writes), str(account)


def read_only_role_advice(source: DatabaseSource) -> str:
    """How to make an account that reads this database and nothing else, for error text and doctor."""
    database = source.url.database or "app"
    if source.backend == "postgresql":
        return (
            f"connect as a read-only role instead, for example (as an administrator): CREATE ROLE homeport_ro "
            f"LOGIN PASSWORD '...'; GRANT CONNECT ON DATABASE \"{database}\" TO homeport_ro; GRANT USAGE ON "
            "SCHEMA public TO homeport_ro; GRANT SELECT ON ALL TABLES IN SCHEMA public TO homeport_ro; ALTER "
            "DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO homeport_ro; then put that role in "
            "the workspace's database URL (docs/project-database.md, 'A read-only account')"
        )
    return (
        "connect as a read-only account instead, for example (as an administrator): CREATE USER "
        f"'homeport_ro'@'localhost' IDENTIFIED BY '...'; GRANT SELECT, SHOW VIEW ON `{database}`.* TO "
        "'homeport_ro'@'localhost'; then put that account in the workspace's database URL "
        "(docs/project-database.md, 'A read-only account')"
    )
