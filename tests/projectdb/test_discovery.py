"""Finding a workspace's development database from the files its framework already has."""

from __future__ import annotations

from pathlib import Path

import pytest

from homeport.errors import ConfigError, DatabaseNotConfiguredError
from homeport.projectdb import DatabaseSource, discover_database
from homeport.projectdb.discovery import CONFIG_SNIPPET


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


def rendered(source: DatabaseSource) -> str:
    return source.url.render_as_string(hide_password=False)


# ---- each place on its own -------------------------------------------------------------------


def test_config_toml_url_names_the_database(root):
    write(root, ".homeport/config.toml", '[database]\nurl = "postgresql://app:pw@db.local:5433/app_dev"\n')
    source = discover_database(root, {})
    assert rendered(source) == "postgresql+psycopg://app:pw@db.local:5433/app_dev"
    assert source.origin == ".homeport/config.toml [database] url"
    assert source.backend == "postgresql"


def test_config_toml_settings_are_read_with_safe_defaults(root):
    write(root, "db.sqlite3", "")
    source = discover_database(root, {})
    assert (source.allow_writes, source.statement_timeout_ms, source.row_limit) == (False, 5000, 1000)
    write(root, ".homeport/config.toml", "[database]\nallow_writes = true\nstatement_timeout_ms = 250\nrow_limit = 7\n")
    source = discover_database(root, {})
    assert (source.allow_writes, source.statement_timeout_ms, source.row_limit) == (True, 250, 7)
    assert source.origin == "db.sqlite3 (Django)"  # the settings apply whichever place names the database


def test_env_references_in_the_config_url_expand_from_the_passed_environment(root):
    write(
        root,
        ".homeport/config.toml",
        '[database]\nurl = "postgresql://${DB_USER}:${DB_PASSWORD}@localhost/${DB_NAME:-shop}"\n',
    )
    source = discover_database(root, {"DB_USER": "ada", "DB_PASSWORD": "s3cret"})
    assert rendered(source) == "postgresql+psycopg://ada:s3cret@localhost/shop"


def test_env_references_fall_back_to_the_workspace_dotenv(root):
    write(root, ".env", "DB_PASSWORD=from-dotenv\n")
    write(root, ".homeport/config.toml", '[database]\nurl = "mysql://root:${DB_PASSWORD}@localhost/shop"\n')
    assert discover_database(root, {}).url.password == "from-dotenv"
    assert discover_database(root, {"DB_PASSWORD": "from-env"}).url.password == "from-env"


def test_an_unset_env_reference_is_a_config_error_naming_the_variable(root):
    write(root, ".homeport/config.toml", '[database]\nurl = "postgresql://app:${MISSING_PASSWORD}@localhost/app"\n')
    with pytest.raises(ConfigError, match=r"\$\{MISSING_PASSWORD\}"):
        discover_database(root, {})


def test_the_process_environment_is_never_read_directly(root, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://leak@localhost/other")
    monkeypatch.setenv("DB_PASSWORD", "leaked")
    write(root, ".homeport/config.toml", '[database]\nurl = "postgresql://app:${DB_PASSWORD:-none}@localhost/app"\n')
    assert discover_database(root, {}).url.password == "none"


def test_dotenv_database_url_names_the_database(root):
    write(root, ".env", '# app settings\nexport DATABASE_URL="postgres://app:pw@localhost:5432/app_dev"  \nOTHER=1\n')
    source = discover_database(root, {})
    assert rendered(source) == "postgresql+psycopg://app:pw@localhost:5432/app_dev"
    assert source.origin == ".env DATABASE_URL"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("DATABASE_URL=mysql://root@localhost/shop # comment", "mysql+pymysql://root@localhost/shop"),
        ("DATABASE_URL='sqlite:///db/${literal}.db'", None),
        ('DATABASE_URL = "mysql://root@localhost/${NAME}"', "mysql+pymysql://root@localhost/shop"),
    ],
)
def test_dotenv_quoting_comments_and_references_follow_dotenv_conventions(root, line, expected):
    write(root, ".env", f"NAME=shop\n{line}\n")
    source = discover_database(root, {})
    if expected is None:
        assert source.sqlite_path == root / "db" / "${literal}.db"
    else:
        assert rendered(source) == expected


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (
            "DB_CONNECTION=mysql\nDB_HOST=db\nDB_PORT=3307\nDB_DATABASE=shop\nDB_USERNAME=sail\nDB_PASSWORD=pw",
            "mysql+pymysql://sail:pw@db:3307/shop",
        ),
        ("DB_CONNECTION=mariadb\nDB_DATABASE=shop", "mysql+pymysql://root@127.0.0.1:3306/shop"),
        ("DB_CONNECTION=pgsql\nDB_DATABASE=shop\nDB_USERNAME=forge", "postgresql+psycopg://forge@127.0.0.1:5432/shop"),
        (
            "DB_CONNECTION=mysql\nDB_SOCKET=/run/mysqld.sock",
            "mysql+pymysql://root@127.0.0.1:3306/laravel?unix_socket=%2Frun%2Fmysqld.sock",
        ),
        ("DB_URL=postgresql://u@h/d\nDB_CONNECTION=mysql", "postgresql+psycopg://u@h/d"),
    ],
)
def test_laravel_dotenv_keys_name_the_database(root, keys, expected):
    write(root, ".env", keys + "\n")
    source = discover_database(root, {})
    assert rendered(source) == expected
    assert "(Laravel)" in source.origin


