"""Issue 22: the account behind a workspace's database is read on its first query.

An account that can read or write files on the database host (MariaDB FILE, a PostgreSQL
superuser or member of pg_read_server_files...) is refused for remote callers unless the
operator allows it, and named in a warning over stdio; either way the message shows how to make
a read-only account. The local test servers' administrators (MariaDB root, PostgreSQL postgres)
have exactly those privileges; the read-only accounts are made here.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from homeport.errors import DatabaseNotAllowedError
from homeport.projectdb import ProjectDatabases

from .conftest import MY_HOST, MY_PORT, PG_HOST, PG_PORT, _mysql_connect, make_app, write_config

ADMIN_HOST_ACCESS = {"mysql": "ALL PRIVILEGES ON *.*", "postgresql": "superuser"}


@pytest.fixture(
    params=[
        pytest.param("postgresql", marks=pytest.mark.postgres),
        pytest.param("mysql", marks=pytest.mark.mysql, id="mariadb"),
    ]
)
def admin_app(request, tmp_path):
    app = make_app(request, tmp_path, request.param)
    app.configure()
    return app


def test_over_stdio_the_first_result_warns_that_the_account_reaches_host_files(admin_app):
    with ProjectDatabases({}) as databases:
        first = databases.run_query(admin_app.root, "SELECT 1 AS one")
        second = databases.run_query(admin_app.root, "SELECT 1 AS one")
    assert first["rows"] == [[1]]
    warning = first["warning"]
    assert ADMIN_HOST_ACCESS[admin_app.backend] in warning and "files on the database host" in warning
    assert "homeport_ro" in warning and ("GRANT SELECT" in warning)
    assert "warning" not in second


def test_for_remote_callers_an_account_that_reaches_host_files_is_refused_with_the_fix(admin_app):
    with ProjectDatabases({}, refuse_host_file_access=True) as databases:
        with pytest.raises(DatabaseNotAllowedError) as caught:
            databases.run_query(admin_app.root, "SELECT 1 AS one")
        assert databases.get_tables(admin_app.root)["tables"]  # Homeport's own statements still run
    message = caught.value.message
    assert caught.value.code == "database_not_allowed"
    assert ADMIN_HOST_ACCESS[admin_app.backend] in message
    assert "--allow-database-file-access" in message and "homeport_ro" in message


def test_host_access_names_the_admin_privileges(admin_app):
    with ProjectDatabases({}) as databases:
        access = databases.host_access(admin_app.root)
    assert access is not None and access.touches_host_files
    assert ADMIN_HOST_ACCESS[admin_app.backend] in access.host_files
    assert access.writes


@pytest.fixture
def mariadb_reader(request, tmp_path) -> Iterator[tuple[Path, str, str]]:
    """A workspace whose URL logs in as an account with SELECT on the app database only."""
    server = request.getfixturevalue("mysql_database")
    user = f"hp_ro_{uuid.uuid4().hex[:8]}"
    with _mysql_connect(None) as admin, admin.cursor() as cursor:
        cursor.execute(f"CREATE USER '{user}'@'127.0.0.1'")
        cursor.execute(f"CREATE USER '{user}'@'localhost'")
        for host in ("127.0.0.1", "localhost"):
            cursor.execute(f"GRANT SELECT, SHOW VIEW ON `{server.name}`.* TO '{user}'@'{host}'")
    root = tmp_path / "reader"
    root.mkdir()
    write_config(root, f"mysql://{user}@{MY_HOST}:{MY_PORT}/{server.name}")
    try:
        yield root, user, server.name
    finally:
        with _mysql_connect(None) as admin, admin.cursor() as cursor:
            cursor.execute(f"DROP USER IF EXISTS '{user}'@'127.0.0.1', '{user}'@'localhost'")


@pytest.mark.mysql
def test_a_mariadb_account_with_select_only_is_served_to_remote_callers_without_a_warning(mariadb_reader):
    root, user, _database = mariadb_reader
    with ProjectDatabases({}, refuse_host_file_access=True) as databases:
        result = databases.run_query(root, "SELECT count(*) FROM orders")
        access = databases.host_access(root)
    assert result["rows"] == [[5]] and "warning" not in result
    assert access is not None and access.host_files == () and access.writes == ()
    assert user in access.account


@pytest.mark.mysql
def test_a_mariadb_write_grant_is_reported_and_file_is_refused(mariadb_reader):
    root, user, database = mariadb_reader
    with _mysql_connect(None) as admin, admin.cursor() as cursor:
        cursor.execute(f"GRANT INSERT ON `{database}`.* TO '{user}'@'127.0.0.1'")
        cursor.execute(f"GRANT SELECT (id), UPDATE (status) ON `{database}`.orders TO '{user}'@'127.0.0.1'")
        cursor.execute(f"GRANT FILE ON *.* TO '{user}'@'127.0.0.1'")
    with ProjectDatabases({}, refuse_host_file_access=True) as databases:
        access = databases.host_access(root)
        with pytest.raises(DatabaseNotAllowedError, match="FILE ON"):
            databases.run_query(root, "SELECT 1")
    assert access is not None and access.host_files == ("FILE ON *.*",)
    assert f"INSERT ON `{database}`.*" in access.writes
    assert f"UPDATE ON `{database}`.`orders`" in access.writes


@pytest.fixture
def postgres_role(request) -> Iterator[tuple[str, str]]:
    """A login role that may connect to the app database and read its tables, and nothing else."""
    server = request.getfixturevalue("postgres_database")
    role = f"hp_ro_{uuid.uuid4().hex[:8]}"

    def admin() -> psycopg.Connection:
        return psycopg.connect(host=PG_HOST, port=PG_PORT, user="postgres", dbname=server.name, autocommit=True)

    with admin() as connection:
        connection.execute(f'CREATE ROLE "{role}" LOGIN')
        connection.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA public TO "{role}"')
    try:
        yield role, f"postgresql://{role}@{PG_HOST}:{PG_PORT}/{server.name}"
    finally:
        with admin() as connection:
            connection.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,))
            connection.execute(f'DROP OWNED BY "{role}"')
            connection.execute(f'DROP ROLE IF EXISTS "{role}"')


@pytest.mark.postgres
def test_a_postgres_read_only_role_is_served_and_a_file_role_is_refused(postgres_role, tmp_path):
    role, url = postgres_role
    root = tmp_path / "reader"
    root.mkdir()
    write_config(root, url)
    with ProjectDatabases({}, refuse_host_file_access=True) as databases:
        result = databases.run_query(root, "SELECT count(*) FROM orders")
        assert result["rows"] == [[5]] and "warning" not in result
        with psycopg.connect(host=PG_HOST, port=PG_PORT, user="postgres", dbname="test", autocommit=True) as admin:
            admin.execute(f'GRANT pg_read_server_files TO "{role}"')
        access = databases.host_access(root)
        assert access is not None and access.host_files == ("pg_read_server_files",)
    with (
        ProjectDatabases({}, refuse_host_file_access=True) as databases,
        pytest.raises(DatabaseNotAllowedError, match="pg_read_server_files"),
    ):
        databases.run_query(root, "SELECT 1")


@pytest.mark.parametrize(
    ("transport", "allow", "refused"),
    [("stdio", False, False), ("http", False, True), ("http", True, False)],
)
def test_the_server_refuses_host_file_accounts_only_for_remote_callers_unless_allowed(
    runtime_factory, transport, allow, refused
):
    runtime = runtime_factory(transport=transport, allow_database_file_access=allow)
    assert runtime.databases.refuse_host_file_access is refused


def test_doctor_warns_about_an_account_that_reaches_host_files_and_shows_the_read_only_role(admin_app):
    from homeport.cli.doctor import database_check

    check = database_check(admin_app.root)
    assert check.status == "warn"
    assert ADMIN_HOST_ACCESS[admin_app.backend] in check.detail and "--allow-database-file-access" in check.detail
    assert check.fix is not None and "homeport_ro" in check.fix


@pytest.mark.mysql
def test_doctor_is_content_with_a_select_only_account(mariadb_reader):
    from homeport.cli.doctor import database_check

    root, _user, _database = mariadb_reader
    check = database_check(root)
    assert check.status == "ok" and "answers SELECT 1" in check.detail


@pytest.mark.mysql
def test_for_remote_callers_an_account_whose_privileges_cannot_be_read_is_refused(mariadb_reader, monkeypatch):
    import pymysql

    root, _user, _database = mariadb_reader

    def unreadable(*_args: object) -> None:
        raise pymysql.err.OperationalError(1142, "SHOW GRANTS denied")

    monkeypatch.setattr("homeport.projectdb._privileges._mysql", unreadable)
    with ProjectDatabases({}, refuse_host_file_access=True) as remote, ProjectDatabases({}) as local:
        with pytest.raises(DatabaseNotAllowedError, match="SHOW GRANTS denied"):
            remote.run_query(root, "SELECT 1")
        assert local.run_query(root, "SELECT 1 AS one")["rows"] == [[1]]
