"""Fixtures for the project database: a seeded app database on SQLite, PostgreSQL and MariaDB.

Each server gets a throwaway database with a unique name for the session, dropped at the end.
An unreachable server makes its tests skip with the reason; they never pass silently.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pymysql
import pytest

from homeport.projectdb import ProjectDatabases

PG_HOST, PG_PORT = "127.0.0.1", 5432
MY_HOST, MY_PORT = "127.0.0.1", 3306

SEED = {
    "sqlite": [
        "CREATE TABLE customers (id INTEGER PRIMARY KEY AUTOINCREMENT, name VARCHAR(100) NOT NULL, "
        "email VARCHAR(200) UNIQUE, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)",
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers (id) "
        "ON DELETE CASCADE, total NUMERIC(10, 2) NOT NULL DEFAULT 0, status VARCHAR(20) NOT NULL DEFAULT 'new')",
        "CREATE INDEX ix_orders_status ON orders (status)",
        "CREATE TABLE scratch (id INTEGER, note VARCHAR(50))",
    ],
    "postgresql": [
        "CREATE TABLE customers (id SERIAL PRIMARY KEY, name VARCHAR(100) NOT NULL, email VARCHAR(200) UNIQUE, "
        "created_at TIMESTAMPTZ DEFAULT now())",
        "CREATE TABLE orders (id SERIAL PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers (id) "
        "ON DELETE CASCADE, total NUMERIC(10, 2) NOT NULL DEFAULT 0, status VARCHAR(20) NOT NULL DEFAULT 'new')",
        "CREATE INDEX ix_orders_status ON orders (status)",
        "CREATE TABLE scratch (id INTEGER, note VARCHAR(50))",
    ],
    "mysql": [
        "CREATE TABLE customers (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(100) NOT NULL, "
        "email VARCHAR(200) UNIQUE, created_at TIMESTAMP NULL DEFAULT CURRENT_TIMESTAMP) ENGINE=InnoDB",
        "CREATE TABLE orders (id INT AUTO_INCREMENT PRIMARY KEY, customer_id INT NOT NULL, "
        "total DECIMAL(10, 2) NOT NULL DEFAULT 0, status VARCHAR(20) NOT NULL DEFAULT 'new', "
        "CONSTRAINT fk_orders_customer FOREIGN KEY (customer_id) REFERENCES customers (id) ON DELETE CASCADE, "
        "INDEX ix_orders_status (status)) ENGINE=InnoDB",
        "CREATE TABLE scratch (id INT, note VARCHAR(50)) ENGINE=InnoDB",
    ],
}
ROWS = [
    "INSERT INTO customers (name, email) VALUES ('Ada', 'ada@example.com'), ('Bob', NULL), ('Cy', 'cy@example.com')",
    "INSERT INTO orders (customer_id, total, status) VALUES (1, 12.50, 'paid'), (1, 3.00, 'new'), "
    "(2, 99.99, 'paid'), (3, 0, 'void'), (3, 7.25, 'new')",
]


@dataclass
class ServerDatabase:
    """A throwaway database on a real server, and a way to look inside it without Homeport."""

    backend: str  # "postgresql" | "mysql"
    name: str
    url: str
    connect: Callable[[], Any]  # a driver connection to this database, autocommit on


def _postgres_admin(dbname: str) -> psycopg.Connection:
    errors = []
    for user in ("postgres", "root"):
        try:
            return psycopg.connect(
                host=PG_HOST, port=PG_PORT, user=user, dbname=dbname, connect_timeout=3, autocommit=True
            )
        except psycopg.OperationalError as exc:
            errors.append(f"{user}: {str(exc).strip()}")
    pytest.skip(f"PostgreSQL is not reachable at {PG_HOST}:{PG_PORT} ({'; '.join(errors)})")


def _mysql_connect(database: str | None) -> pymysql.Connection:
    # ssl_disabled: PyMySQL would otherwise load the system CA store on every connection (~25 ms).
    return pymysql.connect(
        host=MY_HOST,
        port=MY_PORT,
        user="root",
        password="",
        database=database,
        autocommit=True,
        connect_timeout=3,
        ssl_disabled=True,
    )


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[ServerDatabase]:
    admin = _postgres_admin("test")
    user = admin.info.user
    name = f"homeport_test_{uuid.uuid4().hex[:12]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        with psycopg.connect(host=PG_HOST, port=PG_PORT, user=user, dbname=name, autocommit=True) as seed:
            for statement in SEED["postgresql"] + ROWS:
                seed.execute(statement)
        yield ServerDatabase(
            backend="postgresql",
            name=name,
            url=f"postgresql://{user}@{PG_HOST}:{PG_PORT}/{name}",
            connect=lambda: psycopg.connect(host=PG_HOST, port=PG_PORT, user=user, dbname=name, autocommit=True),
        )
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture(scope="session")
def mysql_database() -> Iterator[ServerDatabase]:
    try:
        admin = _mysql_connect(None)
    except pymysql.err.Error as exc:
        pytest.skip(f"MariaDB/MySQL is not reachable at {MY_HOST}:{MY_PORT} as root: {exc}")
    name = f"homeport_test_{uuid.uuid4().hex[:12]}"
    with admin.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE `{name}`")
    try:
        with _mysql_connect(name) as seed, seed.cursor() as cursor:
            for statement in SEED["mysql"] + ROWS:
                cursor.execute(statement)
        yield ServerDatabase(
            backend="mysql",
            name=name,
            url=f"mysql://root@{MY_HOST}:{MY_PORT}/{name}",
            connect=lambda: _mysql_connect(name),
        )
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
        admin.close()


def write_config(root: Path, url: str, **settings: Any) -> None:
    """Write `.homeport/config.toml` naming `url`, with [database] `settings`."""
    lines = ["[database]", f'url = "{url}"']
    for key, value in settings.items():
        lines.append(f"{key} = {str(value).lower() if isinstance(value, bool) else value}")
    (root / ".homeport").mkdir(parents=True, exist_ok=True)
    (root / ".homeport" / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


@dataclass
class App:
    """A workspace whose development database is seeded with customers, orders and scratch."""

    backend: str  # "sqlite" | "postgresql" | "mysql"
    root: Path
    url: str
    server: ServerDatabase | None

    def configure(self, **settings: Any) -> None:
        write_config(self.root, self.url, **settings)

    def snapshot(self) -> Any:
        """Everything a query could change: the file (SQLite) or every table's rows (servers)."""
        if self.server is None:
            files = sorted(p.name for p in (self.root / "db").iterdir())
            return files, hashlib.sha256((self.root / "db" / "dev.sqlite3").read_bytes()).hexdigest()
        return _server_snapshot(self.server)

    def sql(self, statement: str) -> list[tuple[Any, ...]]:
        """Run `statement` as the administrator, outside Homeport."""
        if self.server is None:
            with sqlite3.connect(self.root / "db" / "dev.sqlite3") as connection:
                rows = connection.execute(statement).fetchall()
            connection.close()
            return rows
        connection = self.server.connect()
        try:
            cursor = connection.cursor()
            cursor.execute(statement)
            return list(cursor.fetchall()) if cursor.description else []
        finally:
            connection.close()