def test_laravel_sqlite_path_is_relative_to_the_workspace_root(root):
    write(root, ".env", "DB_CONNECTION=sqlite\nDB_DATABASE=storage/app.sqlite\n")
    assert discover_database(root, {}).sqlite_path == root / "storage" / "app.sqlite"
    write(root, ".env", "DB_CONNECTION=sqlite\n")
    assert discover_database(root, {}).sqlite_path == root / "database" / "database.sqlite"


def test_laravel_connection_homeport_cannot_open_is_a_config_error(root):
    write(root, ".env", "DB_CONNECTION=sqlsrv\n")
    with pytest.raises(ConfigError, match="sqlsrv"):
        discover_database(root, {})


RAILS_YML = """\
default: &default
  adapter: postgresql
  encoding: unicode
  pool: <%= ENV.fetch("RAILS_MAX_THREADS") { 5 } %>
  host: <%= ENV.fetch("DB_HOST") { "localhost" } %>
  username: <%= ENV["DB_USER"] || "rails" %>
  password: <%= ENV['DB_PASSWORD'] %>

development:
  <<: *default
  database: shop_development
  port: <%= ENV.fetch("DB_PORT", 5432).to_i %>

test:
  <<: *default
  database: shop_test
"""


def test_rails_development_entry_names_the_database_with_erb_evaluated(root):
    write(root, "config/database.yml", RAILS_YML)
    source = discover_database(root, {"DB_PASSWORD": "pw", "DB_PORT": "6543"})
    assert rendered(source) == "postgresql+psycopg://rails:pw@localhost:6543/shop_development"
    assert source.origin == "config/database.yml development (Rails)"


def test_rails_erb_reads_the_environment_then_the_dotenv(root):
    write(root, "config/database.yml", RAILS_YML)
    write(root, ".env", "DB_USER=from_dotenv\nDB_HOST=dotenv-host\n")
    source = discover_database(root, {"DB_HOST": "env-host"})
    assert (source.url.username, source.url.host) == ("from_dotenv", "env-host")


@pytest.mark.parametrize(
    ("yml", "expected"),
    [
        ("development:\n  adapter: sqlite3\n  database: db/development.sqlite3\n", None),
        (
            "development:\n  adapter: mysql2\n  database: shop\n  username: root\n  socket: /tmp/mysql.sock\n",
            "mysql+pymysql://root@localhost/shop?unix_socket=%2Ftmp%2Fmysql.sock",
        ),
        ("development:\n  adapter: trilogy\n  database: shop\n  host: 127.0.0.1\n", "mysql+pymysql://127.0.0.1/shop"),
        (
            "development:\n  primary:\n    adapter: postgresql\n    database: main\n"
            "  cache:\n    adapter: sqlite3\n    database: storage/cache.sqlite3\n",
            "postgresql+psycopg:///main",
        ),
        ("development:\n  url: <%= ENV['DATABASE_URL'] %>\n", "postgresql+psycopg://u@h/from_env"),
    ],
)
def test_rails_adapters_and_multi_database_entries(root, yml, expected):
    write(root, "config/database.yml", yml)
    source = discover_database(root, {"DATABASE_URL": "postgres://u@h/from_env"})
    if expected is None:
        assert source.sqlite_path == root / "db" / "development.sqlite3"
    else:
        assert rendered(source) == expected


