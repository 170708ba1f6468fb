"""Untrusted workspace configuration (HTTP): no server environment variables, no other hosts, no server files.

Over stdio the workspace is the user's own and its configuration is trusted as written. Over HTTP
the caller is remote, so its workspace's `.homeport/config.toml`, `.env` or `database.yml` may
name only a database on this machine (a loopback address, ``localhost`` or a Unix socket) or a
SQLite file inside the workspace, and ``${NAME}`` / ``ENV[...]`` read only the workspace's `.env`.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from homeport.errors import ConfigError, DatabaseNotAllowedError
from homeport.projectdb import ProjectDatabases, discover_database

from .test_discovery import rendered, write

SERVER_ENV = {"DB_PASSWORD": "server-secret", "DB_HOST": "db.internal.example", "HOME": "/root"}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


def untrusted(root: Path, environ: dict[str, str] | None = None):
    return discover_database(root, SERVER_ENV if environ is None else environ, trust_workspace_config=False)


def test_trusted_configuration_reads_the_server_environment(root):
    write(root, ".homeport/config.toml", '[database]\nurl = "postgresql://app:${DB_PASSWORD}@127.0.0.1/app"\n')
    source = discover_database(root, SERVER_ENV)
    assert rendered(source) == "postgresql+psycopg://app:server-secret@127.0.0.1/app"


def test_untrusted_configuration_never_reads_a_server_environment_variable(root):
    write(root, ".homeport/config.toml", '[database]\nurl = "postgresql://app:${DB_PASSWORD}@127.0.0.1/app"\n')
    with pytest.raises(ConfigError, match="DB_PASSWORD") as caught:
        untrusted(root)
    assert "server-secret" not in caught.value.message


def test_untrusted_configuration_falls_back_to_its_default_and_its_own_env_file(root):
    write(root, ".homeport/config.toml", '[database]\nurl = "postgresql://app:${DB_PASSWORD:-dev}@127.0.0.1/app"\n')
    assert rendered(untrusted(root)) == "postgresql+psycopg://app:dev@127.0.0.1/app"
    write(root, ".env", "DB_PASSWORD=from-the-workspace\n")
    assert rendered(untrusted(root)) == "postgresql+psycopg://app:from-the-workspace@127.0.0.1/app"


def test_untrusted_env_file_expansion_never_reads_the_server_environment(root):
    write(root, ".env", "DATABASE_URL=postgresql://app:${DB_PASSWORD}@127.0.0.1/app\n")
    assert "server-secret" not in rendered(untrusted(root))


def test_untrusted_rails_erb_never_reads_the_server_environment(root):
    write(
        root,
        "config/database.yml",
        'development:\n  adapter: postgresql\n  host: <%= ENV.fetch("DB_HOST") { "localhost" } %>\n'
        "  password: <%= ENV['DB_PASSWORD'] %>\n  database: app_dev\n",
    )
    source = untrusted(root)
    assert (source.url.host, source.url.password) == ("localhost", None)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://app@db.example.com/app",
        "postgresql://app@10.0.0.5:5432/app",
        "postgresql://app@127.0.0.1,db.example.com/app",
        "postgresql://app@localhost.example.com/app",
        "postgresql://app@0.0.0.0/app",
        "postgresql:///app?host=db.example.com",
        "postgresql:///app?hostaddr=10.0.0.5",
        "postgresql://app@127.0.0.1/app?service=production",
        "postgresql://app@127.0.0.1/app?passfile=/root/.pgpass",
        "postgresql://app@127.0.0.1/app?sslkey=/etc/ssl/private/server.key",
        "postgresql://app@127.0.0.1/app?options=-csession_preload_libraries%3D/tmp/evil.so",
        "postgresql://app@127.0.0.1/app?options=-c%20search_path%3Dx%20-c%20log_statement%3Dnone",
        "mysql://root@192.168.1.10/app",
        "mysql://root@127.0.0.1/app?ssl_key=/etc/ssl/private/server.key",
    ],
)
def test_untrusted_configuration_may_not_name_another_host_or_a_server_file(root, url):
    write(root, ".env", f"DATABASE_URL={url}\n")
    with pytest.raises(DatabaseNotAllowedError) as caught:
        untrusted(root)
    assert caught.value.code == "database_not_allowed"
    assert ".env DATABASE_URL" in caught.value.message
    discover_database(root, {})  # trusted, the same file is accepted


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://app@127.0.0.1:5433/app",
        "postgresql://app@localhost/app",
        "postgresql://app@[::1]/app",
        "postgresql:///app",
        "postgresql:///app?host=/var/run/postgresql&sslmode=disable",
        "postgresql://app@127.0.0.1/app?schema=billing",
        "postgresql://app@127.0.0.1/app?options=-c%20search_path%3Dbilling,public",
        "mysql://root@127.0.0.2:3307/app?charset=utf8mb4",
        "mysql://root@localhost/app?unix_socket=/run/mysqld/mysqld.sock",
        "sqlite:///db/dev.sqlite3",
    ],
)
def test_untrusted_configuration_may_name_a_database_on_this_machine(root, url):
    write(root, ".env", f"DATABASE_URL={url}\n")
    assert untrusted(root).origin == ".env DATABASE_URL"


@given(st.ip_addresses(v=4))
def test_only_loopback_addresses_are_accepted_from_untrusted_configuration(tmp_path_factory, address):
    root = tmp_path_factory.mktemp("ip")
    write(root, ".env", f"DATABASE_URL=postgresql://app@{address}/app\n")
    if ipaddress.ip_address(address).is_loopback:
        untrusted(root)
    else:
        with pytest.raises(DatabaseNotAllowedError):
            untrusted(root)


@pytest.mark.parametrize("url", ["sqlite:////etc/homeport.sqlite3", "sqlite:///../other/dev.sqlite3"])
def test_untrusted_configuration_may_not_open_a_sqlite_file_outside_the_workspace(root, url):
    write(root, ".env", f"DATABASE_URL={url}\n")
    with pytest.raises(DatabaseNotAllowedError, match="inside the workspace"):
        untrusted(root)


def test_a_symlink_out_of_the_workspace_does_not_make_a_sqlite_file_inside_it(root, tmp_path):
    outside = tmp_path / "secret.sqlite3"
    outside.write_bytes(b"")
    os.symlink(outside, root / "db.sqlite3")
    with pytest.raises(DatabaseNotAllowedError):
        untrusted(root)


def test_project_databases_passes_the_switch_on_and_trusts_by_default(root):
    write(root, ".env", "DATABASE_URL=postgresql://app@db.example.com/app\n")
    assert ProjectDatabases({}).discover(root).url.host == "db.example.com"
    with pytest.raises(DatabaseNotAllowedError):
        ProjectDatabases({}, trust_workspace_config=False).discover(root)


def test_untrusted_configuration_cannot_turn_writes_on_and_the_refusal_says_why(root):
    # Over HTTP the repository's config must not be what lets a remote caller change data.
    import sqlite3

    from homeport.errors import QueryRejectedError

    db = root / "db.sqlite3"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x)")
    write(root, ".homeport/config.toml", '[database]\nurl = "sqlite:///db.sqlite3"\nallow_writes = true\n')
    assert discover_database(root, {}).allow_writes is True
    source = untrusted(root)
    assert source.allow_writes is False and "--trust-workspace-config" in (source.writes_off_because or "")
    databases = ProjectDatabases({}, trust_workspace_config=False)
    with pytest.raises(QueryRejectedError) as caught:
        databases.run_query(root, "INSERT INTO t VALUES (1)")
    assert caught.value.code == "query_rejected"
    assert "--trust-workspace-config" in caught.value.message and "allow_writes = true" not in caught.value.message
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)
