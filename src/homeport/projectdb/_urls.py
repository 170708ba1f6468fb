"""The many spellings of a database URL, turned into one SQLAlchemy URL Homeport can open.

``postgres://``, ``postgresql+asyncpg://`` and friends become ``postgresql+psycopg://``;
``mysql://``, ``mysql2://`` (Rails), ``mariadb://`` and ``trilogy://`` become
``mysql+pymysql://``; ``sqlite:``, ``sqlite3:`` and Prisma's ``file:`` become an absolute SQLite
path, relative paths resolved against the workspace root. Query parameters the driver would not
understand (or that would loosen safety, like MySQL's ``client_flag``) are dropped.
"""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from homeport.errors import ConfigError

__all__ = ["SUPPORTED_BACKENDS", "backend_of", "masked", "normalize_url", "sqlite_url"]

SUPPORTED_BACKENDS = "sqlite, postgresql, mysql / mariadb"

_POSTGRES_NAMES = frozenset({"postgres", "postgresql", "pgsql", "postgis", "psql"})
_MYSQL_NAMES = frozenset({"mysql", "mysql2", "mariadb", "trilogy"})
_SQLITE_NAMES = frozenset({"sqlite", "sqlite3"})
_POSTGRES_DRIVER = "postgresql+psycopg"
_MYSQL_DRIVER = "mysql+pymysql"
# Parameters libpq accepts in a URI; anything else makes psycopg refuse to connect.
_LIBPQ_PARAMS = frozenset(
    {
        "host",
        "hostaddr",
        "port",
        "dbname",
        "user",
        "password",
        "passfile",
        "channel_binding",
        "connect_timeout",
        "client_encoding",
        "options",
        "application_name",
        "fallback_application_name",
        "keepalives",
        "keepalives_idle",
        "keepalives_interval",
        "keepalives_count",
        "tcp_user_timeout",
        "gssencmode",
        "sslmode",
        "sslcompression",
        "sslcert",
        "sslkey",
        "sslpassword",
        "sslcertmode",
        "sslrootcert",
        "sslcrl",
        "sslcrldir",
        "sslsni",
        "requirepeer",
        "ssl_min_protocol_version",
        "ssl_max_protocol_version",
        "krbsrvname",
        "gsslib",
        "gssdelegation",
        "service",
        "target_session_attrs",
        "load_balance_hosts",
        "require_auth",
        "sslnegotiation",
    }
)
# Parameters passed on to PyMySQL; client_flag, local_infile and init_command are left out on purpose.
_PYMYSQL_PARAMS = frozenset(
    {
        "password",
        "charset",
        "unix_socket",
        "ssl_ca",
        "ssl_cert",
        "ssl_key",
        "ssl_capath",
        "ssl_cipher",
        "ssl_check_hostname",
        "connect_timeout",
        "read_timeout",
        "write_timeout",
    }
)
_PATH_SCHEME = re.compile(r"^(?P<scheme>sqlite3?|file):(?!//)(?P<path>.*)$", re.IGNORECASE)
_SECRET_PARAMS = frozenset({"password", "sslpassword"})


def normalize_url(raw: str | URL, root: Path, *, origin: str) -> URL:
    """The URL Homeport opens for `raw` (text or a URL built from parts), read from `origin`.

    Raises:
        ConfigError: `raw` is not a database URL, or names a database Homeport cannot open.
    """
    if isinstance(raw, URL):
        return _normalized(raw, root, origin)
    text = raw.strip()
    if not text:
        raise ConfigError(f"{origin} is empty; give a database URL such as postgresql://user@localhost/app_dev")
    bare_path = _PATH_SCHEME.match(text)
    if bare_path:
        return sqlite_url(_sqlite_path(bare_path["path"], root, prisma=bare_path["scheme"].lower() == "file"))
    try:
        url = make_url(text)
    except (ArgumentError, ValueError) as exc:
        raise ConfigError(
            f"{origin} is not a database URL ({_mask_text(text)}); expected a form like "
            "postgresql://user:password@host:5432/dbname or sqlite:///db/dev.sqlite3"
        ) from exc
    return _normalized(url, root, origin)


def _normalized(url: URL, root: Path, origin: str) -> URL:
    name = url.get_backend_name().lower()
    if name in _SQLITE_NAMES:
        if not url.database or url.database == ":memory:":
            raise ConfigError(f"{origin} names an in-memory SQLite database, which holds no development data")
        return sqlite_url(_sqlite_path(url.database, root, prisma=False))
    if name in _POSTGRES_NAMES:
        return url.set(drivername=_POSTGRES_DRIVER, query=_postgres_query(dict(url.query)))
    if name in _MYSQL_NAMES:
        return url.set(drivername=_MYSQL_DRIVER, query=_mysql_query(dict(url.query)))
    raise ConfigError(f"{origin} names a {name} database; Homeport can open {SUPPORTED_BACKENDS}")


def sqlite_url(path: Path) -> URL:
    return URL.create("sqlite+pysqlite", database=str(path))


def backend_of(url: URL) -> str:
    """``sqlite``, ``postgresql`` or ``mysql`` (MariaDB included) for a normalized URL."""
    return url.get_backend_name()


def masked(url: URL) -> str:
    """`url` as text with every password replaced by ``***``."""
    secret_free = url.set(
        query={key: ("***" if key.lower() in _SECRET_PARAMS else value) for key, value in url.query.items()}
    )
    return secret_free.render_as_string(hide_password=True).replace("%2A%2A%2A", "***")


def _sqlite_path(path: str, root: Path, *, prisma: bool) -> Path:
    candidate = Path(path)
    if candidate.is_absolute():
        return candidate
    # Prisma resolves file: URLs against the directory of its schema.
    base = root / "prisma" if prisma and (root / "prisma" / "schema.prisma").is_file() else root
    return base / candidate


def _postgres_query(query: dict[str, str | tuple[str, ...]]) -> dict[str, str | tuple[str, ...]]:
    schema = query.pop("schema", None)  # Prisma's name for the search path
    kept = {key: value for key, value in query.items() if key in _LIBPQ_PARAMS}
    if isinstance(schema, str) and schema and "options" not in kept:
        kept["options"] = f"-csearch_path={schema}"
    return kept


def _mysql_query(query: dict[str, str | tuple[str, ...]]) -> dict[str, str | tuple[str, ...]]:
    encoding = query.pop("encoding", None)  # Rails' name for the charset
    kept = {key: value for key, value in query.items() if key in _PYMYSQL_PARAMS}
    if isinstance(encoding, str) and encoding and "charset" not in kept:
        kept["charset"] = encoding
    return kept


def _mask_text(text: str) -> str:
    """A URL-ish string with anything between ``//user:`` and ``@`` hidden."""
    return re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", text)