def test_rails_erb_homeport_cannot_evaluate_is_reported_where_it_matters(root):
    write(
        root, "config/database.yml", "development:\n  adapter: postgresql\n  database: <%= Rails.application.name %>\n"
    )
    with pytest.raises(ConfigError, match=r"development\.database uses <%= Rails\.application\.name %>"):
        discover_database(root, {})


def test_rails_erb_homeport_cannot_evaluate_is_harmless_in_keys_it_does_not_use(root):
    write(
        root,
        "config/database.yml",
        "development:\n  adapter: postgresql\n  database: shop\n  pool: <%= Something.clever %>\n",
    )
    assert discover_database(root, {}).url.database == "shop"


def test_rails_env_fetch_without_default_names_the_missing_variable(root):
    write(root, "config/database.yml", 'development:\n  adapter: postgresql\n  database: <%= ENV.fetch("DB_NAME") %>\n')
    with pytest.raises(ConfigError, match="DB_NAME is not set"):
        discover_database(root, {})


def test_rails_erb_control_flow_is_refused_with_the_way_out(root):
    write(root, "config/database.yml", "<% if true %>\ndevelopment:\n  adapter: sqlite3\n  database: x\n<% end %>\n")
    with pytest.raises(ConfigError, match=r"cannot run.*\.homeport/config\.toml"):
        discover_database(root, {})


def test_django_default_sqlite_file_names_the_database(root):
    write(root, "db.sqlite3", "")
    source = discover_database(root, {})
    assert source.sqlite_path == root / "db.sqlite3"
    assert source.origin == "db.sqlite3 (Django)"


# ---- precedence ------------------------------------------------------------------------------


def test_places_are_tried_in_order_and_the_first_that_names_a_database_wins(root):
    write(root, "db.sqlite3", "")
    assert discover_database(root, {}).origin == "db.sqlite3 (Django)"
    write(root, "config/database.yml", "development:\n  adapter: postgresql\n  database: rails_db\n")
    assert discover_database(root, {}).origin == "config/database.yml development (Rails)"
    write(root, ".env", "DB_CONNECTION=pgsql\nDB_DATABASE=laravel_db\n")
    assert discover_database(root, {}).origin == ".env DB_CONNECTION=pgsql (Laravel)"
    write(root, ".env", "DB_CONNECTION=pgsql\nDATABASE_URL=postgresql://u@h/url_db\n")
    assert discover_database(root, {}).origin == ".env DATABASE_URL"
    write(root, ".homeport/config.toml", '[database]\nurl = "postgresql://u@h/config_db"\n')
    source = discover_database(root, {})
    assert (source.origin, source.url.database) == (".homeport/config.toml [database] url", "config_db")


def test_a_config_without_url_passes_on_to_the_next_place(root):
    write(root, ".homeport/config.toml", "[database]\nrow_limit = 50\n")
    write(root, ".env", "DATABASE_URL=postgresql://u@h/shop\n")
    source = discover_database(root, {})
    assert (source.origin, source.row_limit) == (".env DATABASE_URL", 50)


# ---- URLs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgres://u:p@h:5/d", "postgresql+psycopg://u:p@h:5/d"),
        ("postgresql://u@h/d?sslmode=require&connection_limit=5", "postgresql+psycopg://u@h/d?sslmode=require"),
        ("postgresql+asyncpg://u@h/d", "postgresql+psycopg://u@h/d"),
        ("postgresql://u@h/d?schema=billing", "postgresql+psycopg://u@h/d?options=-csearch_path%3Dbilling"),
        ("mysql://u@h/d", "mysql+pymysql://u@h/d"),
        ("mariadb://u@h/d", "mysql+pymysql://u@h/d"),
        ("mysql2://u@h/d?encoding=utf8mb4&pool=5", "mysql+pymysql://u@h/d?charset=utf8mb4"),
        ("mysql://u@h/d?client_flag=65536&local_infile=1&init_command=DROP+TABLE+t", "mysql+pymysql://u@h/d"),
    ],
)
def test_url_spellings_are_normalized_to_the_drivers_homeport_uses(root, url, expected):
    write(root, ".env", f"DATABASE_URL={url}\n")
    assert rendered(discover_database(root, {})) == expected