def _server_snapshot(server: ServerDatabase) -> Any:
    connection = server.connect()
    try:
        cursor = connection.cursor()
        if server.backend == "postgresql":
            cursor.execute(
                "SELECT table_schema, table_name FROM information_schema.tables "
                "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2"
            )
            tables = [f'"{schema}"."{table}"' for schema, table in cursor.fetchall()]
            cursor.execute(
                "SELECT (SELECT count(*) FROM pg_largeobject_metadata), "
                "(SELECT count(*) FROM pg_database WHERE datname LIKE 'homeport_evil%')"
            )
            extra = cursor.fetchall()
        else:
            cursor.execute(f"SHOW FULL TABLES FROM `{server.name}`")
            tables = [f"`{server.name}`.`{row[0]}`" for row in cursor.fetchall()]
            cursor.execute("SHOW DATABASES")
            # Other test runs on the same server create and drop their own homeport_* databases;
            # homeport_evil* are the names the hostile corpus tries to create.
            extra = sorted(
                row[0]
                for row in cursor.fetchall()
                if not row[0].startswith("homeport_") or row[0] == server.name or row[0].startswith("homeport_evil")
            )
        contents = {}
        for table in tables:
            cursor.execute(f"SELECT * FROM {table}")
            contents[table] = sorted(map(repr, cursor.fetchall()))
        return tables, contents, extra
    finally:
        connection.close()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seeded SQLite file, built once and copied into each test's workspace."""
    path = tmp_path_factory.mktemp("sqlite-template") / "dev.sqlite3"
    connection = sqlite3.connect(path)
    with connection:
        for statement in SEED["sqlite"] + ROWS:
            connection.execute(statement)
    connection.close()
    return path


def _sqlite_app(tmp_path: Path, template: Path) -> App:
    root = tmp_path / "app"
    (root / "db").mkdir(parents=True)
    shutil.copyfile(template, root / "db" / "dev.sqlite3")
    app = App(backend="sqlite", root=root, url="sqlite:///db/dev.sqlite3", server=None)
    app.configure()
    return app


def _server_app(root: Path, server: ServerDatabase) -> App:
    root.mkdir(exist_ok=True)
    app = App(backend=server.backend, root=root, url=server.url, server=server)
    app.configure()
    return app


BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgresql", marks=pytest.mark.postgres, id="postgresql"),
    pytest.param("mysql", marks=pytest.mark.mysql, id="mariadb"),
]


@pytest.fixture(params=BACKENDS)
def app(request: pytest.FixtureRequest, tmp_path: Path) -> App:
    """The seeded app on each backend in turn."""
    return make_app(request, tmp_path, request.param)


def make_app(request: pytest.FixtureRequest, tmp_path: Path, backend: str) -> App:
    """A fresh SQLite app in `tmp_path`, or the session's app on a server with its default settings.

    Server apps share one workspace root per session so that engines (and their connections)
    are reused across tests; every test starts by rewriting the configuration.
    """
    if backend == "sqlite":
        return _sqlite_app(tmp_path, request.getfixturevalue("sqlite_template"))
    fixture = "postgres_database" if backend == "postgresql" else "mysql_database"
    server = request.getfixturevalue(fixture)
    root = request.getfixturevalue("tmp_path_factory").getbasetemp() / f"app-{backend}"
    return _server_app(root, server)


@pytest.fixture(scope="session")
def databases() -> Iterator[ProjectDatabases]:
    """One ProjectDatabases for the session, as a server process would hold."""
    with ProjectDatabases({}) as dbs:
        yield dbs