@pytest.mark.parametrize(
    ("url", "relative"),
    [
        ("sqlite:///db/dev.sqlite3", "db/dev.sqlite3"),
        ("sqlite3:db/dev.sqlite3", "db/dev.sqlite3"),
        ("file:./dev.db", "prisma/dev.db"),
    ],
)
def test_relative_sqlite_paths_resolve_against_the_workspace_root(root, url, relative):
    write(root, "prisma/schema.prisma", "datasource db {}\n")
    write(root, ".env", f"DATABASE_URL={url}\n")
    assert discover_database(root, {}).sqlite_path == root / relative


def test_absolute_sqlite_paths_stay_absolute(root, tmp_path):
    write(root, ".env", f"DATABASE_URL=sqlite:///{tmp_path}/elsewhere.db\n")
    assert discover_database(root, {}).sqlite_path == tmp_path / "elsewhere.db"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mssql+pyodbc://u@h/d", "mssql"),
        ("mongodb://u:secret@h/d", "mongodb"),
        ("sqlite://", "in-memory"),
        ("not a url at all", "not a database URL"),
        ("postgresql://u:secret@h:notaport/d", "not a database URL"),
    ],
)
def test_urls_homeport_cannot_open_are_config_errors_without_the_password(root, url, message):
    write(root, ".homeport/config.toml", f'[database]\nurl = "{url}"\n')
    with pytest.raises(ConfigError, match=message) as caught:
        discover_database(root, {})
    assert "secret" not in str(caught.value)


# ---- passwords -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("place", "text"),
    [
        (".homeport/config.toml", '[database]\nurl = "postgresql://app:${PW}@localhost/app"\n'),
        (".env", "DATABASE_URL=mysql://app:hunter2-%40x@localhost/app\n"),
        (".env", "DATABASE_URL=postgresql://app@localhost/app?password=hunter2&sslpassword=hunter2\n"),
        (".env", "DB_CONNECTION=pgsql\nDB_PASSWORD=hunter2\n"),
        ("config/database.yml", "development:\n  adapter: mysql2\n  database: app\n  password: hunter2\n"),
    ],
)
def test_describe_never_includes_the_password(root, place, text):
    write(root, place, text)
    source = discover_database(root, {"PW": "hunter2"})
    assert "hunter2" in rendered(source)
    assert "hunter2" not in source.describe()
    assert "***" in source.describe()
    assert source.origin in source.describe()


# ---- nothing found or malformed -------------------------------------------------------------


def test_no_database_found_lists_every_place_looked_and_the_snippet_to_add(root):
    with pytest.raises(DatabaseNotConfiguredError) as caught:
        discover_database(root, {})
    message = str(caught.value)
    for place in (
        ".homeport/config.toml [database] url",
        ".env DATABASE_URL",
        ".env DB_URL / DB_CONNECTION (Laravel)",
        "config/database.yml development (Rails)",
        "db.sqlite3 (Django)",
    ):
        assert place in message
    assert str(root / ".homeport" / "config.toml") in message
    assert CONFIG_SNIPPET.splitlines()[1].strip() in message


def test_no_database_found_says_why_each_place_had_none(root):
    write(root, ".homeport/config.toml", "[other]\nx = 1\n")
    write(root, ".env", "APP_NAME=shop\n")
    write(root, "config/database.yml", "production:\n  adapter: postgresql\n")
    with pytest.raises(DatabaseNotConfiguredError) as caught:
        discover_database(root, {})
    message = str(caught.value)
    assert "no [database] table" in message
    assert "DATABASE_URL: not set" in message
    assert "no development entry" in message


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[database\nurl = 1", "not valid TOML"),
        ("database = 3\n", "must be a table"),
        ('[database]\nurl = "sqlite:///x.db"\nallow_write = true\n', "unknown keys allow_write"),
        ("[database]\nallow_writes = 'yes'\n", "allow_writes must be true or false"),
        ("[database]\nstatement_timeout_ms = 0\n", "statement_timeout_ms must be a whole number"),
        ("[database]\nrow_limit = 1000000\n", "row_limit must be a whole number from 1 to 100000"),
        ("[database]\nmax_result_bytes = 10\n", "max_result_bytes must be a whole number from 1024 to"),
        ("[database]\nurl = 5\n", "url must be a string"),
    ],
)
def test_malformed_config_is_a_config_error_that_names_the_problem(root, text, match):
    write(root, "db.sqlite3", "")
    write(root, ".homeport/config.toml", text)
    with pytest.raises(ConfigError, match=match):
        discover_database(root, {})
